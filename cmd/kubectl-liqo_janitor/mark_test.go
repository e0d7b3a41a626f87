package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/mark"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/view"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// gateBypassLabel on a ForeignCluster keeps the API server from calling the gate about it, as if the gate
// were not installed: for every request with value "all", for the requests that store (not dry runs) with
// "stored".
const gateBypassLabel = "test.liqo-janitor.io/bypass-gate"

// bypassCondition is the matchCondition bypassGate adds to every webhook of the gate.
var bypassCondition = admissionregistrationv1.MatchCondition{
	Name: "test-bypass-gate",
	Expression: fmt.Sprintf(`!has(object.metadata.labels) || !(%[1]q in object.metadata.labels) || `+
		`(object.metadata.labels[%[1]q] == "stored" && request.dryRun == true)`, gateBypassLabel),
}

// bypassGate labels fc with gateBypassLabel=mode once the API server no longer calls the gate for it; at
// the end of the test it removes the mark, then the label, then the bypass.
func bypassGate(t *testing.T, fc *liqov1beta1.ForeignCluster, mode string) {
	t.Helper()
	testEnv := harness.Require(t)
	g := NewWithT(t)
	editWebhooks(t.Context(), t, func(conds []admissionregistrationv1.MatchCondition) []admissionregistrationv1.MatchCondition {
		return append(conds, bypassCondition)
	})
	// t.Context() is cancelled before the cleanups run
	t.Cleanup(func() {
		editWebhooks(context.Background(), t, func(conds []admissionregistrationv1.MatchCondition) []admissionregistrationv1.MatchCondition {
			return slices.DeleteFunc(conds, func(c admissionregistrationv1.MatchCondition) bool { return c.Name == bypassCondition.Name })
		})
	})
	label(t.Context(), t, fc, "all")
	t.Cleanup(func() {
		g.Expect(fixture.Annotate(context.Background(), testEnv.Client, fc, map[string]*string{
			liqojanitor.MarkAnnotation: nil, liqojanitor.ConfirmAnnotation: nil, liqojanitor.NoEvidenceAnnotation: nil,
			liqojanitor.ReasonAnnotation: nil, liqojanitor.MarkedByAnnotation: nil, liqojanitor.MarkedAtAnnotation: nil,
		})).To(Succeed())
		label(context.Background(), t, fc, "")
	})
	g.Eventually(func() (map[string]string, error) {
		probe := fc.DeepCopy()
		err := testEnv.Client.Patch(t.Context(), probe, mark.Patch(fc, "", ""), client.DryRunAll)
		return probe.Annotations, err
	}).Should(And(HaveKey(liqojanitor.MarkAnnotation), Not(HaveKey(liqojanitor.MarkedByAnnotation))),
		"the API server no longer calls the gate for the ForeignCluster")
	label(t.Context(), t, fc, mode)
}

// editWebhooks changes the matchConditions of every webhook of the gate.
func editWebhooks(ctx context.Context, t *testing.T, edit func([]admissionregistrationv1.MatchCondition) []admissionregistrationv1.MatchCondition) {
	t.Helper()
	testEnv := harness.Require(t)
	g := NewWithT(t)
	mut, val, err := testEnv.GeneratedWebhooks()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(testEnv.Client.Get(ctx, client.ObjectKeyFromObject(mut), mut)).To(Succeed())
	for i := range mut.Webhooks {
		mut.Webhooks[i].MatchConditions = edit(mut.Webhooks[i].MatchConditions)
	}
	g.Expect(testEnv.Client.Update(ctx, mut)).To(Succeed())
	g.Expect(testEnv.Client.Get(ctx, client.ObjectKeyFromObject(val), val)).To(Succeed())
	for i := range val.Webhooks {
		val.Webhooks[i].MatchConditions = edit(val.Webhooks[i].MatchConditions)
	}
	g.Expect(testEnv.Client.Update(ctx, val)).To(Succeed())
}

