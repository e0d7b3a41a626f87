package janitor_test

import (
	"testing"

	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// TestSetupRefusesToRunWithoutANamespace: the brake, the kept probe targets and the kept returns live in
// the janitor's own namespace (janitor rules 14, 16, 17); without one the janitor would run with all three
// quietly off, so Setup refuses, naming what it needs.
func TestSetupRefusesToRunWithoutANamespace(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0"})
	g.Expect(err).NotTo(HaveOccurred())
	err = janitor.Setup(t.Context(), mgr, janitor.Options{})
	g.Expect(err).To(MatchError(ContainSubstring("the janitor needs a namespace of its own (Options.Namespace; the binary's --namespace)")))
}
