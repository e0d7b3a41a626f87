package fencerenew

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

var (
	ackAge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "liqo_janitor_fence_last_ack_age_seconds",
		Help: "Seconds since the provider's fence agent last acknowledged a renewal of this consumer (absent before the first).",
	}, []string{"provider"})
	fenceAfter = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "liqo_janitor_fence_after_seconds",
		Help: "The fenceAfter of the provider's published fence contract: it stops this consumer's pods that long after the last renewal it observed.",
	}, []string{"provider"})
	deadline = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "liqo_janitor_fence_deadline_timestamp_seconds",
		Help: "When the provider has surely fenced this consumer (the last renewal that may have landed plus the contract's SafeAfter; Unix seconds).",
	}, []string{"provider"})
	renewalsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "liqo_janitor_fence_renewals_total",
		Help: "Renewals of providers' fence Leases by outcome: acknowledged, unacknowledged, unknown (sent, no answer), failed (not sent), stopped (a mark).",
	}, []string{"provider", "outcome"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(ackAge, fenceAfter, deadline, renewalsTotal)
}

var metricsMu sync.Mutex

func setMetrics(id string, rec liqojanitor.FenceRenewal, now time.Time) {
	metricsMu.Lock()
	defer metricsMu.Unlock()
	switch {
	case rec.StoppedForMark != "":
		ackAge.DeleteLabelValues(id) // renewals stopped on purpose: no alert that the provider may fence us
	case rec.LastAck != nil:
		ackAge.WithLabelValues(id).Set(now.Sub(*rec.LastAck).Seconds())
	}
	if d, c, ok := rec.Deadline(); ok {
		fenceAfter.WithLabelValues(id).Set(time.Duration(c.FenceAfter).Seconds())
		deadline.WithLabelValues(id).Set(float64(d.UnixNano()) / 1e9)
	}
}

func forgetMetrics(id string) {
	metricsMu.Lock()
	defer metricsMu.Unlock()
	for _, g := range []*prometheus.GaugeVec{ackAge, fenceAfter, deadline} {
		g.DeleteLabelValues(id)
	}
}
