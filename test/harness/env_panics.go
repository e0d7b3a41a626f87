package harness

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	// The webhook panic counter is registered by the webhook package; import it so it is always there.
	_ "sigs.k8s.io/controller-runtime/pkg/webhook"
)

// panicCounters are controller-runtime's counters of recovered panics in reconcilers and webhooks.
var panicCounters = []string{
	"controller_runtime_reconcile_panics_total",
	"controller_runtime_webhook_panics_total",
}

// CheckPanics returns an error if any controller-runtime reconciler or webhook in this process panicked:
// controller-runtime recovers those panics, so a test could otherwise pass over one.
func CheckPanics() error {
	return checkPanics(ctrlmetrics.Registry)
}

func checkPanics(g prometheus.Gatherer) error {
	families, err := g.Gather()
	if err != nil {
		return fmt.Errorf("reading controller-runtime metrics: %w", err)
	}
	for _, f := range families {
		for _, name := range panicCounters {
			if f.GetName() != name {
				continue
			}
			var total float64
			for _, m := range f.GetMetric() {
				total += m.GetCounter().GetValue()
			}
			if total > 0 {
				return fmt.Errorf("%s is %v: a reconciler or webhook panicked during the tests (controller-runtime recovered it)", name, total)
			}
		}
	}
	return nil
}
