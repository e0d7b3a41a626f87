package providerfence_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// TestNoFenceWhileItsAPIServerIsAwayAndAGraceAfter: the provider's API server stops answering (SIGSTOP)
// right after the consumer's last renewal, for 3 × fenceAfter. The agent fences nothing while it is gone,
// and once it answers again, with the deadline long past, it grants the consumer the reconnect grace of
// 2 renew intervals before it fences — and fences within a poll after that (fence rule 7). A control
// plane of its own: the pause stops every client of it.
func TestNoFenceWhileItsAPIServerIsAwayAndAGraceAfter(t *testing.T) {
	if testing.Short() {
		t.Skip(harness.NeedsAPIServer)
	}
	g := NewWithT(t)
	e, err := harness.Start(harness.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(e.Stop()).To(Succeed()) })
	g.Expect(e.InstallLocalClusterID(t.Context(), liqoNamespace, providerID)).To(Succeed())
	c := e.Client
	w := layOut(t, c, fenceAfter.String())
	startFence(t, e, nil)
	r := startRenewing(t, c, w, renewEvery, 0)
	g.Eventually(func() *time.Time { return state(t, c, w).ArmedAt }).ShouldNot(BeNil())
	r.Stop()

	resume, err := e.PauseAPIServer()
	g.Expect(err).NotTo(HaveOccurred())
	time.Sleep(3 * fenceAfter) // the outage's length: the scenario, not a wait for a condition
	resumedAt := time.Now()
	g.Expect(resume()).To(Succeed())

	f := awaitFence(t, c, w, time.Minute)
	grace := 2 * renewEvery
	g.Expect(f.StartedAt.Sub(resumedAt)).To(BeNumerically(">=", grace),
		"nothing while the API server was away, and the reconnect grace after")
	g.Expect(f.StartedAt.Sub(resumedAt)).To(BeNumerically("<=", grace+poll+slack), "then within a poll")
	g.Expect(f.LastObservedAt.Before(resumedAt.Add(-3*fenceAfter+slack))).To(BeTrue(), "judged by the last renewal before the outage")
}