// label sets gateBypassLabel on fc to value, or removes it ("").
func label(ctx context.Context, t *testing.T, fc *liqov1beta1.ForeignCluster, value string) {
	t.Helper()
	testEnv := harness.Require(t)
	var v any = value
	if value == "" {
		v = nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{gateBypassLabel: v}}})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	target := &liqov1beta1.ForeignCluster{}
	target.Name = fc.Name
	NewWithT(t).Expect(testEnv.Client.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
}

// TestMarkRefusesWhenTheGateDoesNotAnswer: a dry run without the gate's stamps is no answer from the gate;
// --without-gate marks anyway and says what Liqo then does at once.
func TestMarkRefusesWhenTheGateDoesNotAnswer(t *testing.T) {
	g := NewWithT(t)
	dead, live := deadAndLive(t)
	id, name := string(dead.ForeignCluster.Spec.ClusterID), dead.ForeignCluster.Name
	bypassGate(t, dead.ForeignCluster, "all")
	before := rvs(t, dead, live)

	out, _, err := kubectl(t, alice, "", "plan", id)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("Gate: NOT ANSWERING: the dry run passed with no liqo-janitor.io/marked-by or marked-at stamp"))
	g.Expect(out).To(ContainSubstring(view.CheckGateCommand))

	out, stderr, err := kubectl(t, alice, id+"\n", "mark", id, "--reason", "gone")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring("error: the gate did not answer: the server-side dry run of the mark on ForeignCluster " + name))
	g.Expect(stderr).To(ContainSubstring("\n  " + view.CheckGateCommand + "\n"))
	g.Expect(stderr).To(ContainSubstring("add --without-gate"))
	g.Expect(out).NotTo(ContainSubstring("Type the cluster ID"), "refused before asking")
	_, _, err = kubectl(t, alice, "", "mark", id, "--reason", "gone", "--yes")
	g.Expect(err).To(HaveOccurred())
	_, _, err = kubectl(t, alice, "", "mark", id, "--reason", "gone", "--yes", "--dry-run=server")
	g.Expect(err).To(HaveOccurred())
	g.Expect(rvs(t, dead, live)).To(Equal(before), "nothing was written")

	out, _, err = kubectl(t, alice, id+"\n", "mark", id, "--reason", "gone", "--without-gate")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("Liqo >= v1.1 acts on it at once: its crdReplicator releases"))
	g.Expect(out).To(ContainSubstring("its VirtualNode drain force-deletes the pods"))
	g.Expect(out).To(ContainSubstring("with no grace period, no check"))
	g.Expect(out).To(ContainSubstring("Type the cluster ID (" + id + ") to confirm"))
	g.Expect(out).To(ContainSubstring("ForeignCluster " + name + " is marked permanently unreachable WITHOUT the gate"))
	a := annotations(t, dead)
	g.Expect(a).To(HaveKeyWithValue(liqojanitor.MarkAnnotation, liqojanitor.MarkValue))
	g.Expect(a).NotTo(HaveKey(liqojanitor.MarkedByAnnotation))
}

// TestMarkNeverReportsSuccessWithoutTheStoredStamps: the gate answered the dry run but not the request that
// stored the mark; mark says the mark is stored without the stamps, and how to take it back.
func TestMarkNeverReportsSuccessWithoutTheStoredStamps(t *testing.T) {
	g := NewWithT(t)
	dead, _ := deadAndLive(t)
	id, name := string(dead.ForeignCluster.Spec.ClusterID), dead.ForeignCluster.Name
	bypassGate(t, dead.ForeignCluster, "stored")

	out, stderr, err := kubectl(t, alice, "", "mark", id, "--reason", "gone", "--yes")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring("error: the mark IS stored on ForeignCluster " + name + ", but without the gate's stamps"))
	g.Expect(stderr).To(ContainSubstring("\n  kubectl liqo-janitor unmark " + name + "\n"))
	g.Expect(out).NotTo(ContainSubstring("is marked permanently unreachable"))
	a := annotations(t, dead)
	g.Expect(a).To(HaveKeyWithValue(liqojanitor.MarkAnnotation, liqojanitor.MarkValue), "the world: the mark is stored")
	g.Expect(a).NotTo(HaveKey(liqojanitor.MarkedByAnnotation))
}

