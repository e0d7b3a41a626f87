package storm_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
	"github.com/liqo-janitor/liqo-janitor/webhook"
)

const (
	liqoNamespace  = "liqo"
	localClusterID = "consumer-local"
	markerUser     = "alice" // may update ForeignClusters and holds the break-glass role
	plainUser      = "bob"   // may update ForeignClusters, nothing more
	// uninstallerUser is Liqo's pre-delete Job's ServiceAccount, which the suite's gate names for gate
	// rule 18.
	uninstallerUser = "system:serviceaccount:" + liqoNamespace + ":" + liqojanitor.LiqoPreDeleteServiceAccount
)

var alice, bob client.Client

// TestMain serves the gate with the binary's default storm guard (3 providers, more than 50 %), and gate
// rule 18 on for Liqo's pre-delete Job.
func TestMain(m *testing.M) {
	os.Exit(harness.Run(m, harness.Options{GeneratedWebhooks: true}, func(e *harness.Env) error {
		ctx := context.Background()
		if err := e.InstallLocalClusterID(ctx, liqoNamespace, localClusterID); err != nil {
			return err
		}
		if err := e.InstallOperators(ctx, []string{markerUser}, []string{plainUser, uninstallerUser}); err != nil {
			return err
		}
		var err error
		for user, c := range map[string]*client.Client{markerUser: &alice, plainUser: &bob} {
			if *c, err = e.NewClient(func(cfg *rest.Config) { cfg.Impersonate.UserName = user }); err != nil {
				return err
			}
		}
		return e.StartGate(webhook.Options{LiqoNamespace: liqoNamespace, MinUnreachable: time.Minute,
			Storm: liqojanitor.DefaultStormGuard, LiqoUninstallerUsers: []string{uninstallerUser}})
	}))
}

// providers lays out this consumer's only ForeignClusters: unreachable ones (APIServerStatus Error for an
// hour, no tunnel condition), then reachable ones (Established). They are deleted when the test ends.
func providers(t *testing.T, name string, unreachable, reachable int) []*liqov1beta1.ForeignCluster {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	var existing liqov1beta1.ForeignClusterList
	g.Expect(env.Client.List(ctx, &existing)).To(Succeed())
	g.Expect(existing.Items).To(BeEmpty(), "each test lays out every ForeignCluster the storm count sees")
	var fcs []*liqov1beta1.ForeignCluster
	for i := range unreachable + reachable {
		id := fmt.Sprintf("%s-%d", name, i)
		fc := &liqov1beta1.ForeignCluster{
			ObjectMeta: metav1.ObjectMeta{Name: id, Labels: map[string]string{liqojanitor.RemoteClusterIDLabel: id}},
			Spec:       liqov1beta1.ForeignClusterSpec{ClusterID: liqov1beta1.ClusterID(id)},
		}
		g.Expect(env.Client.Create(ctx, fc)).To(Succeed())
		t.Cleanup(func() {
			g.Expect(client.IgnoreNotFound(env.Client.Delete(context.Background(), fc))).To(Succeed())
		})
		status := liqov1beta1.ConditionStatusError
		if i >= unreachable {
			status = liqov1beta1.ConditionStatusEstablished
		}
		g.Expect(fixture.SetAPIServerStatus(ctx, env.Client, fc, status, time.Hour)).To(Succeed())
		fcs = append(fcs, fc)
	}
	return fcs
}

func confirmAndMark(fc *liqov1beta1.ForeignCluster, extra ...string) map[string]*string {
	kv := map[string]*string{liqojanitor.ConfirmAnnotation: ptr.To(string(fc.Spec.ClusterID)), liqojanitor.MarkAnnotation: ptr.To("true")}
	for i := 0; i < len(extra); i += 2 {
		kv[extra[i]] = ptr.To(extra[i+1])
	}
	return kv
}

func get(t *testing.T, fc *liqov1beta1.ForeignCluster) *liqov1beta1.ForeignCluster {
	t.Helper()
	out := &liqov1beta1.ForeignCluster{}
	NewWithT(t).Expect(harness.Require(t).Client.Get(t.Context(), client.ObjectKeyFromObject(fc), out)).To(Succeed())
	return out
}

// expectDenied asserts a denial's HTTP code, that a cause names the field path, and that the message
// carries each fragment.
func expectDenied(t *testing.T, err error, code int32, fieldPath string, fragments ...string) {
	t.Helper()
	g := NewWithT(t)
	var status *apierrors.StatusError
	g.Expect(errors.As(err, &status)).To(BeTrue(), "want an API status error, got %v", err)
	g.Expect(status.ErrStatus.Code).To(Equal(code), "message: %s", status.ErrStatus.Message)
	var fields []string
	for _, c := range status.ErrStatus.Details.Causes {
		fields = append(fields, c.Field)
	}
	g.Expect(fields).To(ContainElement(fieldPath), "message: %s", status.ErrStatus.Message)
	for _, f := range fragments {
		g.Expect(err.Error()).To(ContainSubstring(f))
	}
}

