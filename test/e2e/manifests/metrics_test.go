package manifests_test

import (
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
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
			g.Expect(e.BearerTokenFile).To(BeEmpty(), "never Prometheus' own token") //nolint:staticcheck // the deprecated field must stay unset
			g.Expect(e.Authorization).NotTo(BeNil())
			g.Expect(e.Authorization.Type).To(Equal("Bearer"))
			g.Expect(e.Authorization.Credentials.Name).To(Equal("liqo-janitor-metrics-token"))
			g.Expect(e.Authorization.Credentials.Key).To(Equal("token"))
			token := one[*corev1.Secret](t, b, matrixNS, "liqo-janitor-metrics-token")
			g.Expect(token.Type).To(Equal(corev1.SecretTypeServiceAccountToken))
			g.Expect(token.Annotations).To(HaveKeyWithValue(corev1.ServiceAccountNameKey, "liqo-janitor-metrics-scraper"))
			g.Expect(token.Data).To(BeEmpty(), "Kubernetes fills the token in; the chart holds none")
			one[*corev1.ServiceAccount](t, b, matrixNS, "liqo-janitor-metrics-scraper")
			binding := one[*rbacv1.ClusterRoleBinding](t, b, "", "liqo-janitor-metrics-scraper")
			g.Expect(binding.RoleRef.Name).To(Equal("liqo-janitor:metrics-reader"), "the scraper may get /metrics and nothing else")
			g.Expect(binding.Subjects).To(Equal([]rbacv1.Subject{{Kind: "ServiceAccount", Name: "liqo-janitor-metrics-scraper", Namespace: matrixNS}}))
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
	b, _ := render(t, matrixNS, map[string]any{"serviceMonitor": map[string]any{"enabled": true, "tokenSecret": "my-scraper-token"}})
	e := one[*monitoringv1.ServiceMonitor](t, b, matrixNS, appName).Spec.Endpoints[0]
	g.Expect(e.Authorization.Credentials.Name).To(Equal("my-scraper-token"), "the operator's own Secret")
	g.Expect(objectsNamed(b, "liqo-janitor-metrics-token", "liqo-janitor-metrics-scraper")).To(BeEmpty(), "no scraper identity of the chart's")

	b, _ = render(t, matrixNS, map[string]any{"serviceMonitor": map[string]any{"enabled": true}, "metrics": map[string]any{"secure": false}})
	g.Expect(one[*appsv1.Deployment](t, b, matrixNS, appName).Spec.Template.Spec.Containers[0].Args).To(ContainElement("--metrics-secure=false"))
	e = one[*monitoringv1.ServiceMonitor](t, b, matrixNS, appName).Spec.Endpoints[0]
	g.Expect(e.Scheme).To(BeNil())
	g.Expect(e.TLSConfig).To(BeNil())
	g.Expect(e.Authorization).To(BeNil())
	g.Expect(objectsNamed(b, "liqo-janitor-metrics-token", "liqo-janitor-metrics-scraper")).To(BeEmpty(), "no token for plain HTTP")
}

// objectsNamed lists the kind and name of every object of b with one of names.
func objectsNamed(b built, names ...string) []string {
	var out []string
	for _, o := range b.raw {
		if slices.Contains(names, o.GetName()) {
			out = append(out, o.GetKind()+" "+o.GetName())
		}
	}
	return out
}
