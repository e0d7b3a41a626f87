package janitor_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// planEvents are the Waiting events on the ForeignCluster that carry a plan.
func planEvents(t *testing.T, p *fixture.Provider) []string {
	t.Helper()
	var notes []string
	for _, e := range events(t) {
		if e.Regarding.Kind == "ForeignCluster" && e.Regarding.Name == p.ForeignCluster.Name && e.Reason == "Waiting" &&
			strings.Contains(e.Note, "would release") {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// TestTheGracePeriodShowsThePlanAndWritesNothingElse (janitor rule 9): while a confirmed mark waits out
// the grace period, the cleanup annotation and one Waiting event say what will be released and what will
// stay blocked; nothing of either cluster is written; another pass in the window writes nothing again;
// and what the janitor then releases is what the plan said.
func TestTheGracePeriodShowsThePlanAndWritesNothingElse(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 2, PodsPerProvider: 4, ExtraResourceSlices: 1})
	dead, live := cons.Providers[0], cons.Providers[1]
	g.Expect(env.Client.Patch(ctx, dead.Pods[0], client.RawPatch(types.JSONPatchType,
		fmt.Appendf(nil, `[{"op":"add","path":"/metadata/finalizers","value":[%q]}]`, fixture.ForeignFinalizer)))).To(Succeed())
	kill(t, dead)
	liveObjects := append(live.Objects(), live.ForeignCluster)
	objects := append(dead.Objects(), liveObjects...)
	before, liveBefore := rvs(t, objects...), rvs(t, liveObjects...)
	pods, slices := len(dead.Pods), 1+len(dead.ExtraSlices)

	startJanitor(t, janitor.Options{GracePeriod: 25 * time.Second})
	g.Expect(fixture.Mark(ctx, env.Client, dead, markedAtNow()...)).To(Succeed())
	plan := fmt.Sprintf("would release pods %d, resourceslices %d, namespacemaps 1, renews 1; blocked 1", pods, slices)
	g.Eventually(cleanupAnnotation(t, dead)).WithTimeout(20 * time.Second).
		Should(And(HavePrefix(liqojanitor.GracePlanPrefix), ContainSubstring(" left: "), HaveSuffix(plan)))
	g.Eventually(func() []string { return planEvents(t, dead) }).Should( // events are sent asynchronously
		ConsistOf(And(ContainSubstring("releasing starts in"), HaveSuffix(plan))))
	g.Expect(rvs(t, objects...)).To(Equal(before), "nothing of either cluster is written in the grace period")

	// another pass in the window: the plan is the same, so neither the annotation nor the event again
	inGrace := map[string]string{"reason": string(janitor.WaitGracePeriod)}
	seen := counter("liqo_janitor_waits_total", inGrace)
	g.Expect(fixture.Annotate(ctx, env.Client, dead.ForeignCluster, map[string]*string{"example.com/poke": ptr.To("1")})).To(Succeed())
	poked := get(t, dead.ForeignCluster).ResourceVersion
	g.Eventually(func() float64 { return counter("liqo_janitor_waits_total", inGrace) }).Should(BeNumerically(">", seen))
	g.Expect(get(t, dead.ForeignCluster).ResourceVersion).To(Equal(poked), "the plan did not change: no write")
	g.Expect(planEvents(t, dead)).To(HaveLen(1))
	g.Expect(rvs(t, objects...)).To(Equal(before))

	// the grace period ends: released is what was planned (the finalizer-held pod goes once its owner lets it)
	g.Eventually(cleanupAnnotation(t, dead)).WithTimeout(60 * time.Second).Should(Equal(fmt.Sprintf(
		"pods %d/%d, resourceslices %d/%d, namespacemaps 1/1, renews 1/1, blocked 1", pods-1, pods, slices, slices)))
	g.Expect(rvs(t, liveObjects...)).To(Equal(liveBefore), "nothing of the live provider, ever")
}

// TestPlanClusterIsWhatTheJanitorThenReleases: the plan computed live (no informers, a dry-run client),
// before the cluster is even marked, writes nothing and names what the janitor then releases.
func TestPlanClusterIsWhatTheJanitorThenReleases(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 2, PodsPerProvider: 3, ExtraResourceSlices: 2})
	dead, live := cons.Providers[0], cons.Providers[1]
	g.Expect(env.Client.Patch(ctx, dead.ResourceSlice, client.RawPatch(types.JSONPatchType,
		fmt.Appendf(nil, `[{"op":"add","path":"/metadata/finalizers/-","value":%q}]`, fixture.ForeignFinalizer)))).To(Succeed())
	kill(t, dead)
	objects := append(append(dead.Objects(), live.Objects()...), live.ForeignCluster, dead.ForeignCluster)
	before := rvs(t, objects...)
	mc, err := metadata.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())

	ns := env.Namespace(t) // the janitor's, with no records in it
	plan, err := janitor.PlanCluster(ctx, env.Client, mc, dead.ForeignCluster.Name, janitor.Options{Namespace: ns})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rvs(t, objects...)).To(Equal(before), "planning writes nothing")
	g.Expect(plan.Wait).To(Equal(janitor.WaitNotMarked))
	pods, slices := len(dead.Pods), 1+len(dead.ExtraSlices)
	g.Expect(plan.Kinds).To(Equal([]janitor.PlannedKind{
		{Kind: "Pod", Release: pods}, {Kind: "ResourceSlice", Release: slices, Blocked: 1},
		{Kind: "NamespaceMap", Release: 1}, {Kind: "Renew", Release: 1},
	}))
	g.Expect(plan.Summary).To(Equal(fmt.Sprintf("would release pods %d, resourceslices %d, namespacemaps 1, renews 1; blocked 1", pods, slices)))

	_, err = janitor.PlanCluster(ctx, env.Client, mc, "no-such-cluster", janitor.Options{Namespace: ns})
	g.Expect(err).To(MatchError(ContainSubstring("kubectl get foreignclusters")), "an error that says what to do")

	startJanitor(t, janitor.Options{})
	g.Expect(fixture.Mark(ctx, env.Client, dead)).To(Succeed())
	g.Eventually(cleanupAnnotation(t, dead)).WithTimeout(60 * time.Second).Should(Equal(fmt.Sprintf(
		"pods %d/%d, resourceslices %d/%d, namespacemaps 1/1, renews 1/1, blocked 1", pods, pods, slices-1, slices)))
	liveAfter := rvs(t, append(live.Objects(), live.ForeignCluster)...)
	for k, v := range liveAfter {
		g.Expect(before).To(HaveKeyWithValue(k, v), "nothing of the live provider is written")
	}
}