const ackPath = "metadata.annotations[liqo-janitor.io/acknowledge-unreachable]"

// TestAStormHoldsTheMarkUntilTheCountIsTyped: with 3 of 4 providers unreachable at once, a mark is refused
// with the count, the cluster IDs, why and the next step; a wrong count is refused with the right one; the
// right count from a requester without the verb is refused (gate rule 5); from one with it the mark is stored,
// with the gate's stamp of who acknowledged; removing the mark removes the acknowledgement and its stamp.
func TestAStormHoldsTheMarkUntilTheCountIsTyped(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	fcs := providers(t, "storm", 3, 1)
	fc := fcs[0]
	denied := map[string]string{"operation": "UPDATE", "result": "denied", "reason": "Storm"}
	seen := harness.Metric("liqo_janitor_gate_decisions_total", denied)

	err := fixture.Annotate(ctx, alice, fc, confirmAndMark(fc))
	expectDenied(t, err, http.StatusUnprocessableEntity, ackPath,
		"3 of 4 providers unreachable by Liqo's evidence (storm-0, storm-1, storm-2) at once, this one counted",
		"this cluster's side of a cut", "check this cluster's own connectivity",
		`liqo-janitor.io/acknowledge-unreachable: "3"`,
		"kubectl annotate foreigncluster storm-0 liqo-janitor.io/acknowledge-unreachable=3 liqo-janitor.io/confirm-cluster-id=storm-0 liqo.io/foreign-cluster-permanently-unreachable=true --overwrite",
		"kubectl liqo-janitor mark storm-0 (the plugin's mark asks for the count)")
	g.Expect(harness.Metric("liqo_janitor_gate_decisions_total", denied)).To(Equal(seen + 1))

	err = fixture.Annotate(ctx, alice, fc, confirmAndMark(fc, liqojanitor.AcknowledgeUnreachableAnnotation, "2"))
	expectDenied(t, err, http.StatusUnprocessableEntity, ackPath, "it is 3 now", "liqo-janitor.io/acknowledge-unreachable=3")

	err = fixture.Annotate(ctx, bob, fc, confirmAndMark(fc, liqojanitor.AcknowledgeUnreachableAnnotation, "3"))
	expectDenied(t, err, http.StatusForbidden, "metadata.annotations[liqo.io/foreign-cluster-permanently-unreachable]", liqojanitor.MarkVerb)
	g.Expect(get(t, fc).Annotations).To(BeEmpty(), "nothing was stored")

	before := time.Now().Add(-time.Second).Truncate(time.Second)
	g.Expect(fixture.Annotate(ctx, alice, fc, confirmAndMark(fc, liqojanitor.AcknowledgeUnreachableAnnotation, "3"))).To(Succeed())
	got := get(t, fc).Annotations
	g.Expect(got).To(And(HaveKeyWithValue(liqojanitor.MarkAnnotation, "true"), HaveKeyWithValue(liqojanitor.AcknowledgeUnreachableAnnotation, "3")))
	ack, ok := liqojanitor.ParseAcknowledgement(got[liqojanitor.AcknowledgedByAnnotation])
	g.Expect(ok).To(BeTrue(), "stamped by the mutating webhook: %q", got[liqojanitor.AcknowledgedByAnnotation])
	g.Expect(ack.By).To(Equal(markerUser))
	g.Expect(ack.Count).To(Equal(3))
	g.Expect(ack.At).To(BeTemporally(">=", before))

	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.MarkAnnotation: nil})).To(Succeed())
	g.Expect(get(t, fc).Annotations).To(BeEmpty(), "the acknowledgement and its stamp go with the mark (gate rule 7)")
}

