package webhook_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// Evidence of death (issue 16): the gate accepts a mark only on evidence Liqo keeps current, and only the
// janitor writes the janitor's words. Each test here fails when its rule is taken out of decide.

func relabel(t *testing.T, c client.Client, fc *liqov1beta1.ForeignCluster, labels map[string]*string) error {
	t.Helper()
	return c.Patch(t.Context(), &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: fc.Name}},
		client.RawPatch(types.MergePatchType, must(json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}}))))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestTheAttackInIssue16IsRefused plays the attack that motivated the rules: switch Liqo's webhook off
// for the object, wait for a blip, remove Liqo's label so Liqo never updates the status again. The frozen
// "Error" no longer lets the mark through (rule 9); once marked, the labels cannot be touched (rule 11).
func TestTheAttackInIssue16IsRefused(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	g.Expect(relabel(t, bob, fc, map[string]*string{liqojanitor.WebhookSkipLabel: s("true"), liqojanitor.RemoteClusterIDLabel: nil})).
		To(Succeed(), "Liqo's labels change freely on an unmarked ForeignCluster: Liqo's own writes never wait for the gate")

	err := fixture.Annotate(ctx, alice, fc, markAndConfirm(fc))
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.labels[liqo.io/remote-cluster-id]", fc,
		"does not carry the label liqo.io/remote-cluster-id", "kubectl label foreigncluster "+fc.Name+" liqo.io/remote-cluster-id="+fc.Name+" --overwrite",
		"kubectl label foreigncluster "+fc.Name+" liqo.io/webhook-skip-")

	// a label naming another cluster is no better
	g.Expect(relabel(t, bob, fc, map[string]*string{liqojanitor.RemoteClusterIDLabel: s("someone-else")})).To(Succeed())
	err = fixture.Annotate(ctx, alice, fc, markAndConfirm(fc))
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.labels[liqo.io/remote-cluster-id]", fc, `"someone-else", not its spec.clusterID`)
	g.Expect(get(t, fc).Annotations).NotTo(HaveKey(liqojanitor.MarkAnnotation))

	// restored, the mark goes on; then the labels are locked, for everyone, the break-glass holder too
	g.Expect(relabel(t, bob, fc, map[string]*string{liqojanitor.RemoteClusterIDLabel: s(fc.Name)})).To(Succeed())
	g.Expect(fixture.Annotate(ctx, alice, fc, markAndConfirm(fc))).To(Succeed())
	for _, change := range []map[string]*string{
		{liqojanitor.RemoteClusterIDLabel: nil},
		{liqojanitor.RemoteClusterIDLabel: s("someone-else")},
		{liqojanitor.WebhookSkipLabel: nil},
	} {
		for key := range change {
			for _, c := range []client.Client{alice, env.Client} {
				err := relabel(t, c, fc, change)
				expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.labels["+key+"]", fc,
					"cannot change while the cluster is marked", "remove the mark first")
			}
		}
	}
	g.Expect(get(t, fc).Labels).To(Equal(map[string]string{liqojanitor.RemoteClusterIDLabel: fc.Name, liqojanitor.WebhookSkipLabel: "true"}))

	// Liqo's own status writes on the marked object never reach the gate
	setAPIServerStatus(t, get(t, fc), liqov1beta1.ConditionStatusEstablished, 0)
	// unmarked, the labels are free again
	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.MarkAnnotation: nil})).To(Succeed())
	g.Expect(relabel(t, bob, fc, map[string]*string{liqojanitor.WebhookSkipLabel: nil})).To(Succeed())
}

// TestAnotherForeignClusterCarryingTheLabelIsADuplicate: Liqo's lookup goes by label, so an object with
// another spec.clusterID but this cluster ID's label may be the one Liqo probes (the oldest wins).
func TestAnotherForeignClusterCarryingTheLabelIsADuplicate(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	impostor := &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: fc.Name + "-impostor",
		Labels: map[string]string{liqojanitor.RemoteClusterIDLabel: fc.Name}},
		Spec: liqov1beta1.ForeignClusterSpec{ClusterID: liqov1beta1.ClusterID(fc.Name + "-other")}}
	g.Expect(env.Client.Create(ctx, impostor)).To(Succeed())

	err := fixture.Annotate(ctx, alice, fc, markAndConfirm(fc))
	expectDenied(t, err, http.StatusUnprocessableEntity, "spec.clusterID", fc,
		"ForeignCluster "+impostor.Name+" carries the label liqo.io/remote-cluster-id="+fc.Name)
	g.Expect(env.Client.Delete(ctx, impostor)).To(Succeed())
	g.Expect(fixture.Annotate(ctx, alice, fc, markAndConfirm(fc))).To(Succeed())
}

// TestNoEvidenceNeedsASecondKey: without an APIServerStatus condition Liqo holds no reachability evidence;
// the mark needs liqo-janitor.io/no-reachability-evidence equal to the cluster ID (rule 12), and removing
// the mark removes that key too.
func TestNoEvidenceNeedsASecondKey(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	fc := newProvider(t, "", 0)
	denied := map[string]string{"operation": "UPDATE", "result": "denied", "reason": "NoEvidence"}
	seen := harness.Metric("liqo_janitor_gate_decisions_total", denied)

	err := fixture.Annotate(ctx, alice, fc, markAndConfirm(fc))
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/no-reachability-evidence]", fc,
		"no APIServerStatus condition", "liqo-janitor.io/no-reachability-evidence="+fc.Name, "kubectl liqo-janitor mark "+fc.Name)
	g.Expect(harness.Metric("liqo_janitor_gate_decisions_total", denied)).To(Equal(seen + 1))

	kv := markAndConfirm(fc)
	kv[liqojanitor.NoEvidenceAnnotation] = s("not-" + fc.Name)
	err = fixture.Annotate(ctx, alice, fc, kv)
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/no-reachability-evidence]", fc)

	kv[liqojanitor.NoEvidenceAnnotation] = s(fc.Name)
	g.Expect(fixture.Annotate(ctx, alice, fc, kv)).To(Succeed())
	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.MarkAnnotation: nil})).To(Succeed())
	g.Expect(get(t, fc).Annotations).To(BeEmpty(), "unmarking takes the no-evidence key with it")
}

