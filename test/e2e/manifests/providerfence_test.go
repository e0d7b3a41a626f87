package manifests_test

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/liqo-janitor/liqo-janitor/manifests"
)

// The provider fence's objects (providerFence.enabled): its Deployment, ServiceAccount, roles and
// bindings are all named so, its metrics Service with a suffix.
const (
	fenceName           = appName + "-provider-fence"
	fenceMetricsService = fenceName + "-metrics"
	fencePackage        = "janitor/providerfence"
)

var (
	withFence    = map[string]any{"providerFence": map[string]any{"enabled": true}}
	providerOnly = map[string]any{"consumer": map[string]any{"enabled": false}, "providerFence": map[string]any{"enabled": true}}
)

// rbacMarker is a +kubebuilder:rbac marker line of the code.
var rbacMarker = regexp.MustCompile(`^//\s*\+kubebuilder:rbac:(.*)$`)

// markerGrants reads the +kubebuilder:rbac markers of the Go files (tests aside) of the package in dir
// (relative to the repository root) as grants: cluster-wide, or in the marker's namespace (the chart puts
// the Role of a marker's namespace=liqo in liqo.namespace, liqoNS here).
func markerGrants(t *testing.T, dir string) map[grant][]string {
	t.Helper()
	g := NewWithT(t)
	files, err := filepath.Glob(filepath.Join(repoRoot(t), dir, "*.go"))
	g.Expect(err).NotTo(HaveOccurred())
	out := map[grant][]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		g.Expect(err).NotTo(HaveOccurred())
		for line := range strings.SplitSeq(string(data), "\n") {
			m := rbacMarker.FindStringSubmatch(strings.TrimSpace(line))
			if m == nil {
				continue
			}
			fields := map[string][]string{}
			for kv := range strings.SplitSeq(m[1], ",") {
				k, v, ok := strings.Cut(kv, "=")
				g.Expect(ok).To(BeTrue(), "marker %s", line)
				for item := range strings.SplitSeq(v, ";") {
					fields[k] = append(fields[k], strings.Trim(item, `"`))
				}
			}
			g.Expect(fields).NotTo(HaveKey("resourceNames"), "this test reads no resourceNames: %s", line)
			ns := ""
			if len(fields["namespace"]) > 0 {
				ns = fields["namespace"][0]
			}
			for _, group := range fields["groups"] {
				for _, resource := range fields["resources"] {
					k := grant{ns, group, resource}
					out[k] = slices.Compact(slices.Sorted(slices.Values(append(out[k], fields["verbs"]...))))
				}
			}
		}
	}
	g.Expect(out).NotTo(BeEmpty(), "no RBAC marker in %s", dir)
	return out
}

// fenceNeeds is what the agent's ServiceAccount must get: its markers, leader election (the Lease and
// client-go's core/v1 Events, in the release namespace) and, with metrics.secure, the metrics endpoint's
// authentication.
func fenceNeeds(t *testing.T, secure bool) map[grant][]string {
	t.Helper()
	m := markerGrants(t, fencePackage)
	m[grant{installNS, "coordination.k8s.io", "leases"}] = []string{"create", "get", "list", "patch", "update", "watch"}
	m[grant{installNS, "", "events"}] = []string{"create", "patch"}
	if secure {
		m[grant{"", "authentication.k8s.io", "tokenreviews"}] = []string{"create"}
		m[grant{"", "authorization.k8s.io", "subjectaccessreviews"}] = []string{"create"}
	}
	return m
}

