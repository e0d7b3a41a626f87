package webhook

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// decisionsTotal counts the validating webhooks' decisions. Labels are bounded: operation is CREATE,
// UPDATE or DELETE, result allowed or denied, reason one of the reason* values (the first refusing rule, or what an
// allowed request did). Never a cluster or user name.
var decisionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "liqo_janitor_gate_decisions_total",
	Help: "Decisions of the gate's validating webhooks on ForeignClusters, by operation, result (allowed, denied) and reason.",
}, []string{"operation", "result", "reason"})

func init() {
	ctrlmetrics.Registry.MustRegister(decisionsTotal)
}

// countDecision counts one decision of the validating webhook.
func countDecision(operation string, v *verdict) {
	result := "allowed"
	if !v.Allowed() {
		result = "denied"
	}
	decisionsTotal.WithLabelValues(operation, result, v.Reason).Inc()
}