// TestThePlanIsWrittenOnlyOntoTheForeignClusterItWasMadeFor: a plan made from a ForeignCluster that has
// changed since (here: its mark removed) is not written onto it — the patch carries the version it was
// made from — and that is no error; made from the current version, it is written.
func TestThePlanIsWrittenOnlyOntoTheForeignClusterItWasMadeFor(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	p := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 1}).Providers[0]
	kill(t, p)
	g.Expect(fixture.Mark(ctx, env.Client, p, markedAtNow()...)).To(Succeed())
	planned := get(t, p.ForeignCluster) // what a pass read
	g.Expect(fixture.Annotate(ctx, env.Client, p.ForeignCluster, map[string]*string{liqojanitor.MarkAnnotation: nil})).To(Succeed())
	unmarked := get(t, p.ForeignCluster)

	g.Expect(janitor.ShowPlan(ctx, env.Client, planned)).To(Succeed(), "a stale plan is dropped, not an error")
	after := get(t, p.ForeignCluster)
	g.Expect(after.ResourceVersion).To(Equal(unmarked.ResourceVersion), "nothing written onto the unmarked ForeignCluster")
	g.Expect(after.Annotations).NotTo(HaveKey(liqojanitor.CleanupAnnotation))

	g.Expect(janitor.ShowPlan(ctx, env.Client, after)).To(Succeed())
	g.Expect(get(t, p.ForeignCluster).Annotations).To(HaveKeyWithValue(liqojanitor.CleanupAnnotation,
		HavePrefix(liqojanitor.GracePlanPrefix)), "made from the current version, the plan is shown")
}