// TestChartDefaultsHaveNoProviderFence: off by default, the provider fence changes nothing of the
// consumer's install: every object rendered without it is rendered the same with it (the agent's are
// added beside), and the default render has none of the agent's.
func TestChartDefaultsHaveNoProviderFence(t *testing.T) {
	g := NewWithT(t)
	def, _ := render(t, installNS, nil)
	for _, u := range def.raw {
		g.Expect(u.GetName()).NotTo(HavePrefix(fenceName), "the default install has no %s", describe(u))
	}
	explicit, _ := render(t, installNS, map[string]any{"consumer": map[string]any{"enabled": true},
		"providerFence": map[string]any{"enabled": false}})
	g.Expect(explicit.raw).To(Equal(def.raw), "the defaults are consumer.enabled=true, providerFence.enabled=false")

	for name, values := range map[string]map[string]any{
		"the defaults": nil,
		"monitoring":   {"serviceMonitor": map[string]any{"enabled": true}, "prometheusRule": map[string]any{"enabled": true}},
	} {
		before, _ := render(t, installNS, values)
		with := maps.Clone(values)
		if with == nil {
			with = map[string]any{}
		}
		with["providerFence"] = map[string]any{"enabled": true}
		after, _ := render(t, installNS, with)
		byName := map[string]map[string]any{}
		for _, u := range after.raw {
			byName[describe(u)] = u.Object
		}
		for _, u := range before.raw {
			if u.GetKind() == "PrometheusRule" {
				continue // the agent's alert group is added to it: TestChartInstallsTheProviderFence
			}
			g.Expect(byName).To(HaveKeyWithValue(describe(u), u.Object), "%s: %s changes with the provider fence", name, describe(u))
		}
	}
}

// TestChartInstallsTheProviderFence: providerFence.enabled installs the agent as its own Deployment (two
// replicas, leader election, the same image, the provider-fence mode with the consumer's parts off), as its
// own ServiceAccount bound to its own roles, with a disruption budget, a metrics Service, a ServiceMonitor
// and its alert; none of the consumer's selectors picks its pods.
func TestChartInstallsTheProviderFence(t *testing.T) {
	g := NewWithT(t)
	values := map[string]any{"providerFence": map[string]any{"enabled": true},
		"liqo":           map[string]any{"namespace": "liqo-system"},
		"serviceMonitor": map[string]any{"enabled": true}, "prometheusRule": map[string]any{"enabled": true}}
	b, _ := render(t, installNS, values)
	janitor := one[*appsv1.Deployment](t, b, installNS, appName)
	d := one[*appsv1.Deployment](t, b, installNS, fenceName)
	g.Expect(d.Spec.Replicas).To(Equal(ptr.To[int32](2)))
	g.Expect(labels.SelectorFromSet(d.Spec.Selector.MatchLabels).Matches(labels.Set(d.Spec.Template.Labels))).To(BeTrue())
	pod := d.Spec.Template.Spec
	g.Expect(pod.ServiceAccountName).To(Equal(fenceName))
	g.Expect(pod.HostNetwork).To(BeFalse(), "nothing calls the agent from the control plane")
	g.Expect(pod.Containers).To(HaveLen(1))
	c := pod.Containers[0]
	g.Expect(c.Image).To(Equal(janitor.Spec.Template.Spec.Containers[0].Image), "the same image")
	g.Expect(c.Args).To(ContainElements("--enable-provider-fence", "--enable-janitor=false", "--enable-webhook=false",
		"--leader-elect=true", "--namespace="+installNS, "--liqo-namespace=liqo-system", "--fence-poll=5s", "--fence-grace-cap=30s",
		"--metrics-bind-address=:8080", "--metrics-secure=true", "--health-probe-bind-address=:8081"))
	for _, flag := range []string{"--webhook-", "--cert-", "--grace-period", "--release-identity-secrets"} {
		g.Expect(c.Args).NotTo(ContainElement(HavePrefix(flag)), "none of the consumer's flags")
	}
	g.Expect(c.SecurityContext).To(Equal(janitor.Spec.Template.Spec.Containers[0].SecurityContext))
	g.Expect(pod.SecurityContext).To(Equal(janitor.Spec.Template.Spec.SecurityContext))

	// Its own identity, bound to its own roles only.
	one[*corev1.ServiceAccount](t, b, installNS, fenceName)
	crb := one[*rbacv1.ClusterRoleBinding](t, b, "", fenceName)
	g.Expect(crb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: fenceName}))
	g.Expect(crb.Subjects).To(Equal([]rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: fenceName, Namespace: installNS}}))
	rb := one[*rbacv1.RoleBinding](t, b, "liqo-system", fenceName)
	g.Expect(rb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: fenceName}))
	for _, binding := range all[*rbacv1.ClusterRoleBinding](b) {
		if binding.RoleRef.Name == appName {
			g.Expect(boundTo(binding.Subjects, fenceName)).To(BeFalse(), "the agent is not bound to the janitor's role")
		}
	}

	// Its disruption budget and metrics Service select its pods; none of the consumer's does.
	pdb := one[*policyv1.PodDisruptionBudget](t, b, installNS, fenceName)
	g.Expect(labels.SelectorFromSet(pdb.Spec.Selector.MatchLabels).Matches(labels.Set(d.Spec.Template.Labels))).To(BeTrue())
	svc := one[*corev1.Service](t, b, installNS, fenceMetricsService)
	g.Expect(labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels))).To(BeTrue())
	g.Expect(containerPort(c, svc.Spec.Ports[0].TargetPort)).To(Equal(int32(8080)))
	for _, s := range []string{webhookService, metricsService} {
		consumer := one[*corev1.Service](t, b, installNS, s)
		g.Expect(labels.SelectorFromSet(consumer.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels))).To(BeFalse(),
			"the consumer's Service %s must not send to the agent's pods", s)
	}
	g.Expect(labels.SelectorFromSet(one[*policyv1.PodDisruptionBudget](t, b, installNS, appName).Spec.Selector.MatchLabels).
		Matches(labels.Set(d.Spec.Template.Labels))).To(BeFalse())
	g.Expect(labels.SelectorFromSet(d.Spec.Selector.MatchLabels).Matches(labels.Set(janitor.Spec.Template.Labels))).To(BeFalse())

	// Scraped through its own Service (the alert's job), with the chart's scraper token; its alert.
	sm := one[*monitoringv1.ServiceMonitor](t, b, installNS, fenceName)
	g.Expect(labels.SelectorFromSet(sm.Spec.Selector.MatchLabels).Matches(labels.Set(svc.Labels))).To(BeTrue())
	g.Expect(labels.SelectorFromSet(sm.Spec.Selector.MatchLabels).Matches(labels.Set(one[*corev1.Service](t, b, installNS, metricsService).Labels))).To(BeFalse())
	g.Expect(labels.SelectorFromSet(one[*monitoringv1.ServiceMonitor](t, b, installNS, appName).Spec.Selector.MatchLabels).Matches(labels.Set(svc.Labels))).To(BeFalse())
	g.Expect(sm.Spec.Endpoints[0].Authorization.Credentials.Name).To(Equal("liqo-janitor-metrics-token"))
	rule := one[*monitoringv1.PrometheusRule](t, b, installNS, appName)
	var alerts []string
	for _, group := range rule.Spec.Groups {
		for _, r := range group.Rules {
			alerts = append(alerts, r.Alert)
			if r.Alert == "LiqoJanitorProviderFenced" {
				g.Expect(r.Expr.String()).To(ContainSubstring(`(liqo_janitor_provider_fenced{job="` + fenceMetricsService + `"}) == 1`))
			}
		}
	}
	g.Expect(alerts).To(ContainElements("LiqoJanitorProviderFenced", "LiqoJanitorDown"))
	ensureNamespace(t, "liqo-system")
	applied, _ := render(t, matrixNS, values)
	dryRunApply(t, applied)
}

