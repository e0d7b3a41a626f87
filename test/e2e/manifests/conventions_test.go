package manifests_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/strvals"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/liqo-janitor/liqo-janitor/manifests"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// dryRunApply server-side applies every object of b with dry run (nothing is stored), as the matrix does,
// into the matrix's namespace.
func dryRunApply(t *testing.T, b built) {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	ensureLiqoNamespace(t)
	err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: matrixNS}})
	if !apierrors.IsAlreadyExists(err) {
		g.Expect(err).NotTo(HaveOccurred())
	}
	for _, u := range b.raw {
		if u.GetKind() == "Namespace" {
			continue
		}
		g.Expect(env.Client.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(u.DeepCopy()),
			client.FieldOwner(fieldOwner), client.ForceOwnership, client.DryRunAll)).To(Succeed(), "applying %s", describe(u))
	}
}

// setValues parses Helm --set arguments, as `helm install --set` does.
func setValues(t *testing.T, sets ...string) map[string]any {
	t.Helper()
	values := map[string]any{}
	for _, s := range sets {
		NewWithT(t).Expect(strvals.ParseInto(s, values)).To(Succeed(), "--set %s", s)
	}
	return values
}

// TestChartWorksAsADependency: a parent chart (in a temporary directory, this chart copied into its
// charts/) sets this chart's values under its name and Helm's global values beside them; Helm copies global
// into every subchart's values, which the schema must accept.
func TestChartWorksAsADependency(t *testing.T) {
	g := NewWithT(t)
	sub, err := manifests.Chart()
	g.Expect(err).NotTo(HaveOccurred())
	parent := t.TempDir()
	g.Expect(os.MkdirAll(filepath.Join(parent, "templates"), 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(parent, "Chart.yaml"), []byte(`apiVersion: v2
name: liqo-stack
version: 1.0.0
dependencies:
- name: liqo-janitor
  version: `+sub.Metadata.Version+`
  repository: file://`+filepath.Join(repoRoot(t), manifests.ChartDir)+`
`), 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(parent, "values.yaml"), []byte("global:\n  clusterName: consumer-a\n"), 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(parent, "templates", "configmap.yaml"), []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: liqo-stack
  namespace: {{ .Release.Namespace }}
  labels:
    app.kubernetes.io/name: liqo-janitor
    app.kubernetes.io/instance: {{ .Release.Name }}
    app.kubernetes.io/version: {{ .Chart.Version | quote }}
data:
  cluster: {{ .Values.global.clusterName }}
`), 0o644)).To(Succeed())
	g.Expect(os.CopyFS(filepath.Join(parent, "charts", "liqo-janitor"), os.DirFS(filepath.Join(repoRoot(t), manifests.ChartDir)))).To(Succeed())

	ch, err := loader.Load(parent)
	g.Expect(err).NotTo(HaveOccurred())
	r, err := manifests.RenderChart(t.Context(), ch, matrixNS, map[string]any{
		"global":       map[string]any{"imageRegistry": "registry.example", "clusterName": "consumer-b"},
		"liqo-janitor": map[string]any{"replicaCount": 3, "commonLabels": map[string]any{"example.com/stack": "liqo"}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	b := fromYAML(t, "the parent chart", r.Manifest)
	dep := one[*appsv1.Deployment](t, b, matrixNS, appName)
	g.Expect(*dep.Spec.Replicas).To(BeNumerically("==", 3), "the parent's values reach the subchart")
	g.Expect(dep.Labels).To(HaveKeyWithValue("example.com/stack", "liqo"))
	g.Expect(one[*corev1.ConfigMap](t, b, matrixNS, "liqo-stack").Data).To(HaveKeyWithValue("cluster", "consumer-b"))

	// the same without the subchart's values: global alone
	_, err = manifests.RenderChart(t.Context(), ch, matrixNS, nil)
	g.Expect(err).NotTo(HaveOccurred())
	dryRunApply(t, b)
}

// TestChartAcceptsWhatKubernetesAccepts: quantities as numbers (what --set makes of 1), and "" where a
// default applies: a duration the binary then defaults, a quantity not set, Prometheus' own intervals.
func TestChartAcceptsWhatKubernetesAccepts(t *testing.T) {
	g := NewWithT(t)
	values := setValues(t, "resources.limits.cpu=1", "resources.requests.cpu=0.25", "resources.requests.memory=134217728",
		"resources.limits.memory=")
	g.Expect(values).To(HaveKeyWithValue("resources", HaveKeyWithValue("limits", HaveKeyWithValue("cpu", int64(1)))), "--set makes a number")
	b, _ := render(t, matrixNS, values)
	c := one[*appsv1.Deployment](t, b, matrixNS, appName).Spec.Template.Spec.Containers[0]
	g.Expect(c.Resources.Limits.Cpu().Equal(resource.MustParse("1"))).To(BeTrue(), "limits.cpu %s", c.Resources.Limits.Cpu())
	g.Expect(c.Resources.Requests.Cpu().Equal(resource.MustParse("250m"))).To(BeTrue(), "requests.cpu %s", c.Resources.Requests.Cpu())
	g.Expect(c.Resources.Requests.Memory().Equal(resource.MustParse("128Mi"))).To(BeTrue(), "requests.memory %s", c.Resources.Requests.Memory())
	g.Expect(c.Resources.Limits).NotTo(HaveKey(corev1.ResourceMemory), "a quantity set to \"\" is not set")
	dryRunApply(t, b)

	// a values file's numbers are float64
	b, _ = render(t, matrixNS, map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": 0.5, "memory": 1e9}}})
	c = one[*appsv1.Deployment](t, b, matrixNS, appName).Spec.Template.Spec.Containers[0]
	g.Expect(c.Resources.Limits.Cpu().Equal(resource.MustParse("500m"))).To(BeTrue(), "limits.cpu %s", c.Resources.Limits.Cpu())
	g.Expect(c.Resources.Limits.Memory().Equal(resource.MustParse("1G"))).To(BeTrue(), "limits.memory %s", c.Resources.Limits.Memory())

	flags := []string{"--min-unreachable=", "--probe-timeout=", "--grace-period=", "--return-probe-interval=",
		"--leader-election-lease-duration=", "--leader-election-renew-deadline=", "--leader-election-retry-period="}
	b, _ = render(t, matrixNS, setValues(t, "gate.minUnreachable=", "gate.probe.timeout=", "janitor.gracePeriod=",
		"janitor.returnProbeInterval=", "leaderElection.leaseDuration=", "leaderElection.renewDeadline=",
		"leaderElection.retryPeriod=", "serviceMonitor.enabled=true", "serviceMonitor.interval="))
	args := one[*appsv1.Deployment](t, b, matrixNS, appName).Spec.Template.Spec.Containers[0].Args
	for _, flag := range flags {
		g.Expect(argValue(args, flag)).To(BeEmpty(), "%s is left to the binary's default", flag)
	}
	g.Expect(args).To(ContainElement("--leader-elect=true"))
	g.Expect(one[*monitoringv1.ServiceMonitor](t, b, matrixNS, appName).Spec.Endpoints[0].Interval).To(BeEmpty())
}

// TestChartExtraArgsComeLast: extraArgs are appended, in order, after every argument the chart sets.
func TestChartExtraArgsComeLast(t *testing.T) {
	g := NewWithT(t)
	b, _ := render(t, installNS, nil)
	chartArgs := one[*appsv1.Deployment](t, b, installNS, appName).Spec.Template.Spec.Containers[0].Args
	extra := []string{"--zap-log-level=debug", "--kube-api-qps=50", "--zap-encoder=console"}
	b, _ = render(t, installNS, map[string]any{"extraArgs": []any{extra[0], extra[1], extra[2]}})
	args := one[*appsv1.Deployment](t, b, installNS, appName).Spec.Template.Spec.Containers[0].Args
	g.Expect(args).To(Equal(append(slices.Clone(chartArgs), extra...)))

	_, err := manifests.Render(t.Context(), installNS, map[string]any{"extraArgs": []any{map[string]any{"zap-log-level": "debug"}}})
	g.Expect(err).To(MatchError(ContainSubstring("extraArgs")), "arguments are strings")
}

// TestChartRunsUnderOpenShiftsRestrictedSCC: with the fixed IDs unset (OpenShift's restricted SCC
// assigns each namespace its own UID range) the pods carry no runAsUser, still run as non-root, and the
// API server's Pod Security admission admits them in a namespace that enforces restricted, as it admits
// the defaults; a container allowed to escalate its privileges is refused there (the check works).
func TestChartRunsUnderOpenShiftsRestrictedSCC(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "restricted-", Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}}}
	g.Expect(env.Client.Create(t.Context(), ns)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(t.Context(), ns) })
	g.Expect(env.Client.Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns.Name, Name: appName}})).To(Succeed())

	// createPod creates (dry run) a pod of the Deployment the values render, in the restricted namespace.
	createPod := func(values map[string]any) (*corev1.Pod, error) {
		b, _ := render(t, ns.Name, values)
		tmpl := one[*appsv1.Deployment](t, b, ns.Name, appName).Spec.Template
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, GenerateName: appName + "-", Labels: tmpl.Labels}, Spec: tmpl.Spec}
		return pod, env.Client.Create(t.Context(), pod, client.DryRunAll)
	}

	pod, err := createPod(nil)
	g.Expect(err).NotTo(HaveOccurred(), "the defaults meet restricted")
	g.Expect(pod.Spec.SecurityContext.RunAsUser).NotTo(BeNil(), "the defaults fix the UID")

	openShift := setValues(t, "podSecurityContext.runAsUser=null", "podSecurityContext.runAsGroup=null")
	pod, err = createPod(openShift)
	g.Expect(err).NotTo(HaveOccurred(), "without fixed IDs the pod still meets restricted")
	g.Expect(pod.Spec.SecurityContext.RunAsUser).To(BeNil())
	g.Expect(pod.Spec.SecurityContext.RunAsGroup).To(BeNil())
	g.Expect(pod.Spec.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()))
	g.Expect(pod.Spec.SecurityContext.SeccompProfile).To(HaveField("Type", corev1.SeccompProfileTypeRuntimeDefault))
	for _, c := range pod.Spec.Containers {
		g.Expect(c.SecurityContext.RunAsUser).To(BeNil())
		g.Expect(c.SecurityContext.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
	}

	_, err = createPod(setValues(t, "containerSecurityContext.allowPrivilegeEscalation=true"))
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "refused by Pod Security admission: %v", err)
	g.Expect(err).To(MatchError(ContainSubstring(`violates PodSecurity "restricted:latest"`)))
}

// TestChartLabelsAndAnnotatesEveryObject: commonLabels and commonAnnotations reach every object of every
// kind the chart renders, with every optional part on, and commonLabels the pods.
func TestChartLabelsAndAnnotatesEveryObject(t *testing.T) {
	labels := map[string]any{"example.com/team": "platform", "example.com/cost-centre": "42"}
	annotations := map[string]any{"example.com/owner": "platform@example.com"}
	everything := map[string]any{
		"commonLabels": labels, "commonAnnotations": annotations,
		"namespace": map[string]any{"create": true}, "policy": map[string]any{"enabled": true},
		"identitySecrets": map[string]any{"enabled": true}, "serviceMonitor": map[string]any{"enabled": true},
		"prometheusRule": map[string]any{"enabled": true}, "dashboards": map[string]any{"enabled": true},
		"networkPolicy": map[string]any{"enabled": true},
	}
	for name, certManager := range map[string]bool{"with cert-manager": true, "without cert-manager": false} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			values := map[string]any{"certManager": map[string]any{"enabled": certManager}}
			for k, v := range everything {
				values[k] = v
			}
			b, _ := render(t, installNS, values)
			kinds := sets.New[string]()
			for _, u := range b.raw {
				kinds.Insert(u.GetKind())
				for k, v := range labels {
					g.Expect(u.GetLabels()).To(HaveKeyWithValue(k, v), "labels of %s", describe(u))
				}
				for k, v := range annotations {
					g.Expect(u.GetAnnotations()).To(HaveKeyWithValue(k, v), "annotations of %s", describe(u))
				}
			}
			g.Expect(sets.List(kinds)).To(ContainElements("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
				"RoleBinding", "Service", "Deployment", "PodDisruptionBudget", "NetworkPolicy", "ConfigMap", "ServiceMonitor",
				"PrometheusRule", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
				"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"))
			pod := one[*appsv1.Deployment](t, b, installNS, appName).Spec.Template
			for k, v := range labels {
				g.Expect(pod.Labels).To(HaveKeyWithValue(k, v), "labels of the pods")
			}
		})
	}
}

// TestChartServiceMonitorValues: interval, scrapeTimeout, labels, relabelings and metricRelabelings reach
// the ServiceMonitor, and the Prometheus Operator's CRD accepts them.
func TestChartServiceMonitorValues(t *testing.T) {
	g := NewWithT(t)
	relabel := []any{map[string]any{"targetLabel": "cluster", "replacement": "consumer-a", "action": "replace"}}
	drop := []any{map[string]any{"sourceLabels": []any{"__name__"}, "regex": "go_gc_.*", "action": "drop"}}
	b, _ := render(t, matrixNS, map[string]any{"serviceMonitor": map[string]any{
		"enabled": true, "interval": "1m", "scrapeTimeout": "20s", "labels": map[string]any{"release": "prom"},
		"relabelings": relabel, "metricRelabelings": drop,
	}})
	sm := one[*monitoringv1.ServiceMonitor](t, b, matrixNS, appName)
	g.Expect(sm.Labels).To(HaveKeyWithValue("release", "prom"))
	g.Expect(sm.Spec.Endpoints).To(HaveLen(1))
	e := sm.Spec.Endpoints[0]
	g.Expect(e.Interval).To(Equal(monitoringv1.Duration("1m")))
	g.Expect(e.ScrapeTimeout).To(Equal(monitoringv1.Duration("20s")))
	g.Expect(e.RelabelConfigs).To(HaveLen(1))
	g.Expect(e.RelabelConfigs[0].TargetLabel).To(Equal("cluster"))
	g.Expect(e.MetricRelabelConfigs).To(HaveLen(1))
	g.Expect(e.MetricRelabelConfigs[0].Regex).To(Equal("go_gc_.*"))
	dryRunApply(t, b)
}

// TestChartConventionValuesAreChecked: the new values refuse what would not work.
func TestChartConventionValuesAreChecked(t *testing.T) {
	for name, tc := range map[string]struct {
		values map[string]any
		want   string
	}{
		"a quantity that is neither string nor number": {map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": true}}}, "cpu"},
		"grouping alerts by kind, which they add":      {map[string]any{"prometheusRule": map[string]any{"groupBy": []any{"kind"}}}, "groupBy"},
		"grouping alerts by no label":                  {map[string]any{"prometheusRule": map[string]any{"groupBy": []any{}}}, "groupBy"},
		"a label name that is not one":                 {map[string]any{"prometheusRule": map[string]any{"groupBy": []any{"k8s-cluster"}}}, "groupBy"},
		"a label that is not a string":                 {map[string]any{"commonLabels": map[string]any{"tier": 1}}, "tier"},
		"a scrape interval that is not a duration":     {map[string]any{"serviceMonitor": map[string]any{"interval": "often"}}, "interval"},
		"a UID that is not a number":                   {map[string]any{"podSecurityContext": map[string]any{"runAsUser": "nobody"}}, "runAsUser"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := manifests.Render(t.Context(), matrixNS, tc.values)
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}
