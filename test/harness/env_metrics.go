package harness

import (
	"bytes"
	"context"
	"fmt"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
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

// APIServerMetrics reads and parses the API server's own /metrics, by family name.
func (e *Env) APIServerMetrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return nil, err
	}
	data, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("parsing the API server's metrics: %w", err)
	}
	return families, nil
}

// APIServerMetric sums the counters or gauges called name in the API server's own /metrics whose labels
// match every given label (each given label must exist on the series: a misspelt one matches nothing).
func (e *Env) APIServerMetric(ctx context.Context, name string, labels map[string]string) (float64, error) {
	families, err := e.APIServerMetrics(ctx)
	if err != nil {
		return 0, err
	}
	f, ok := families[name]
	if !ok {
		return 0, nil // no series yet: nothing counted
	}
	for _, m := range f.GetMetric() {
		have := map[string]bool{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = true
		}
		for l := range labels {
			if !have[l] {
				return 0, fmt.Errorf("metric %s has no label %s", name, l)
			}
		}
	}
	return sumSamples([]*dto.MetricFamily{f}, name, labels), nil
}