// TestNoForeignClusterIsBornMarked (rule 13).
func TestNoForeignClusterIsBornMarked(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	id := "born-dead"
	fc := &liqov1beta1.ForeignCluster{
		ObjectMeta: metav1.ObjectMeta{Name: id, Labels: map[string]string{liqojanitor.RemoteClusterIDLabel: id},
			Annotations: map[string]string{liqojanitor.MarkAnnotation: "true", liqojanitor.ConfirmAnnotation: id, liqojanitor.NoEvidenceAnnotation: id}},
		Spec: liqov1beta1.ForeignClusterSpec{ClusterID: liqov1beta1.ClusterID(id)},
	}
	err := alice.Create(t.Context(), fc)
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo.io/foreign-cluster-permanently-unreachable]", fc,
		"cannot be created marked", "create it without")
	g.Expect(env.Client.Get(t.Context(), client.ObjectKeyFromObject(fc), &liqov1beta1.ForeignCluster{})).NotTo(Succeed(), "nothing was created")
}

// TestTheGateProbesTheProviderItself: Liqo's status says Error, but the provider's API server answers the
// gate's own unauthenticated probe: the mark is vetoed (rule 4). Once it stops answering, the mark goes
// on. The probe targets only loopback test servers.
func TestTheGateProbesTheProviderItself(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	var sawCredentials bool
	provider := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawCredentials = sawCredentials || r.Header.Get("Authorization") != "" || (r.TLS != nil && len(r.TLS.PeerCertificates) > 0)
		w.WriteHeader(http.StatusUnauthorized) // an API server with anonymous auth off still answers
	}))
	fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	latest := get(t, fc)
	latest.Status.APIServerURL = "http://127.0.0.1:1" // not https: never probed
	latest.Status.ForeignProxyURL = provider.URL
	g.Expect(env.Client.Status().Update(ctx, latest)).To(Succeed())

	vetoed := map[string]string{"operation": "UPDATE", "result": "denied", "reason": "ProviderAnswers"}
	seen := harness.Metric("liqo_janitor_gate_decisions_total", vetoed)
	err := fixture.Annotate(ctx, alice, fc, markAndConfirm(fc))
	expectDenied(t, err, http.StatusUnprocessableEntity, "status.conditions", fc,
		"Liqo's status says the provider is unreachable, but the provider answers at "+provider.URL)
	g.Expect(harness.Metric("liqo_janitor_gate_decisions_total", vetoed)).To(Equal(seen + 1))
	g.Expect(sawCredentials).To(BeFalse(), "the probe sends no credentials")
	g.Expect(get(t, fc).Annotations).NotTo(HaveKey(liqojanitor.MarkAnnotation))

	provider.Close()
	g.Expect(fixture.Annotate(ctx, alice, fc, markAndConfirm(fc))).To(Succeed(), "no answer changes nothing")
}

// TestOnlyTheJanitorWritesItsKeys (rule 14): the janitor's identity (the install's ServiceAccount, which
// the gate runs as and learnt with a SelfSubjectReview) writes the cleanup annotation and its record of
// first sight; nobody else may set, change or remove them, the break-glass holder and a cluster admin
// included. Removing the mark removes a grace-window plan and record with it, but never a finished
// clean-up's summary.
func TestOnlyTheJanitorWritesItsKeys(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	for _, c := range []client.Client{alice, env.Client} {
		for _, key := range liqojanitor.JanitorOwnedAnnotations {
			err := fixture.Annotate(ctx, c, fc, map[string]*string{key: s("forged")})
			expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations["+key+"]", fc, "written only by liqo-janitor's own identity")
		}
	}
	g.Expect(fixture.Annotate(ctx, alice, fc, markAndConfirm(fc))).To(Succeed())
	janitorKeys := map[string]*string{liqojanitor.CleanupAnnotation: s(liqojanitor.GracePlan{Left: 20 * time.Second, Plan: "would release pods 3"}.String()),
		liqojanitor.FirstSeenAnnotation: s(time.Now().UTC().Format(time.RFC3339)), liqojanitor.GraceEndsAnnotation: s(time.Now().UTC().Format(time.RFC3339))}
	g.Expect(fixture.Annotate(ctx, asJanitor, fc, janitorKeys)).To(Succeed(), "the janitor's identity writes its keys")
	err := fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.CleanupAnnotation: nil})
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/cleanup]", fc)

	// unmarking in the grace window takes the plan and the record along
	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.MarkAnnotation: nil})).To(Succeed())
	g.Expect(get(t, fc).Annotations).To(BeEmpty())

	// a finished clean-up's summary outlives the mark, and is the janitor's alone
	g.Expect(fixture.Annotate(ctx, alice, fc, markAndConfirm(fc))).To(Succeed())
	g.Expect(fixture.Annotate(ctx, asJanitor, fc, map[string]*string{liqojanitor.CleanupAnnotation: s("pods 3/3")})).To(Succeed())
	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.MarkAnnotation: nil})).To(Succeed())
	g.Expect(get(t, fc).Annotations).To(Equal(map[string]string{liqojanitor.CleanupAnnotation: "pods 3/3"}))
	err = fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.CleanupAnnotation: nil})
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/cleanup]", fc)
}