// dropEvidence removes the ForeignCluster's APIServerStatus condition, as Liqo does when it has no API
// server URL for it.
func dropEvidence(t *testing.T, p *fixture.Provider) {
	t.Helper()
	testEnv := harness.Require(t)
	g := NewWithT(t)
	fc := p.ForeignCluster.DeepCopy()
	g.Expect(testEnv.Client.Get(t.Context(), client.ObjectKeyFromObject(fc), fc)).To(Succeed())
	fc.Status.Conditions = nil
	g.Expect(testEnv.Client.Status().Update(t.Context(), fc)).To(Succeed())
}

// TestMarkWithoutReachabilityEvidenceTakesTheClusterIDTwice: for a ForeignCluster Liqo keeps no
// APIServerStatus for, mark explains it, takes the cluster ID typed a second time (or
// --no-reachability-evidence with --yes) and sends it as the no-reachability-evidence key.
func TestMarkWithoutReachabilityEvidenceTakesTheClusterIDTwice(t *testing.T) {
	g := NewWithT(t)
	dead, other := deadAndLive(t)
	dropEvidence(t, dead)
	dropEvidence(t, other)
	id, otherID := string(dead.ForeignCluster.Spec.ClusterID), string(other.ForeignCluster.Spec.ClusterID)
	before := rvs(t, dead, other)

	out, _, err := kubectl(t, alice, "", "plan", id)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("No reachability evidence: Liqo keeps no APIServerStatus for this ForeignCluster"))
	g.Expect(out).To(ContainSubstring("asks you to type its cluster ID a second time"))
	g.Expect(out).To(ContainSubstring("Gate: a mark would be accepted now"), "the dry run carries the second key")

	_, stderr, err := kubectl(t, alice, "", "mark", id, "--reason", "gone", "--yes")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring("with --yes, add --no-reachability-evidence=" + id))
	_, stderr, err = kubectl(t, alice, "", "mark", id, "--reason", "gone", "--yes", "--no-reachability-evidence=provider-typo")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring("is not the cluster ID"))
	_, stderr, err = kubectl(t, alice, id+"\nprovider-typo\n", "mark", id, "--reason", "gone")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring("nothing was written"))
	g.Expect(rvs(t, dead, other)).To(Equal(before))

	out, _, err = kubectl(t, alice, id+"\n"+id+"\n", "mark", id, "--reason", "gone")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("No reachability evidence: Liqo keeps no APIServerStatus"))
	g.Expect(out).To(ContainSubstring("Type the cluster ID (" + id + ") again, for " + liqojanitor.NoEvidenceAnnotation))
	g.Expect(out).To(ContainSubstring("stamped by the gate: marked-by=" + alice))
	a := annotations(t, dead)
	g.Expect(a).To(HaveKeyWithValue(liqojanitor.NoEvidenceAnnotation, id))
	g.Expect(a).To(HaveKeyWithValue(liqojanitor.MarkAnnotation, liqojanitor.MarkValue))
	g.Expect(a).To(HaveKeyWithValue(liqojanitor.MarkedByAnnotation, alice))

	_, _, err = kubectl(t, alice, "", "mark", otherID, "--reason", "gone", "--yes", "--no-reachability-evidence="+otherID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(annotations(t, other)).To(HaveKeyWithValue(liqojanitor.NoEvidenceAnnotation, otherID))
}

// TestMarkSendsNoEvidenceKeyWhereLiqoKeepsEvidence: the second key is only for a ForeignCluster without
// APIServerStatus.
func TestMarkSendsNoEvidenceKeyWhereLiqoKeepsEvidence(t *testing.T) {
	g := NewWithT(t)
	dead, _ := deadAndLive(t)
	id := string(dead.ForeignCluster.Spec.ClusterID)
	_, stderr, err := kubectl(t, alice, "", "mark", id, "--reason", "gone", "--yes", "--no-reachability-evidence="+id)
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring("leave the flag out"))
	_, _, err = kubectl(t, alice, "", "mark", id, "--reason", "gone", "--yes")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(annotations(t, dead)).NotTo(HaveKey(liqojanitor.NoEvidenceAnnotation))
}
