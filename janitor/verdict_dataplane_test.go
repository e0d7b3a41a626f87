package janitor_test

import (
	"fmt"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// TestATunnelUpKeepsAMarkedProviderAlive (janitor rule 1): a provider whose API server is down but whose
// data plane Liqo still sees Established (since before the mark) runs its pods: nothing of it is released
// until the tunnel goes down too.
func TestATunnelUpKeepsAMarkedProviderAlive(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	p := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 5}).Providers[0]
	kill(t, p)
	g.Expect(fixture.SetTunnelStatus(ctx, env.Client, p.ForeignCluster, liqov1beta1.ConditionStatusEstablished, 10*time.Minute)).To(Succeed())
	before := rvs(t, p.Objects()...)
	tunnelUp := map[string]string{"reason": string(janitor.WaitTunnelUp)}
	seen := counter("liqo_janitor_waits_total", tunnelUp)

	startJanitor(t, janitor.Options{})
	g.Expect(fixture.Mark(ctx, env.Client, p)).To(Succeed())
	g.Eventually(func() float64 { return counter("liqo_janitor_waits_total", tunnelUp) }).Should(BeNumerically(">", seen),
		"a pass saw the tunnel up")
	g.Eventually(func() []string { return eventMessages(t, "ForeignCluster", p.ForeignCluster.Name, "Waiting") }).
		Should(ContainElement(ContainSubstring("data plane to it is up")))
	g.Expect(rvs(t, p.Objects()...)).To(Equal(before), "nothing of a provider whose tunnel is up is written")

	g.Expect(fixture.SetTunnelStatus(ctx, env.Client, p.ForeignCluster, liqov1beta1.ConditionStatusError, 0)).To(Succeed())
	g.Eventually(cleanupAnnotation(t, p)).WithTimeout(30*time.Second).Should(HavePrefix("pods 5/5"), "released once the tunnel is down")
}

// TestATunnelComingBackAfterTheMarkIsAReturn (janitor rule 10): Liqo's data plane turning Established after
// the mark is a return, as the API server's is: releases stop for that mark, with the same record and event.
func TestATunnelComingBackAfterTheMarkIsAReturn(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	p := markedDead(t, fixture.Spec{PodsPerProvider: 300}, janitor.Options{Workers: 1, BatchSize: 5})
	g.Eventually(func() int { return podsLeft(t, p) }).WithPolling(10*time.Millisecond).WithTimeout(30*time.Second).
		Should(BeNumerically("<=", 290), "releasing has begun")

	g.Expect(fixture.SetTunnelStatus(ctx, env.Client, p.ForeignCluster, liqov1beta1.ConditionStatusEstablished, 0)).To(Succeed())
	g.Eventually(cleanupAnnotation(t, p)).Should(HavePrefix(liqojanitor.ReturnedPrefix))
	g.Expect(cleanupAnnotation(t, p)()).To(ContainSubstring("NetworkConnectionStatus"), "the record says what showed the return")
	g.Eventually(func() []string { return eventReasons(t, "ForeignCluster", p.ForeignCluster.Name) }).Should(ContainElement("ProviderReturned"))
	left := podsLeft(t, p)
	g.Expect(left).To(BeNumerically(">", 0), "it stopped before the end")

	// The tunnel goes down again: the return is kept, and nothing more is released for this mark.
	returned := map[string]string{"reason": string(janitor.WaitReturned)}
	seen := counter("liqo_janitor_waits_total", returned)
	g.Expect(fixture.SetTunnelStatus(ctx, env.Client, p.ForeignCluster, liqov1beta1.ConditionStatusError, 0)).To(Succeed())
	g.Eventually(func() float64 { return counter("liqo_janitor_waits_total", returned) }).Should(BeNumerically(">", seen))
	g.Expect(podsLeft(t, p)).To(Equal(left), "nothing more is written after a return")
}

// stormy is a guard that sees a storm whenever one provider is unreachable: the API server these tests
// share holds other tests' providers too, so the tests do not depend on how many there are (the counting
// itself is the root package's TestStorm).
var stormy = liqojanitor.StormGuard{MinUnreachable: 1, MaxSharePercent: 0}

