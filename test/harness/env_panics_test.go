package harness

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestCheckPanics(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		reconcilePanics, webhookPanics float64
		wantErr                        bool
	}{
		"no panics pass":                   {},
		"a reconciler panic fails the run": {reconcilePanics: 1, wantErr: true},
		"a webhook panic fails the run":    {webhookPanics: 2, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewRegistry()
			reconcile := prometheus.NewCounterVec(prometheus.CounterOpts{Name: panicCounters[0]}, []string{"controller"})
			hook := prometheus.NewCounterVec(prometheus.CounterOpts{Name: panicCounters[1]}, []string{"webhook"})
			reg.MustRegister(reconcile, hook)
			reconcile.WithLabelValues("a").Add(tc.reconcilePanics)
			hook.WithLabelValues("b").Add(tc.webhookPanics)
			if err := checkPanics(reg); (err != nil) != tc.wantErr {
				t.Fatalf("checkPanics() = %v, want error: %v", err, tc.wantErr)
			}
		})
	}
}
