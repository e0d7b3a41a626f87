package janitor_test

import (
	"fmt"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// Evidence of death, the janitor's half (issue 16): the suite runs without the gate, as an install whose
// webhook is absent would, so each rule here holds in the janitor itself.

func setLabel(t *testing.T, fc *liqov1beta1.ForeignCluster, key string, value *string) {
	t.Helper()
	env := harness.Require(t)
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:null}}}`, key)
	if value != nil {
		patch = fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, key, *value)
	}
	NewWithT(t).Expect(env.Client.Patch(t.Context(), &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: fc.Name}},
		client.RawPatch(types.MergePatchType, patch))).To(Succeed())
}

func waits(reason janitor.WaitReason) func() float64 {
	return func() float64 {
		return counter("liqo_janitor_waits_total", map[string]string{"reason": string(reason)})
	}
}

// TestAClusterLiqoDoesNotFindIsNotDead (janitor rule 1): a marked ForeignCluster whose
// liqo.io/remote-cluster-id label is gone is one Liqo never probes again, so its "Error" is frozen; another
// ForeignCluster carrying the cluster ID's label (whatever its spec) may be the one Liqo probes. Either keeps
// the cluster alive.
func TestAClusterLiqoDoesNotFindIsNotDead(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	p := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 2}).Providers[0]
	kill(t, p)
	before := rvs(t, p.Objects()...)
	setLabel(t, p.ForeignCluster, liqojanitor.RemoteClusterIDLabel, nil)
	seen := waits(janitor.WaitNotFoundByLiqo)()
	startJanitor(t, janitor.Options{})
	g.Expect(fixture.Mark(ctx, env.Client, p)).To(Succeed())
	g.Eventually(waits(janitor.WaitNotFoundByLiqo)).WithTimeout(30 * time.Second).Should(BeNumerically(">", seen))
	g.Eventually(func() []string { return eventReasons(t, "ForeignCluster", p.ForeignCluster.Name) }).Should(ContainElement("Waiting"))
	g.Expect(rvs(t, p.Objects()...)).To(Equal(before), "nothing released")

	// an impostor carrying the label, unmarked, keeps the cluster ID alive even once the label is back
	impostor := &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: p.ID + "-impostor",
		Labels: map[string]string{liqojanitor.RemoteClusterIDLabel: p.ID}},
		Spec: liqov1beta1.ForeignClusterSpec{ClusterID: liqov1beta1.ClusterID(p.ID + "-elsewhere")}}
	g.Expect(env.Client.Create(ctx, impostor)).To(Succeed())
	seenDup := waits(janitor.WaitDuplicate)()
	setLabel(t, p.ForeignCluster, liqojanitor.RemoteClusterIDLabel, ptr.To(p.ID))
	g.Eventually(waits(janitor.WaitDuplicate)).WithTimeout(30 * time.Second).Should(BeNumerically(">", seenDup))
	g.Expect(rvs(t, p.Objects()...)).To(Equal(before), "nothing released while the impostor says the cluster is alive")

	g.Expect(env.Client.Delete(ctx, impostor)).To(Succeed())
	g.Eventually(func() int { return podsLeft(t, p) }).WithTimeout(30 * time.Second).Should(BeZero())
}

// TestTheGraceWindowCountsFromTheJanitorsFirstSight (janitor rule 1): a marked-at written an hour ago —
// forged, or the janitor was down — does not shorten the window: it ends a grace period after the janitor
// first saw the mark, as recorded in its own annotations, and a restarted janitor keeps that record.
func TestTheGraceWindowCountsFromTheJanitorsFirstSight(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	p := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 2}).Providers[0]
	kill(t, p)
	const grace = 12 * time.Second
	g.Expect(fixture.Mark(ctx, env.Client, p, liqojanitor.MarkedAtAnnotation, time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))).To(Succeed())
	before := rvs(t, p.Objects()...)
	sighted := time.Now()
	stop := startJanitor(t, janitor.Options{GracePeriod: grace})

	var ends time.Time
	g.Eventually(func(g Gomega) {
		ann := get(t, p.ForeignCluster).Annotations
		first, err := time.Parse(time.RFC3339, ann[liqojanitor.FirstSeenAnnotation])
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(first).To(BeTemporally(">=", sighted))
		ends, err = time.Parse(time.RFC3339, ann[liqojanitor.GraceEndsAnnotation])
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ends).To(Equal(first.Add(grace)))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(rvs(t, p.Objects()...)).To(Equal(before), "in the grace window nothing is released")

	// a failover: the next janitor reads the record instead of starting the window again
	stop()
	recorded := get(t, p.ForeignCluster).Annotations[liqojanitor.GraceEndsAnnotation]
	startJanitor(t, janitor.Options{GracePeriod: grace})
	g.Eventually(func() int { return podsLeft(t, p) }).WithTimeout(40 * time.Second).Should(BeZero())
	g.Expect(time.Now()).To(BeTemporally(">=", ends), "released only once the recorded window ended")
	g.Expect(get(t, p.ForeignCluster).Annotations).To(HaveKeyWithValue(liqojanitor.GraceEndsAnnotation, recorded),
		"the window was not restarted by the second janitor")
}

// TestAForgedPlanIsRewritten (gate rule 14's janitor half): the janitor compares its plan with the live
// annotation, not with its memory, so a plan someone removed or changed is written again.
func TestAForgedPlanIsRewritten(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	p := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 2}).Providers[0]
	kill(t, p)
	startJanitor(t, janitor.Options{GracePeriod: time.Minute})
	g.Expect(fixture.Mark(ctx, env.Client, p, markedAtNow()...)).To(Succeed())
	plan := HaveSuffix("would release pods 2, resourceslices 1, namespacemaps 1, renews 1")
	g.Eventually(cleanupAnnotation(t, p)).Should(plan)

	g.Expect(fixture.Annotate(ctx, env.Client, p.ForeignCluster, map[string]*string{
		liqojanitor.CleanupAnnotation: ptr.To(liqojanitor.GracePlan{Left: 59 * time.Second, Plan: "would release nothing"}.String())})).To(Succeed())
	g.Eventually(cleanupAnnotation(t, p)).Should(plan, "a changed plan is rewritten")
	g.Expect(fixture.Annotate(ctx, env.Client, p.ForeignCluster, map[string]*string{liqojanitor.CleanupAnnotation: nil})).To(Succeed())
	g.Eventually(cleanupAnnotation(t, p)).Should(plan, "a removed plan is rewritten")
}

// TestOneRecordOfACleanupAcrossFailovers (janitor rule 8): the summary is derived from the record on the
// ForeignCluster, not from one process's memory. A janitor stops with a pod blocked by a foreign
// finalizer; that pod goes; the next janitor finishes the record — it counts on from the last one rather
// than writing "nothing to release" — and says CleanupDone once; a third janitor writes nothing and says
// nothing more.
func TestOneRecordOfACleanupAcrossFailovers(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	p := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 3}).Providers[0]
	held := p.Pods[0]
	g.Expect(env.Client.Patch(ctx, held, client.RawPatch(types.JSONPatchType,
		fmt.Appendf(nil, `[{"op":"add","path":"/metadata/finalizers","value":[%q]}]`, fixture.ForeignFinalizer)))).To(Succeed())
	kill(t, p)
	stop := startJanitor(t, janitor.Options{})
	g.Expect(fixture.Mark(ctx, env.Client, p)).To(Succeed())
	g.Eventually(cleanupAnnotation(t, p)).WithTimeout(30 * time.Second).
		Should(Equal("pods 2/3, resourceslices 1/1, namespacemaps 1/1, renews 1/1, blocked 1"))
	stop()

	g.Expect(env.Client.Patch(ctx, held, client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`)))).To(Succeed())
	g.Eventually(gone(t, held)).Should(BeTrue())
	doneEvents := func() int {
		n := 0
		for _, r := range eventReasons(t, "ForeignCluster", p.ForeignCluster.Name) {
			if r == "CleanupDone" {
				n++
			}
		}
		return n
	}
	g.Expect(doneEvents()).To(BeZero())
	stop = startJanitor(t, janitor.Options{})
	g.Eventually(cleanupAnnotation(t, p)).WithTimeout(30*time.Second).
		Should(Equal("pods 3/3, resourceslices 1/1, namespacemaps 1/1, renews 1/1"), "the new leader counts on from the record")
	g.Eventually(doneEvents).Should(Equal(1))
	stop()

	finished := get(t, p.ForeignCluster).ResourceVersion
	seen := waits(janitor.WaitGracePeriod)()
	passes := counter("controller_runtime_reconcile_total", map[string]string{"controller": liqojanitor.Name, "result": "success"})
	startJanitor(t, janitor.Options{})
	g.Eventually(func() float64 {
		return counter("controller_runtime_reconcile_total", map[string]string{"controller": liqojanitor.Name, "result": "success"})
	}).WithTimeout(30*time.Second).Should(BeNumerically(">", passes), "the third janitor made a pass")
	g.Expect(waits(janitor.WaitGracePeriod)()).To(Equal(seen))
	g.Expect(get(t, p.ForeignCluster).ResourceVersion).To(Equal(finished), "a finished record is not rewritten")
	g.Consistently(doneEvents).WithTimeout(2*time.Second).Should(Equal(1), "CleanupDone once per clean-up")
}
