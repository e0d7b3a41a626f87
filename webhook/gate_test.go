package webhook_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
	"github.com/liqo-janitor/liqo-janitor/webhook"
)

const (
	liqoNamespace  = "liqo"
	localClusterID = "consumer-local"
	markerUser     = "alice" // may update ForeignClusters and holds the break-glass role
	plainUser      = "bob"   // may update ForeignClusters, nothing more
)

// The two users' clients, and the janitor's (the install's ServiceAccount, as which the gate runs and
// which it learns as the janitor's identity, rule 14), set up with the control plane (setupCluster): a
// test reaches them only after harness.Require.
var (
	alice     client.Client
	bob       client.Client
	aliceW    = &harness.WarningRecorder{}
	asJanitor client.Client
)

func TestMain(m *testing.M) {
	os.Exit(harness.Run(m, harness.Options{GeneratedWebhooks: true}, func(e *harness.Env) error {
		if err := setupCluster(e); err != nil {
			return err
		}
		return e.StartGate(webhook.Options{LiqoNamespace: liqoNamespace, MinUnreachable: time.Minute, ProbeTimeout: webhook.DefaultProbeTimeout,
			LiqoUninstallerUsers: []string{uninstallerUser}})
	}))
}

// setupCluster lays out what the gate reads: Liqo's cluster-ID ConfigMap, the shipped break-glass
// ClusterRole, and two users who may update ForeignClusters, one of them bound to the break-glass role.
func setupCluster(e *harness.Env) error {
	ctx := context.Background()
	if err := e.InstallLocalClusterID(ctx, liqoNamespace, localClusterID); err != nil {
		return err
	}
	if err := e.InstallOperators(ctx, []string{markerUser}, []string{plainUser}); err != nil {
		return err
	}
	if err := installDeleters(ctx, e); err != nil {
		return err
	}
	var err error
	if alice, err = e.NewClient(func(c *rest.Config) {
		c.Impersonate.UserName = markerUser
		c.WarningHandlerWithContext = aliceW
	}); err != nil {
		return err
	}
	if bob, err = e.NewClient(func(c *rest.Config) { c.Impersonate.UserName = plainUser }); err != nil {
		return err
	}
	asJanitor, err = e.JanitorClient()
	return err
}

func clusterIDConfigMap() *corev1.ConfigMap {
	return harness.ClusterIDConfigMap(liqoNamespace, localClusterID)
}

// newProvider creates a ForeignCluster whose APIServerStatus is status since the given time ago
// (no condition at all if status is empty).
func newProvider(t *testing.T, status liqov1beta1.ConditionStatusType, since time.Duration) *liqov1beta1.ForeignCluster {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	id := fixture.Prefix("provider-")
	fc := &liqov1beta1.ForeignCluster{
		ObjectMeta: metav1.ObjectMeta{Name: id, Labels: map[string]string{liqojanitor.RemoteClusterIDLabel: id}},
		Spec:       liqov1beta1.ForeignClusterSpec{ClusterID: liqov1beta1.ClusterID(id)},
	}
	g.Expect(env.Client.Create(t.Context(), fc)).To(Succeed())
	if status != "" {
		setAPIServerStatus(t, fc, status, since)
	}
	return fc
}

func setAPIServerStatus(t *testing.T, fc *liqov1beta1.ForeignCluster, status liqov1beta1.ConditionStatusType, since time.Duration) {
	t.Helper()
	env := harness.Require(t)
	fc.Status.Role = liqov1beta1.ProviderRole
	fc.Status.Conditions = []liqov1beta1.Condition{{
		Type: liqov1beta1.APIServerStatusCondition, Status: status,
		LastTransitionTime: metav1.NewTime(time.Now().Add(-since).Truncate(time.Second)),
	}}
	NewWithT(t).Expect(env.Client.Status().Update(t.Context(), fc)).To(Succeed())
}

func s(v string) *string { return ptr.To(v) }