// TestProviderFenceGetsExactlyWhatItsMarkersAsk: the agent's ServiceAccount gets what janitor/providerfence's
// +kubebuilder:rbac markers ask for, leader election and (metrics.secure) the metrics endpoint's
// authentication, and nothing else; its ClusterRole has no verb its markers do not; and the consumer's
// ServiceAccount gets nothing of it (the janitor's role is generated without the agent's markers).
func TestProviderFenceGetsExactlyWhatItsMarkersAsk(t *testing.T) {
	markers := markerGrants(t, fencePackage)
	for name, tc := range map[string]struct {
		values map[string]any
		secure bool
	}{
		"beside the consumer":           {values: withFence, secure: true},
		"a provider-only install":       {values: providerOnly, secure: true},
		"metrics over plain HTTP":       {values: map[string]any{"providerFence": map[string]any{"enabled": true}, "metrics": map[string]any{"secure": false}}},
		"without leader election, once": {values: map[string]any{"providerFence": map[string]any{"enabled": true, "replicaCount": 1}, "consumer": map[string]any{"enabled": false}, "leaderElection": map[string]any{"enabled": false}}, secure: true},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			b, _ := render(t, installNS, tc.values)
			want := fenceNeeds(t, tc.secure)
			if le, _ := tc.values["leaderElection"].(map[string]any); le != nil && le["enabled"] == false {
				delete(want, grant{installNS, "coordination.k8s.io", "leases"})
				delete(want, grant{installNS, "", "events"})
			}
			g.Expect(grantsOf(t, b, fenceName)).To(Equal(want))
			for _, r := range one[*rbacv1.ClusterRole](t, b, "", fenceName).Rules {
				g.Expect(r.ResourceNames).To(BeEmpty())
				for _, group := range r.APIGroups {
					for _, resource := range r.Resources {
						g.Expect(markers[grant{"", group, resource}]).To(ContainElements(r.Verbs),
							"the agent's ClusterRole allows %v on %s.%s, which its markers do not ask for", r.Verbs, resource, group)
					}
				}
			}
			if tc.values["consumer"] == nil {
				g.Expect(serviceAccountGrants(t, b)).To(Equal(withSelfManagedCerts), "the consumer's grants stay as they are")
			}
		})
	}
}