// TestTheJanitorHoldsAMarkMadeDuringAStorm (janitor rule 18): a mark the janitor has not begun with waits
// while the storm lasts — no first-sight record, nothing released — unless it carries the acknowledgement;
// a mark it had begun with before the storm keeps its course.
func TestTheJanitorHoldsAMarkMadeDuringAStorm(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 3, PodsPerProvider: 5})
	held, acknowledged, begun := cons.Providers[0], cons.Providers[1], cons.Providers[2]
	for _, p := range cons.Providers {
		kill(t, p)
	}
	before := rvs(t, held.Objects()...)
	storm := map[string]string{"reason": string(janitor.WaitStorm)}
	seen := counter("liqo_janitor_waits_total", storm)

	startJanitor(t, janitor.Options{Storm: stormy})
	g.Expect(fixture.Mark(ctx, env.Client, held)).To(Succeed())
	g.Expect(fixture.Mark(ctx, env.Client, acknowledged, acknowledgement(3)...)).To(Succeed())
	// A janitor that began with this mark before the storm recorded its first sight of it.
	g.Expect(fixture.Mark(ctx, env.Client, begun, liqojanitor.FirstSeenAnnotation, liqojanitor.RecordTime(time.Now().Add(-time.Minute)))).To(Succeed())

	g.Eventually(cleanupAnnotation(t, acknowledged)).WithTimeout(30*time.Second).Should(HavePrefix("pods 5/5"), "an acknowledged mark proceeds")
	g.Eventually(cleanupAnnotation(t, begun)).WithTimeout(30*time.Second).Should(HavePrefix("pods 5/5"), "a mark begun before the storm keeps its course")
	g.Eventually(func() float64 { return counter("liqo_janitor_waits_total", storm) }).Should(BeNumerically(">", seen))
	g.Eventually(func() []string { return eventMessages(t, "ForeignCluster", held.ForeignCluster.Name, "Waiting") }).
		Should(ContainElement(ContainSubstring("during a storm")))
	g.Expect(rvs(t, held.Objects()...)).To(Equal(before), "nothing of a held mark is released")
	g.Expect(get(t, held.ForeignCluster).Annotations).NotTo(HaveKey(liqojanitor.FirstSeenAnnotation),
		"the janitor does not begin with a held mark: its grace period starts after the storm")
	g.Eventually(func() float64 { return harness.Metric("liqo_janitor_storm", nil) }).Should(Equal(1.0), "the storm is exported")

	// An acknowledgement written past the gate (no stamp of it) does not count: the mark stays held.
	seen = counter("liqo_janitor_waits_total", storm)
	g.Expect(fixture.Annotate(ctx, env.Client, held.ForeignCluster,
		map[string]*string{liqojanitor.AcknowledgeUnreachableAnnotation: ptr.To("3")})).To(Succeed())
	g.Eventually(func() float64 { return counter("liqo_janitor_waits_total", storm) }).Should(BeNumerically(">", seen))
	g.Expect(rvs(t, held.Objects()...)).To(Equal(before), "an unstamped acknowledgement releases nothing")

	// The gate's stamp of that count (the marking request of a holder of the verb): the held mark proceeds.
	ack := acknowledgement(3)
	g.Expect(fixture.Annotate(ctx, env.Client, held.ForeignCluster, map[string]*string{ack[2]: ptr.To(ack[3])})).To(Succeed())
	g.Eventually(cleanupAnnotation(t, held)).WithTimeout(30 * time.Second).Should(HavePrefix("pods 5/5"))
}

// acknowledgement is what the gate leaves on a mark that acknowledges a storm of n unreachable providers
// (gate rule 21): the typed count and its stamp.
func acknowledgement(n int) []string {
	stamp := liqojanitor.Acknowledgement{At: time.Now(), By: "alice", Count: n}
	return []string{liqojanitor.AcknowledgeUnreachableAnnotation, fmt.Sprint(n), liqojanitor.AcknowledgedByAnnotation, stamp.String()}
}

// TestAMarkHeldByAStormResumesWhenTheStormEnds (janitor rule 20): four providers, three unreachable, a mark
// the guard holds; when two of them answer again the storm ends, and that alone — no write to the held
// ForeignCluster — makes the janitor assess it again: its grace period starts then, and the clean-up
// follows one grace period later.
func TestAMarkHeldByAStormResumesWhenTheStormEnds(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 4, PodsPerProvider: 3})
	held, back1, back2 := cons.Providers[0], cons.Providers[1], cons.Providers[2]
	for _, p := range []*fixture.Provider{held, back1, back2} {
		kill(t, p)
	}
	g.Expect(fixture.Revive(ctx, env.Client, cons.Providers[3])).To(Succeed())
	// Three unreachable at once are a storm, whatever else the shared API server holds.
	startJanitor(t, janitor.Options{Storm: liqojanitor.StormGuard{MinUnreachable: 3}, GracePeriod: 2 * time.Second})
	g.Eventually(func() float64 { return harness.Metric("liqo_janitor_storm", nil) }).Should(Equal(1.0))
	g.Expect(fixture.Mark(ctx, env.Client, held)).To(Succeed())
	g.Eventually(func() []string { return eventMessages(t, "ForeignCluster", held.ForeignCluster.Name, "Waiting") }).
		Should(ContainElement(ContainSubstring("during a storm")))
	g.Expect(get(t, held.ForeignCluster).Annotations).NotTo(HaveKey(liqojanitor.FirstSeenAnnotation))

	ended := time.Now().Truncate(time.Second)
	g.Expect(fixture.Revive(ctx, env.Client, back1)).To(Succeed())
	g.Expect(fixture.Revive(ctx, env.Client, back2)).To(Succeed())
	g.Eventually(func() float64 { return harness.Metric("liqo_janitor_storm", nil) }).Should(Equal(0.0))
	// The bounded requeue of a held mark is a minute: well past this wait, so only the storm's end wakes it.
	g.Eventually(cleanupAnnotation(t, held)).WithTimeout(30*time.Second).Should(HavePrefix("pods 3/3"), "the held mark resumes")
	firstSeen, err := liqojanitor.MarkTimeRecord(get(t, held.ForeignCluster).Annotations, liqojanitor.FirstSeenAnnotation)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(firstSeen).NotTo(BeTemporally("<", ended), "its grace period starts when the storm ended, not at the mark")
}