func markAndConfirm(fc *liqov1beta1.ForeignCluster) map[string]*string {
	return map[string]*string{liqojanitor.ConfirmAnnotation: s(string(fc.Spec.ClusterID)), liqojanitor.MarkAnnotation: s("true")}
}

func get(t *testing.T, fc *liqov1beta1.ForeignCluster) *liqov1beta1.ForeignCluster {
	t.Helper()
	env := harness.Require(t)
	out := &liqov1beta1.ForeignCluster{}
	NewWithT(t).Expect(env.Client.Get(t.Context(), client.ObjectKeyFromObject(fc), out)).To(Succeed())
	return out
}

// expectDenied asserts a denial's HTTP code, that a cause names the field path, and that the message names
// the cluster and carries each given fragment (the next step).
func expectDenied(t *testing.T, err error, code int32, fieldPath string, fc *liqov1beta1.ForeignCluster, fragments ...string) {
	t.Helper()
	g := NewWithT(t)
	var status *apierrors.StatusError
	g.Expect(errors.As(err, &status)).To(BeTrue(), "want an API status error, got %v", err)
	g.Expect(status.ErrStatus.Code).To(Equal(code), "message: %s", status.ErrStatus.Message)
	var fields []string
	if status.ErrStatus.Details != nil {
		for _, c := range status.ErrStatus.Details.Causes {
			fields = append(fields, c.Field)
		}
	}
	g.Expect(fields).To(ContainElement(fieldPath))
	g.Expect(err.Error()).To(ContainSubstring(string(fc.Spec.ClusterID)))
	for _, f := range fragments {
		g.Expect(err.Error()).To(ContainSubstring(f))
	}
}

func TestMarkingNeedsTheConfirmationEqualToTheClusterID(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)

	err := fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.MarkAnnotation: s("true")})
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/confirm-cluster-id]", fc,
		fmt.Sprintf("kubectl annotate foreigncluster %s liqo-janitor.io/confirm-cluster-id=%s liqo.io/foreign-cluster-permanently-unreachable=true --overwrite", fc.Name, fc.Name))

	err = fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.ConfirmAnnotation: s("provider-typo")})
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/confirm-cluster-id]", fc,
		fmt.Sprintf("kubectl annotate foreigncluster %s liqo-janitor.io/confirm-cluster-id=%s --overwrite", fc.Name, fc.Name))
	g.Expect(get(t, fc).Annotations).NotTo(HaveKey(liqojanitor.MarkAnnotation), "nothing was stored")

	// the confirmation may come first, the mark later
	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.ConfirmAnnotation: s(fc.Name)})).To(Succeed())
	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.MarkAnnotation: s("true")})).To(Succeed())
	g.Expect(get(t, fc).Annotations).To(HaveKeyWithValue(liqojanitor.MarkAnnotation, "true"))
}

func TestTheMarkValueMustBeExactlyTrue(t *testing.T) {
	g := NewWithT(t)
	fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	kv := markAndConfirm(fc)
	kv[liqojanitor.MarkAnnotation] = s("True")
	err := fixture.Annotate(t.Context(), alice, fc, kv)
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo.io/foreign-cluster-permanently-unreachable]", fc,
		`exactly "true"`, "liqo.io/foreign-cluster-permanently-unreachable=true --overwrite")
	g.Expect(get(t, fc).Annotations).To(BeEmpty())
}

func TestTheLocalClusterCannotBeMarked(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	fc := &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: "self"},
		Spec: liqov1beta1.ForeignClusterSpec{ClusterID: localClusterID}}
	g.Expect(env.Client.Create(ctx, fc)).To(Succeed())
	err := fixture.Annotate(ctx, alice, fc, markAndConfirm(fc))
	expectDenied(t, err, http.StatusUnprocessableEntity, "spec.clusterID", fc, "this cluster's own ID", "kubectl get foreignclusters")
}

