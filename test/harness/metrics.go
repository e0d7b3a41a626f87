package harness

import (
	dto "github.com/prometheus/client_model/go"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metric sums the counters or gauges called name in controller-runtime's registry (where the janitor and
// the gate register theirs) whose labels match every given label; it returns -1 if the registry cannot be
// read. The janitor and the gate must run in this process (StartJanitor, StartGate).
func Metric(name string, labels map[string]string) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return -1
	}
	return sumSamples(families, name, labels)
}

// sumSamples sums the counter and gauge samples called name whose labels match every given label.
func sumSamples(families []*dto.MetricFamily, name string, labels map[string]string) float64 {
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	samples:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					continue samples
				}
			}
			if m.GetCounter() != nil {
				total += m.GetCounter().GetValue()
			} else if m.GetGauge() != nil {
				total += m.GetGauge().GetValue()
			}
		}
	}
	return total
}
