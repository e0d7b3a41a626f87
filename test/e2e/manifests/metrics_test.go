package manifests_test

import (
	"testing"

	. "github.com/onsi/gomega"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// TestChartServesMetricsBehindAuthentication (issue 19 item 3): by default the binary serves /metrics over
// HTTPS to authorized tokens only, the ServiceMonitor scrapes with Prometheus' own token and trusts the
// install's CA (cert-manager's, or the binary's own bundle), the certificate covers the metrics Service,
// and a ClusterRole says who may scrape; plain HTTP only as an explicit value.
func TestChartServesMetricsBehindAuthentication(t *testing.T) {
	for name, tc := range map[string]struct {
		certManager bool
		caSecret    string
	}{
		"cert-manager": {certManager: true, caSecret: "liqo-janitor-serving-cert"},
		"self-managed": {certManager: false, caSecret: "liqo-janitor-webhook-ca"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			b, _ := render(t, matrixNS, map[string]any{"serviceMonitor": map[string]any{"enabled": true},
				"certManager": map[string]any{"enabled": tc.certManager}})
			args := one[*appsv1.Deployment](t, b, matrixNS, appName).Spec.Template.Spec.Containers[0].Args
			g.Expect(args).To(ContainElement("--metrics-secure=true"))
			if !tc.certManager {
				g.Expect(args).To(ContainElement("--cert-extra-dns-names=liqo-janitor-metrics." + matrixNS + ".svc"))
			}
			e := one[*monitoringv1.ServiceMonitor](t, b, matrixNS, appName).Spec.Endpoints[0]
			g.Expect(e.Scheme).To(HaveValue(BeEquivalentTo("https")))
			g.Expect(e.BearerTokenFile).To(Equal("/var/run/secrets/kubernetes.io/serviceaccount/token")) //nolint:staticcheck // what the CRD of every operator version reads
			g.Expect(e.TLSConfig).NotTo(BeNil())
			g.Expect(e.TLSConfig.ServerName).To(HaveValue(Equal("liqo-janitor-metrics." + matrixNS + ".svc")))
			g.Expect(e.TLSConfig.CA.Secret).NotTo(BeNil())
			g.Expect(e.TLSConfig.CA.Secret.Name).To(Equal(tc.caSecret))
			g.Expect(e.TLSConfig.CA.Secret.Key).To(Equal("ca.crt"))
			reader := one[*rbacv1.ClusterRole](t, b, "", "liqo-janitor:metrics-reader")
			g.Expect(reader.Rules).To(Equal([]rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}))
			role := one[*rbacv1.ClusterRole](t, b, "", appName)
			g.Expect(role.Rules).To(ContainElement(rbacv1.PolicyRule{APIGroups: []string{"authentication.k8s.io"},
				Resources: []string{"tokenreviews"}, Verbs: []string{"create"}}))
			dryRunApply(t, b)
		})
	}
	g := NewWithT(t)
	b, _ := render(t, matrixNS, map[string]any{"serviceMonitor": map[string]any{"enabled": true}, "metrics": map[string]any{"secure": false}})
	g.Expect(one[*appsv1.Deployment](t, b, matrixNS, appName).Spec.Template.Spec.Containers[0].Args).To(ContainElement("--metrics-secure=false"))
	e := one[*monitoringv1.ServiceMonitor](t, b, matrixNS, appName).Spec.Endpoints[0]
	g.Expect(e.Scheme).To(BeNil())
	g.Expect(e.TLSConfig).To(BeNil())
}