// TestChartInstallsAProviderAlone: consumer.enabled=false with providerFence.enabled installs the agent
// and nothing of the consumer's side (no gate, no janitor, no policies, no certificates); both off is
// refused, and so are several agents without leader election.
func TestChartInstallsAProviderAlone(t *testing.T) {
	g := NewWithT(t)
	values := map[string]any{"consumer": map[string]any{"enabled": false},
		"providerFence": map[string]any{"enabled": true}, "namespace": map[string]any{"create": true},
		"serviceMonitor": map[string]any{"enabled": true}, "prometheusRule": map[string]any{"enabled": true},
		"networkPolicy": map[string]any{"enabled": true}, "dashboards": map[string]any{"enabled": true},
		"identitySecrets": map[string]any{"enabled": true}, "policy": map[string]any{"enabled": true}}
	b, r := render(t, installNS, values)
	var got []string
	for _, u := range b.raw {
		got = append(got, describe(u))
	}
	g.Expect(got).To(ConsistOf(
		"Namespace "+installNS,
		"ServiceAccount "+installNS+"/"+fenceName,
		"ClusterRole "+fenceName, "ClusterRoleBinding "+fenceName,
		"Role liqo/"+fenceName, "RoleBinding liqo/"+fenceName,
		"Role "+installNS+"/"+fenceName+"-leader-election", "RoleBinding "+installNS+"/"+fenceName+"-leader-election",
		"ClusterRole "+fenceName+":metrics-auth", "ClusterRoleBinding "+fenceName+":metrics-auth",
		"Deployment "+installNS+"/"+fenceName,
		"PodDisruptionBudget "+installNS+"/"+fenceName,
		"Service "+installNS+"/"+fenceMetricsService,
		"ServiceMonitor "+installNS+"/"+fenceName,
		"NetworkPolicy "+installNS+"/"+fenceName,
		"PrometheusRule "+installNS+"/"+appName,
		// the scraper's identity and who may scrape, shared with the consumer's install
		"ServiceAccount "+installNS+"/liqo-janitor-metrics-scraper", "Secret "+installNS+"/liqo-janitor-metrics-token",
		"ClusterRoleBinding liqo-janitor-metrics-scraper", "ClusterRole liqo-janitor:metrics-reader",
	))
	g.Expect(all[*admissionregistrationv1.ValidatingWebhookConfiguration](b)).To(BeEmpty())
	g.Expect(r.Notes).To(ContainSubstring("kubectl liqo-janitor fence-credential"))
	g.Expect(r.Notes).NotTo(ContainSubstring("mark-unreachable"))
	applied, _ := render(t, matrixNS, values)
	dryRunApply(t, applied)

	_, err := manifests.Render(t.Context(), installNS, map[string]any{"consumer": map[string]any{"enabled": false}})
	g.Expect(err).To(MatchError(ContainSubstring("nothing to install; a provider-only install sets providerFence.enabled=true")))
	_, err = manifests.Render(t.Context(), installNS, map[string]any{"consumer": map[string]any{"enabled": false},
		"providerFence": map[string]any{"enabled": true}, "leaderElection": map[string]any{"enabled": false}})
	g.Expect(err).To(MatchError(ContainSubstring("providerFence.replicaCount is 2 but leaderElection.enabled is false")))
	_, err = manifests.Render(t.Context(), installNS, map[string]any{"providerFence": map[string]any{"enabled": true, "poll": "5 seconds"}})
	g.Expect(err).To(MatchError(ContainSubstring("poll")))
}