func TestMarkingFailsClosedWhenTheLocalClusterIDCannotBeRead(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	g.Expect(env.Client.Delete(ctx, clusterIDConfigMap())).To(Succeed())
	t.Cleanup(func() {
		NewWithT(t).Expect(env.Client.Create(context.Background(), clusterIDConfigMap())).To(Succeed())
	})

	// the gate reads the ConfigMap through its cache: wait until the cache has seen the deletion
	g.Eventually(func() error { return fixture.Annotate(ctx, alice, fc, markAndConfirm(fc)) }).
		Should(MatchError(ContainSubstring("local cluster ID cannot be read")))
	err := fixture.Annotate(ctx, alice, fc, markAndConfirm(fc))
	expectDenied(t, err, http.StatusUnprocessableEntity, "spec.clusterID", fc,
		`no ConfigMap labelled app.kubernetes.io/name=clusterid-configmap with a CLUSTER_ID key in namespace "liqo"`,
		"kubectl get configmap -A -l app.kubernetes.io/name=clusterid-configmap")
}

func TestReachabilityVeto(t *testing.T) {
	harness.Require(t) // skipped as a whole, not subtest by subtest, in the unit lane
	tests := map[string]struct {
		status      liqov1beta1.ConditionStatusType
		since       time.Duration
		wantAllowed bool
		fragments   []string
	}{
		"a provider Liqo sees Established cannot be marked": {
			status: liqov1beta1.ConditionStatusEstablished, since: time.Hour,
			fragments: []string{"Liqo reports the provider's API server as reachable", "-o jsonpath='{.status.conditions}'"},
		},
		"a provider unreachable for less than --min-unreachable cannot be marked": {
			status: liqov1beta1.ConditionStatusError, since: 10 * time.Second,
			fragments: []string{"a blip is not a death", "retry after"},
		},
		"a provider unreachable for longer than --min-unreachable can be marked": {
			status: liqov1beta1.ConditionStatusError, since: 2 * time.Minute, wantAllowed: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			fc := newProvider(t, tc.status, tc.since)
			err := fixture.Annotate(t.Context(), alice, fc, markAndConfirm(fc))
			if tc.wantAllowed {
				NewWithT(t).Expect(err).NotTo(HaveOccurred())
				return
			}
			expectDenied(t, err, http.StatusUnprocessableEntity, "status.conditions", fc, tc.fragments...)
		})
	}
}