// TestAnAcknowledgementAheadOfTheMarkDoesNotCount: the count is typed in the marking request itself:
// ahead of the mark it is refused, for everyone, and one that got there while the gate was absent does
// not count for the mark.
func TestAnAcknowledgementAheadOfTheMarkDoesNotCount(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	fc := providers(t, "ahead", 3, 1)[0]
	for _, c := range []client.Client{alice, harness.Require(t).Client} {
		err := fixture.Annotate(ctx, c, fc, map[string]*string{liqojanitor.AcknowledgeUnreachableAnnotation: ptr.To("3")})
		expectDenied(t, err, http.StatusUnprocessableEntity, ackPath, "counts only in the request that sets the mark")
	}
	withoutGate(t, bob, fc, map[string]*string{liqojanitor.AcknowledgeUnreachableAnnotation: ptr.To("3")})

	err := fixture.Annotate(ctx, alice, fc, confirmAndMark(fc, liqojanitor.AcknowledgeUnreachableAnnotation, "3"))
	expectDenied(t, err, http.StatusUnprocessableEntity, ackPath, "was set before this request",
		"kubectl annotate foreigncluster ahead-0 liqo-janitor.io/acknowledge-unreachable-")
	g.Expect(get(t, fc).Annotations).NotTo(HaveKey(liqojanitor.MarkAnnotation))

	g.Expect(fixture.Annotate(ctx, bob, fc, map[string]*string{liqojanitor.AcknowledgeUnreachableAnnotation: nil})).To(Succeed(), "removing it is anyone's")
	g.Expect(fixture.Annotate(ctx, alice, fc, confirmAndMark(fc, liqojanitor.AcknowledgeUnreachableAnnotation, "3"))).To(Succeed())
}

// TestTwoOfTwoUnreachableIsNoStorm: a consumer with two providers is never in a storm (at least 3).
func TestTwoOfTwoUnreachableIsNoStorm(t *testing.T) {
	fcs := providers(t, "pair", 2, 0)
	NewWithT(t).Expect(fixture.Annotate(t.Context(), alice, fcs[0], confirmAndMark(fcs[0]))).To(Succeed())
}

// TestATunnelUpIsNotUnreachable: a provider whose API server is down but whose tunnel Liqo reports up is
// alive by Liqo's evidence (liqojanitor.UnreachableByLiqo): 3 API servers down of 3 with one tunnel up is 2
// unreachable, no storm.
func TestATunnelUpIsNotUnreachable(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	fcs := providers(t, "tunnel", 3, 0)
	err := fixture.Annotate(ctx, alice, fcs[0], confirmAndMark(fcs[0]))
	expectDenied(t, err, http.StatusUnprocessableEntity, ackPath, "3 of 3 providers unreachable")

	latest := get(t, fcs[2])
	latest.Status.Modules.Networking = liqov1beta1.Module{Enabled: true, Conditions: []liqov1beta1.Condition{{
		Type: liqov1beta1.NetworkConnectionStatusCondition, Status: liqov1beta1.ConditionStatusEstablished,
		LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second)),
	}}}
	g.Expect(env.Client.Status().Update(ctx, latest)).To(Succeed())
	g.Expect(fixture.Annotate(ctx, alice, fcs[0], confirmAndMark(fcs[0]))).To(Succeed())
}

// TestLiqosUninstallerIsHeldByAStormToo: gate rule 18 keeps gate rule 21. A force uninstall bare-marks every
// ForeignCluster, but three providers of four unreachable at once look like this cluster's own cut as much
// as an uninstall: the bare mark from a live pod of Liqo's pre-delete Job (exempt from the verb and the
// confirmation, so refused as a storm, not for want of them) is held like anyone's.
func TestLiqosUninstallerIsHeldByAStormToo(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	_, cfg, err := env.LiqoUninstallerPod(t, liqoNamespace)
	g.Expect(err).NotTo(HaveOccurred())
	uninstaller, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	fcs := providers(t, "uninstall", 3, 1)
	refused := map[string]string{"operation": "UPDATE", "result": "denied", "reason": "Storm"}
	seen := harness.Metric("liqo_janitor_gate_decisions_total", refused)
	err = fixture.Annotate(ctx, uninstaller, fcs[0], map[string]*string{liqojanitor.MarkAnnotation: ptr.To("true")})
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "refused as a storm (422), not for want of the verb: %v", err)
	g.Expect(err.Error()).To(ContainSubstring("3 of 4 providers unreachable"))
	g.Expect(get(t, fcs[0]).Annotations).To(BeEmpty())
	g.Expect(harness.Metric("liqo_janitor_gate_decisions_total", refused)).To(Equal(seen + 1))
}

// withoutGate writes kv onto the unmarked fc as c, as if the gate were not installed
// (harness.Env.WithoutGate), and returns with the gate back: an acknowledgement ahead of the mark is
// refused again.
func withoutGate(t *testing.T, c client.Client, fc *liqov1beta1.ForeignCluster, kv map[string]*string) {
	t.Helper()
	harness.Require(t).WithoutGate(t, fc.Name, func(ctx context.Context) error { return fixture.Annotate(ctx, c, fc, kv) },
		harness.GateProbe{Key: liqojanitor.AcknowledgeUnreachableAnnotation, Value: "9", Refusal: "counts only in the request that sets the mark"})
}
