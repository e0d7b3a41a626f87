package providerfence

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	armedGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "liqo_janitor_provider_fence_armed",
		Help: "1 while the provider fence is armed for the consumer (an observed renewal, safe settings), 0 otherwise.",
	}, []string{"consumer"})
	fencedGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "liqo_janitor_provider_fenced",
		Help: "1 while the consumer is fenced by the provider fence (latched until kubectl liqo-janitor unfence), 0 otherwise.",
	}, []string{"consumer"})
	observedGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "liqo_janitor_provider_fence_observed_timestamp_seconds",
		Help: "When the provider fence last observed the consumer's renewal (its clock, Unix seconds).",
	}, []string{"consumer"})
	deadlineGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "liqo_janitor_provider_fence_deadline_timestamp_seconds",
		Help: "When the provider fence fences the consumer unless it observes a renewal first (Unix seconds; absent when not armed).",
	}, []string{"consumer"})
	fencesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "liqo_janitor_provider_fences_total",
		Help: "Fences the provider fence carried out, by consumer.",
	}, []string{"consumer"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(armedGauge, fencedGauge, observedGauge, deadlineGauge, fencesTotal)
}

// consumers maps a Tenant UID to the consumer label its gauges carry, so that a Tenant gone or no longer
// opted in loses them.
var (
	consumersMu sync.Mutex
	consumers   = map[string]string{}
)

func setMetrics(uid, consumer string, v verdict) {
	consumersMu.Lock()
	defer consumersMu.Unlock()
	consumers[uid] = consumer
	armedGauge.WithLabelValues(consumer).Set(boolValue(v.state.ArmedAt != nil && v.state.Fence == nil))
	fencedGauge.WithLabelValues(consumer).Set(boolValue(v.state.Fence != nil))
	if v.state.ObservedAt != nil {
		observedGauge.WithLabelValues(consumer).Set(float64(v.state.ObservedAt.UnixNano()) / 1e9)
	}
	if v.deadline.IsZero() {
		deadlineGauge.DeleteLabelValues(consumer)
	} else {
		deadlineGauge.WithLabelValues(consumer).Set(float64(v.deadline.UnixNano()) / 1e9)
	}
}

func forgetMetrics(uid string) {
	consumersMu.Lock()
	defer consumersMu.Unlock()
	consumer, ok := consumers[uid]
	if !ok {
		return
	}
	delete(consumers, uid)
	for _, g := range []*prometheus.GaugeVec{armedGauge, fencedGauge, observedGauge, deadlineGauge} {
		g.DeleteLabelValues(consumer)
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
