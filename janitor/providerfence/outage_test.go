package providerfence_test

import (
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

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
	g.Consistently(func() float64 { return fencedGauge(t, w.ID) }).WithTimeout(3*fenceAfter).WithPolling(time.Second).
		Should(BeNumerically("<", 1), "the agent fences nothing while its API server is away (its own gauge: the API server cannot be read)")
	resumedAt := time.Now()
	g.Expect(resume()).To(Succeed())
	// How soon a resumed API server answers again is its own business (on a loaded machine, seconds): the
	// agent's cadence is counted from the moment it answers this test. By then the agent's next round reads
	// within a poll (a read of a round begun earlier gives up after a poll), grants the grace, and fences
	// within a poll after it.
	g.Eventually(func() error { return c.Get(t.Context(), client.ObjectKeyFromObject(w.Tenant), &authv1beta1.Tenant{}) }).
		WithTimeout(time.Minute).Should(Succeed(), "the API server answers again")
	answersAt := time.Now()

	f := awaitFence(t, c, w, time.Minute)
	grace := 2 * renewEvery
	g.Expect(f.StartedAt.Sub(resumedAt)).To(BeNumerically(">=", grace),
		"nothing while the API server was away, and the reconnect grace after")
	g.Expect(f.StartedAt.Sub(answersAt)).To(BeNumerically("<=", poll+grace+poll+slack), "then within a poll")
	g.Expect(f.LastObservedAt.Before(resumedAt.Add(-3*fenceAfter+slack))).To(BeTrue(), "judged by the last renewal before the outage")
}

// fencedGauge is the agent's liqo_janitor_provider_fenced for consumer, as this process's metrics registry
// has it (-1: no series).
func fencedGauge(t *testing.T, consumer string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "liqo_janitor_provider_fenced" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "consumer" && l.GetValue() == consumer {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}