func TestBreakGlassPermissionWithRealRBAC(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)

	// bob may update ForeignClusters (a label change goes through) but not mark them
	g.Expect(bob.Patch(ctx, fc, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"blue"}}}`)))).To(Succeed())
	err := fixture.Annotate(ctx, bob, fc, markAndConfirm(fc))
	expectDenied(t, err, http.StatusForbidden, "metadata.annotations[liqo.io/foreign-cluster-permanently-unreachable]", fc,
		`user "bob" may not mark it permanently unreachable`,
		"kubectl create clusterrolebinding mark-unreachable-bob --clusterrole="+liqojanitor.MarkRoleName+" --user=bob")

	// once bound to the shipped ClusterRole, bob may mark; the stamp names him
	b := harness.ClusterRoleBinding("mark-unreachable-bob", liqojanitor.MarkRoleName, plainUser)
	g.Expect(env.Client.Create(ctx, b)).To(Succeed())
	g.Eventually(func() error { return fixture.Annotate(ctx, bob, fc, markAndConfirm(fc)) }).Should(Succeed())
	g.Expect(get(t, fc).Annotations).To(HaveKeyWithValue(liqojanitor.MarkedByAnnotation, plainUser))

	// and removing the mark needs the same permission
	g.Expect(env.Client.Delete(ctx, b)).To(Succeed())
	unmark := map[string]*string{liqojanitor.MarkAnnotation: nil}
	g.Eventually(func() error { return fixture.Annotate(ctx, bob, fc, unmark) }).Should(MatchError(ContainSubstring("may not remove its permanently-unreachable mark")))
	err = fixture.Annotate(ctx, bob, fc, unmark)
	expectDenied(t, err, http.StatusForbidden, "metadata.annotations[liqo.io/foreign-cluster-permanently-unreachable]", fc)
	g.Expect(get(t, fc).Annotations).To(HaveKeyWithValue(liqojanitor.MarkAnnotation, "true"))
}

func TestStampsAreWrittenByTheWebhookAndImmutableWhileMarked(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)

	kv := markAndConfirm(fc)
	kv[liqojanitor.MarkedByAnnotation] = s("mallory")
	kv[liqojanitor.MarkedAtAnnotation] = s("2020-01-01T00:00:00Z")
	before := time.Now().Add(-time.Second)
	g.Expect(fixture.Annotate(ctx, alice, fc, kv)).To(Succeed())
	marked := get(t, fc)
	g.Expect(marked.Annotations).To(HaveKeyWithValue(liqojanitor.MarkedByAnnotation, markerUser), "the forged marked-by is replaced")
	at, err := time.Parse(time.RFC3339, marked.Annotations[liqojanitor.MarkedAtAnnotation])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(at).To(BeTemporally(">=", before.Truncate(time.Second)), "the forged marked-at is replaced")

	// a later unrelated change keeps the stamps as they are
	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{"example.com/note": s("data centre flooded")})).To(Succeed())
	stable := get(t, fc).Annotations
	g.Expect(stable).To(And(
		HaveKeyWithValue(liqojanitor.MarkedByAnnotation, markerUser),
		HaveKeyWithValue(liqojanitor.MarkedAtAnnotation, marked.Annotations[liqojanitor.MarkedAtAnnotation])))

	for _, key := range []string{liqojanitor.ConfirmAnnotation, liqojanitor.MarkedByAnnotation, liqojanitor.MarkedAtAnnotation, liqojanitor.ReasonAnnotation} {
		err := fixture.Annotate(ctx, alice, fc, map[string]*string{key: s("changed")})
		expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations["+key+"]", fc,
			key+" cannot change while", "kubectl annotate foreigncluster "+fc.Name+" liqo.io/foreign-cluster-permanently-unreachable-")
	}
	g.Expect(get(t, fc).Annotations).To(Equal(stable), "no denied change was stored")
}

func TestStampsCannotBeWrittenWithoutTheMark(t *testing.T) {
	fc := newProvider(t, "", 0)
	err := fixture.Annotate(t.Context(), alice, fc, map[string]*string{liqojanitor.MarkedByAnnotation: s("alice")})
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/marked-by]", fc,
		"written only by liqo-janitor")
}

func TestRemovingTheMarkWarnsAndDropsStampsAndConfirmation(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	kv := markAndConfirm(fc)
	kv[liqojanitor.ReasonAnnotation] = s("kept")
	g.Expect(fixture.Annotate(ctx, alice, fc, kv)).To(Succeed())

	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.MarkAnnotation: nil})).To(Succeed())
	g.Expect(get(t, fc).Annotations).To(Equal(map[string]string{liqojanitor.ReasonAnnotation: "kept"}))
	g.Expect(aliceW.Warnings()).To(ContainElement(And(ContainSubstring(fc.Name),
		ContainSubstring("pods already force-deleted and finalizers already removed are not restored"),
		ContainSubstring("workloads on the provider may still be running"))))
}

// TestBlastRadius registers a second copy of the generated webhook configurations pointing at a port
// where nothing listens (as if liqo-janitor's pods were down): thanks to matchConditions, Liqo's own
// updates, pausing and other annotations still go through, while setting the mark, the confirmation, the
// reason or a stamp, and unpausing a marked cluster, fail closed.
func TestBlastRadius(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.ConfirmAnnotation: s(fc.Name)})).To(Succeed())
	paused := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	g.Expect(fixture.Annotate(ctx, alice, paused, markAndConfirm(paused))).To(Succeed())
	g.Expect(fixture.Annotate(ctx, alice, paused, map[string]*string{liqojanitor.PausedAnnotation: s("true")})).To(Succeed())

	registerDeadWebhooks(t)
	g.Eventually(func() error {
		return fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.MarkAnnotation: s("true")})
	}).
		Should(MatchError(ContainSubstring("failed calling webhook")), "marking fails closed while the gate is down")
	// Removing the confirmation is a change the running gate allows, so only the dead validating webhook
	// can refuse it: once the API server calls that one too (configurations load asynchronously; a dry
	// run changes nothing while it does not), the removal fails closed. (A change the running gate
	// refuses, such as a wrong confirmation, would race its denial against the dead webhook's failure.)
	unconfirm := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null}}}`, liqojanitor.ConfirmAnnotation))
	g.Eventually(func() error { return alice.Patch(ctx, get(t, fc), unconfirm, client.DryRunAll) }).
		Should(MatchError(ContainSubstring("failed calling webhook")), "the dead validating webhook is called")
	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.ConfirmAnnotation: nil})).
		To(MatchError(ContainSubstring("failed calling webhook")), "removing the confirmation fails closed too")

	// unpausing a marked cluster is break-glass: it fails closed too
	g.Expect(fixture.Annotate(ctx, alice, paused, map[string]*string{liqojanitor.PausedAnnotation: nil})).
		To(MatchError(ContainSubstring("failed calling webhook")), "unpausing fails closed")

	latest := get(t, fc)
	setAPIServerStatus(t, latest, liqov1beta1.ConditionStatusError, time.Minute) // a status update
	g.Expect(env.Client.Patch(ctx, latest, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"liqo.io/example":"relabelled","liqo.io/webhook-skip":"true"}}}`)))).To(Succeed()) // a label change, Liqo's lookup labels included (the cluster is unmarked)
	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{"example.com/note": s("unrelated")})).To(Succeed())
	// an operator can still pause the janitor on an unmarked cluster, with the gate down; a reason ahead of
	// the mark arms a bare mark, so it is the gate's to judge (rule 19): it fails closed
	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.PausedAnnotation: s("true")})).To(Succeed())
	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.ReasonAnnotation: s("gate down")})).
		To(MatchError(ContainSubstring("failed calling webhook")), "a reason ahead of the mark fails closed")
	// the janitor's own keys are the gate's to guard (rule 14): with the gate down, they fail closed
	g.Expect(fixture.Annotate(ctx, asJanitor, fc, map[string]*string{liqojanitor.CleanupAnnotation: s("nothing to release")})).
		To(MatchError(ContainSubstring("failed calling webhook")), "a janitor key fails closed, even for the janitor")
	g.Expect(get(t, fc).Annotations).To(And(Not(HaveKey(liqojanitor.MarkAnnotation)),
		HaveKeyWithValue(liqojanitor.ConfirmAnnotation, fc.Name), HaveKeyWithValue(liqojanitor.PausedAnnotation, "true")))
}

// registerDeadWebhooks registers a copy of the generated webhook configurations whose webhooks call an
// address where nothing listens: the API server's calls fail at once.
func registerDeadWebhooks(t *testing.T) {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	mut, val, err := env.GeneratedWebhooks()
	g.Expect(err).NotTo(HaveOccurred())
	for _, obj := range []client.Object{mut, val} {
		harness.ForEachWebhook(obj, func(cc *admissionregistrationv1.WebhookClientConfig, _ **metav1.LabelSelector) {
			*cc = admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/")}
		})
		obj.SetName("dead-" + obj.GetName())
		g.Expect(env.Client.Create(t.Context(), obj)).To(Succeed())
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}
}

// TestForgedRecentStampsAreReplacedAndTheGracePeriodHolds: stamps naming the requester and a moment of
// the last minute (a replayed YAML, or marked-at=now-59s by hand against a 30s grace period) are replaced
// by the mutating webhook, so the janitor waits out its whole grace period from the real marking.
func TestForgedRecentStampsAreReplacedAndTheGracePeriodHolds(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons, err := fixture.Build(ctx, env.Client, fixture.Spec{Prefix: fixture.Prefix("g"), Providers: 1, PodsPerProvider: 3})
	g.Expect(err).NotTo(HaveOccurred())
	p := cons.Providers[0]
	g.Expect(fixture.Kill(ctx, env.Client, p)).To(Succeed())
	g.Expect(fixture.Terminate(ctx, env.Client, p)).To(Succeed())
	stop, err := env.StartJanitor(janitor.Options{GracePeriod: 30 * time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { NewWithT(t).Expect(stop()).To(Succeed()) })

	forged := time.Now().Add(-59 * time.Second).UTC().Format(time.RFC3339)
	before := time.Now().Add(-time.Second).Truncate(time.Second)
	g.Expect(fixture.Mark(ctx, alice, p, liqojanitor.MarkedByAnnotation, markerUser, liqojanitor.MarkedAtAnnotation, forged)).To(Succeed())
	at, err := time.Parse(time.RFC3339, get(t, p.ForeignCluster).Annotations[liqojanitor.MarkedAtAnnotation])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(at).To(BeTemporally(">=", before), "marked-at is the webhook's, not the request's %s", forged)

	g.Eventually(func() []string { return waitingEvents(t, p.ForeignCluster.Name) }).WithTimeout(30*time.Second).
		Should(ContainElement(ContainSubstring("releasing starts in")), "the janitor waits out its grace period")
	rs, pod := &authv1beta1.ResourceSlice{}, &corev1.Pod{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(p.ResourceSlice), rs)).To(Succeed())
	g.Expect(rs.Finalizers).To(ContainElement(liqojanitor.ReplicatorFinalizer), "nothing released yet")
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(p.Pods[0]), pod)).To(Succeed())
	g.Expect(pod.DeletionGracePeriodSeconds).To(HaveValue(BeNumerically("==", 30)), "no pod force-deleted yet")
}

func waitingEvents(t *testing.T, fcName string) []string {
	t.Helper()
	env := harness.Require(t)
	var evs eventsv1.EventList
	NewWithT(t).Expect(env.Client.List(t.Context(), &evs)).To(Succeed())
	var msgs []string
	for _, e := range evs.Items {
		if e.Regarding.Kind == "ForeignCluster" && e.Regarding.Name == fcName && e.Reason == "Waiting" {
			msgs = append(msgs, e.Note)
		}
	}
	return msgs
}

// TestMarkingADuplicateOfALiveClusterIsDenied: a second ForeignCluster with a live provider's cluster ID
// has no APIServerStatus (Liqo probes only one per cluster ID), so it passes the reachability veto; rule 9
// refuses to mark it, and names the other one.
func TestMarkingADuplicateOfALiveClusterIsDenied(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	live := newProvider(t, liqov1beta1.ConditionStatusEstablished, time.Hour)
	dup := &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: live.Name + "-copy",
		Labels: map[string]string{liqojanitor.RemoteClusterIDLabel: string(live.Spec.ClusterID)}},
		Spec: liqov1beta1.ForeignClusterSpec{ClusterID: live.Spec.ClusterID}}
	g.Expect(env.Client.Create(ctx, dup)).To(Succeed())

	deniedDuplicate := map[string]string{"operation": "UPDATE", "result": "denied", "reason": "Duplicate"}
	seen := harness.Metric("liqo_janitor_gate_decisions_total", deniedDuplicate)
	err := fixture.Annotate(ctx, alice, dup, markAndConfirm(dup))
	expectDenied(t, err, http.StatusUnprocessableEntity, "spec.clusterID", dup,
		"ForeignCluster "+live.Name+" has the same spec.clusterID", "kubectl get foreignclusters -o custom-columns")
	g.Expect(harness.Metric("liqo_janitor_gate_decisions_total", deniedDuplicate)).To(Equal(seen+1), "the decision is counted")
	g.Expect(get(t, dup).Annotations).NotTo(HaveKey(liqojanitor.MarkAnnotation))

	// once the stray one is gone, the real one may be marked (when it is unreachable)
	g.Expect(env.Client.Delete(ctx, dup)).To(Succeed())
	setAPIServerStatus(t, get(t, live), liqov1beta1.ConditionStatusError, time.Hour)
	g.Expect(fixture.Annotate(ctx, alice, live, markAndConfirm(live))).To(Succeed())
}

// TestUnpausingAMarkedClusterIsBreakGlass: anyone who may update a ForeignCluster may pause the janitor on
// it; resuming it on a marked cluster resumes irreversible releases and needs the break-glass verb.
func TestUnpausingAMarkedClusterIsBreakGlass(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	g.Expect(fixture.Annotate(ctx, alice, fc, markAndConfirm(fc))).To(Succeed())
	g.Expect(fixture.Annotate(ctx, bob, fc, map[string]*string{liqojanitor.PausedAnnotation: s("true")})).To(Succeed(), "bob may pause")

	for _, unpause := range []*string{nil, s("false")} {
		err := fixture.Annotate(ctx, bob, fc, map[string]*string{liqojanitor.PausedAnnotation: unpause})
		expectDenied(t, err, http.StatusForbidden, "metadata.annotations[liqo.io/foreign-cluster-permanently-unreachable]", fc,
			`user "bob" may not unpause it`, "kubectl create clusterrolebinding mark-unreachable-bob")
	}
	g.Expect(get(t, fc).Annotations).To(HaveKeyWithValue(liqojanitor.PausedAnnotation, "true"), "still paused")

	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.PausedAnnotation: nil})).To(Succeed(), "alice holds the verb")
	g.Expect(get(t, fc).Annotations).NotTo(HaveKey(liqojanitor.PausedAnnotation))

	// on a cluster that is not marked, pausing and unpausing are nobody's business
	other := newProvider(t, "", 0)
	g.Expect(fixture.Annotate(ctx, bob, other, map[string]*string{liqojanitor.PausedAnnotation: s("true")})).To(Succeed())
	g.Expect(fixture.Annotate(ctx, bob, other, map[string]*string{liqojanitor.PausedAnnotation: nil})).To(Succeed())
}

// TestAFenceRecordIsBreakGlassAndStampedWithTheRequester (rule 15): the record ends the janitor's count of
// a returned provider and its critical alert, so only the break-glass holder writes it, and the gate
// writes its time and user whatever the request said.
func TestAFenceRecordIsBreakGlassAndStampedWithTheRequester(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	g.Expect(fixture.Annotate(ctx, alice, fc, markAndConfirm(fc))).To(Succeed())
	recordReturn(t, fc, time.Now())
	forged := "2020-01-01T00:00:00Z by alice: shadowpods 3, pods 3"

	err := fixture.Annotate(ctx, bob, fc, map[string]*string{liqojanitor.FencedAnnotation: &forged})
	expectDenied(t, err, http.StatusForbidden, "metadata.annotations[liqo.io/foreign-cluster-permanently-unreachable]", fc,
		`user "bob" may not record a fence`)
	g.Expect(get(t, fc).Annotations).NotTo(HaveKey(liqojanitor.FencedAnnotation))

	before := time.Now().Truncate(time.Second)
	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.FencedAnnotation: &forged})).To(Succeed())
	rec, ok := liqojanitor.ParseFenceRecord(get(t, fc).Annotations[liqojanitor.FencedAnnotation])
	g.Expect(ok).To(BeTrue())
	g.Expect([]string{rec.By, rec.Counts}).To(Equal([]string{"alice", "shadowpods 3, pods 3"}), "the requester, the counts kept")
	g.Expect(rec.At).To(BeTemporally(">=", before), "the gate's time, not the request's")
}
