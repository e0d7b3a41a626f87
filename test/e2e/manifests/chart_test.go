package manifests_test

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/manifests"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
	"github.com/liqo-janitor/liqo-janitor/webhook"
)

// fromYAML decodes a YAML stream into a build, strictly, as kustomize does for a kustomization.
func fromYAML(t *testing.T, source, data string) built {
	t.Helper()
	g := NewWithT(t)
	var b built
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		g.Expect(err).NotTo(HaveOccurred(), "reading %s", source)
		u := &unstructured.Unstructured{}
		if err := utilyaml.Unmarshal(doc, &u.Object); err != nil || len(u.Object) == 0 {
			g.Expect(err).NotTo(HaveOccurred(), "reading %s", source)
			continue // an empty document
		}
		b.add(t, u, doc, source)
	}
	return b
}

// render renders the chart into namespace with values, as `helm template` does, and decodes it strictly.
func render(t *testing.T, namespace string, values map[string]any) (built, *manifests.Rendered) {
	t.Helper()
	r, err := manifests.Render(t.Context(), namespace, values)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return fromYAML(t, "the chart", r.Manifest), r
}

// valueMatrix is every value the chart offers, each at least once away from its default.
var valueMatrix = map[string]map[string]any{
	"defaults":                           {},
	"the namespace, as install.yaml":     manifests.InstallValues(),
	"certificates managed by the binary": {"certManager": map[string]any{"enabled": false, "certificateValidityDays": 30, "caValidityDays": 90}},
	"certificates by cert-manager":       {"certManager": map[string]any{"enabled": true, "certificateValidityDays": 30}},
	"the node's network": {"hostNetwork": true, "webhook": map[string]any{"port": 10443}, "metrics": map[string]any{"port": 10080},
		"healthProbe": map[string]any{"port": 10081}, "namespace": map[string]any{"create": true, "podSecurity": "privileged"}},
	"the policy fallback off": {"policy": map[string]any{"enabled": false}},
	"identity secrets":        {"identitySecrets": map[string]any{"enabled": true}},
	"one replica without leader election": {"replicaCount": 1, "leaderElection": map[string]any{"enabled": false},
		"prometheusRule": map[string]any{"enabled": true}},
	"monitoring": {
		"serviceMonitor": map[string]any{"enabled": true, "interval": "15s", "labels": map[string]any{"release": "prom"}},
		"prometheusRule": map[string]any{"enabled": true, "cleanupStuckMinutes": 5, "blockedMinutes": 30},
		"dashboards":     map[string]any{"enabled": true},
	},
	"chart conventions: labels, annotations, extra args, OpenShift's UIDs, numeric quantities, scrape settings": {
		"global":             map[string]any{"imageRegistry": "registry.example"},
		"commonLabels":       map[string]any{"example.com/team": "platform"},
		"commonAnnotations":  map[string]any{"example.com/owner": "platform@example.com"},
		"extraArgs":          []any{"--zap-log-level=debug"},
		"podSecurityContext": map[string]any{"runAsUser": nil, "runAsGroup": nil},
		"resources":          map[string]any{"limits": map[string]any{"cpu": int64(1), "memory": "256Mi"}},
		"serviceMonitor": map[string]any{"enabled": true, "scrapeTimeout": "10s", "tokenSecret": "my-scraper-token", "relabelings": []any{
			map[string]any{"targetLabel": "cluster", "replacement": "consumer-a"}}},
		"prometheusRule": map[string]any{"enabled": true, "groupBy": []any{"cluster", "namespace"}},
	},
	"the provider fence beside the consumer, monitored": {"providerFence": map[string]any{"enabled": true, "poll": "2s", "graceCap": "10s",
		"extraArgs": []any{"--zap-log-level=debug"}}, "serviceMonitor": map[string]any{"enabled": true},
		"prometheusRule": map[string]any{"enabled": true}, "networkPolicy": map[string]any{"enabled": true}},
	"a provider-only install": {"consumer": map[string]any{"enabled": false}, "providerFence": map[string]any{"enabled": true, "replicaCount": 1},
		"leaderElection": map[string]any{"enabled": false}, "metrics": map[string]any{"secure": false}},
	"the gate's own probe off":  {"gate": map[string]any{"probe": map[string]any{"enabled": false}}},
	"the gate's probe, shorter": {"gate": map[string]any{"probe": map[string]any{"timeout": "500ms"}}},
	"network policy": {"networkPolicy": map[string]any{"enabled": true, "metricsFrom": []any{
		map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "monitoring"}}},
	}}},
	"scheduling, image digest and janitor knobs": {
		"image":             map[string]any{"digest": "sha256:" + strings.Repeat("ab", 32)},
		"priorityClassName": "system-cluster-critical",
		"nodeSelector":      map[string]any{"kubernetes.io/os": "linux"},
		"tolerations":       []any{map[string]any{"key": "control-plane", "operator": "Exists", "effect": "NoSchedule"}},
		"affinity": map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
			"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{
				map[string]any{"key": "kubernetes.io/arch", "operator": "In", "values": []any{"amd64", "arm64"}}}}}}}},
		"podAnnotations": map[string]any{"example.com/team": "platform"},
		"janitor":        map[string]any{"gracePeriod": "10m", "dryRun": true, "workers": 8, "objectEvents": true},
		"gate":           map[string]any{"minUnreachable": "30m"},
		"leaderElection": map[string]any{"leaseDuration": "8s", "renewDeadline": "6s", "retryPeriod": "1s"},
		"liqo":           map[string]any{"namespace": "liqo"},
	},
}

// matrixNS is where the matrix is applied (with dry run: nothing of it is stored, so no webhook
// configuration of it ever intercepts another test's requests).
const matrixNS = "chart-matrix"

func TestChartRendersAndAppliesForEveryValueCombination(t *testing.T) {
	env := harness.Require(t)
	ensureLiqoNamespace(t)
	err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: matrixNS}})
	if !apierrors.IsAlreadyExists(err) {
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
	}
	for name, values := range valueMatrix {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			b, _ := render(t, matrixNS, values)
			g.Expect(b.raw).NotTo(BeEmpty())
			for _, u := range b.raw {
				g.Expect(u.GetLabels()).To(HaveKeyWithValue(nameLabel, appName), "labels of %s", describe(u))
				g.Expect(u.GetLabels()).To(HaveKey("app.kubernetes.io/instance"), "labels of %s", describe(u))
				g.Expect(u.GetLabels()).To(HaveKey("app.kubernetes.io/version"), "labels of %s", describe(u))
				if u.GetKind() == "Namespace" {
					continue // exists: created above, as Helm's --create-namespace would
				}
				g.Expect(env.Client.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(u.DeepCopy()),
					client.FieldOwner(fieldOwner), client.ForceOwnership, client.DryRunAll)).To(Succeed(), "applying %s", describe(u))
			}
		})
	}
}

func TestChartValuesAreChecked(t *testing.T) {
	tests := map[string]struct {
		values map[string]any
		want   string
	}{
		"an unknown key":                         {map[string]any{"replicas": 3}, "replicas"},
		"an unknown nested key":                  {map[string]any{"janitor": map[string]any{"grace": "5m"}}, "grace"},
		"a wrong type":                           {map[string]any{"replicaCount": "two"}, "replicaCount"},
		"a duration that is not one":             {map[string]any{"janitor": map[string]any{"gracePeriod": "five minutes"}}, "gracePeriod"},
		"a digest that is not one":               {map[string]any{"image": map[string]any{"digest": "latest"}}, "digest"},
		"an unknown Pod Security level":          {map[string]any{"namespace": map[string]any{"podSecurity": "strict"}}, "podSecurity"},
		"a probe timeout that is not a duration": {map[string]any{"gate": map[string]any{"probe": map[string]any{"timeout": "2"}}}, "timeout"},
		// Gate and janitor point 10: without leader election every replica would run the janitor.
		"several replicas without leader election": {map[string]any{"replicaCount": 3, "leaderElection": map[string]any{"enabled": false}},
			"replicaCount is 3 but leaderElection.enabled is false"},
		"a probe enabled with no time to answer": {map[string]any{"gate": map[string]any{"probe": map[string]any{"timeout": "0.0s"}}},
			"set a timeout above zero (the default is 2s), or say so with gate.probe.enabled=false"},
		"a probe longer than the webhook can wait": {map[string]any{"gate": map[string]any{"probe": map[string]any{"timeout": "1m30s"}}},
			"gate.probe.timeout is 1m30s: the probe must end within 3s"},
		"a probe just longer than 3s": {map[string]any{"gate": map[string]any{"probe": map[string]any{"timeout": "3001ms"}}},
			"the probe must end within 3s"},
		"the node's network in a restricted namespace": {map[string]any{"hostNetwork": true, "namespace": map[string]any{"create": true}},
			`hostNetwork is true but the namespace this chart creates enforces Pod Security "restricted"`},
		"a webhook port that is also the health port": {map[string]any{"webhook": map[string]any{"port": 8081}},
			"each server of the pod needs a port of its own"},
		"a port that is none":      {map[string]any{"webhook": map[string]any{"port": 70000}}, "port"},
		"a negative storm minimum": {map[string]any{"stormGuard": map[string]any{"minUnreachable": -1}}, "minUnreachable"},
		"a storm share above 100%": {map[string]any{"stormGuard": map[string]any{"maxUnreachableShare": 101}}, "maxUnreachableShare"},
		"without cert-manager, a CA that does not outlive its certificates": {
			map[string]any{"certManager": map[string]any{"enabled": false, "certificateValidityDays": 365, "caValidityDays": 730}},
			"caValidityDays must be at least three times certificateValidityDays"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := manifests.Render(t.Context(), matrixNS, tc.values)
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}

// TestChartRefusesReplicasWithoutLeaderElection: gate and janitor point 10. Two janitors without leader
// election would race each other's releases and clean-up records; the refusal says what to set, and both
// ways out render.
func TestChartRefusesReplicasWithoutLeaderElection(t *testing.T) {
	g := NewWithT(t)
	_, err := manifests.Render(t.Context(), matrixNS, map[string]any{"leaderElection": map[string]any{"enabled": false}})
	g.Expect(err).To(MatchError(And(ContainSubstring("replicaCount is 2 but leaderElection.enabled is false"),
		ContainSubstring("set leaderElection.enabled=true"), ContainSubstring("or replicaCount=1"))), "the default two replicas")
	for name, values := range map[string]map[string]any{
		"one replica without leader election": {"replicaCount": 1, "leaderElection": map[string]any{"enabled": false}},
		"three replicas with leader election": {"replicaCount": 3},
	} {
		b, _ := render(t, installNS, values)
		dep := one[*appsv1.Deployment](t, b, installNS, appName)
		g.Expect(*dep.Spec.Replicas).To(BeNumerically("==", values["replicaCount"]), name)
	}
}

// TestChartRendersTheGatesProbe: gate.probe becomes --probe-timeout, 0 when the probe is off.
func TestChartRendersTheGatesProbe(t *testing.T) {
	for name, tc := range map[string]struct {
		probe map[string]any
		want  string
	}{
		"the default":         {nil, "--probe-timeout=2s"},
		"a shorter timeout":   {map[string]any{"timeout": "500ms"}, "--probe-timeout=500ms"},
		"the longest timeout": {map[string]any{"timeout": "2s1000ms"}, "--probe-timeout=2s1000ms"},
		"the probe turns off": {map[string]any{"enabled": false, "timeout": "10s"}, "--probe-timeout=0"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			values := map[string]any{}
			if tc.probe != nil {
				values["gate"] = map[string]any{"probe": tc.probe}
			}
			b, _ := render(t, installNS, values)
			args := one[*appsv1.Deployment](t, b, installNS, appName).Spec.Template.Spec.Containers[0].Args
			g.Expect(args).To(ContainElement(tc.want))
			g.Expect(argValue(args, "--probe-timeout=")).To(Equal(strings.TrimPrefix(tc.want, "--probe-timeout=")), "set once")
		})
	}
}

func TestChartLints(t *testing.T) {
	g := NewWithT(t)
	lint := action.NewLint()
	lint.Namespace = manifests.ReleaseNamespace
	lint.KubeVersion = &common.KubeVersion{Version: "v1.30.0", Major: "1", Minor: "30"}
	result := lint.Run([]string{filepath.Join(repoRoot(t), manifests.ChartDir)}, nil)
	g.Expect(result.Errors).To(BeEmpty())
	for _, m := range result.Messages {
		g.Expect(m.Severity).To(BeNumerically("<=", 1), "lint: %s", m) // INFO at most
	}
}

func TestInstallYAMLIsTheChartRenderedAndTheKustomizeBaseAppliesIt(t *testing.T) {
	g := NewWithT(t)
	r, err := manifests.Render(t.Context(), manifests.ReleaseNamespace, manifests.InstallValues())
	g.Expect(err).NotTo(HaveOccurred())
	onDisk, err := os.ReadFile(filepath.Join(repoRoot(t), manifests.InstallFile))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(onDisk)).To(HaveSuffix(r.Manifest), "%s is stale: run make manifests", manifests.InstallFile)
	r2, err := manifests.Render(t.Context(), manifests.ReleaseNamespace, manifests.InstallCertManagerValues())
	g.Expect(err).NotTo(HaveOccurred())
	onDisk, err = os.ReadFile(filepath.Join(repoRoot(t), manifests.InstallCertManagerFile))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(onDisk)).To(HaveSuffix(r2.Manifest), "%s is stale: run make manifests", manifests.InstallCertManagerFile)

	rendered := fromYAML(t, "the chart", r.Manifest)
	kustomized := kustomize(t, defaultDir)
	g.Expect(kustomized.raw).To(HaveLen(len(rendered.raw)))
	byName := map[string]*unstructured.Unstructured{}
	for _, u := range rendered.raw {
		byName[describe(u)] = u
	}
	for _, u := range kustomized.raw {
		g.Expect(byName).To(HaveKey(describe(u)))
		g.Expect(u.Object).To(Equal(byName[describe(u)].Object), "%s differs between the chart and kustomize", describe(u))
	}
}

func TestChartGrantsExactlyWhatTheCodeCalls(t *testing.T) {
	g := NewWithT(t)
	b, _ := render(t, installNS, nil)
	g.Expect(serviceAccountGrants(t, b)).To(Equal(withSelfManagedCerts))
	b, _ = render(t, installNS, withCertManager)
	g.Expect(serviceAccountGrants(t, b)).To(Equal(needed), "with cert-manager, nothing on Secrets or webhook configurations")
	b, _ = render(t, installNS, map[string]any{"identitySecrets": map[string]any{"enabled": true}})
	g.Expect(serviceAccountGrants(t, b)).To(Equal(withIdentitySecrets))
	dep := one[*appsv1.Deployment](t, b, installNS, appName)
	g.Expect(dep.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--release-identity-secrets"))
}

// TestChartRendersTheStormGuard: stormGuard becomes the two flags, 0 (the guard off) included.
func TestChartRendersTheStormGuard(t *testing.T) {
	g := NewWithT(t)
	b, _ := render(t, installNS, map[string]any{"stormGuard": map[string]any{"minUnreachable": 0, "maxUnreachableShare": 75}})
	args := one[*appsv1.Deployment](t, b, installNS, appName).Spec.Template.Spec.Containers[0].Args
	g.Expect(args).To(ContainElements("--storm-min-unreachable=0", "--storm-max-unreachable-share=75"))
}

// TestChartDefaultsAreTheBinarys: the chart passes every knob explicitly, so its defaults must be the
// binary's own (an install must behave as docs/flags.md says).
func TestChartDefaultsAreTheBinarys(t *testing.T) {
	g := NewWithT(t)
	b, _ := render(t, installNS, nil)
	args := map[string]string{}
	for _, a := range one[*appsv1.Deployment](t, b, installNS, appName).Spec.Template.Spec.Containers[0].Args {
		k, v, _ := strings.Cut(a, "=")
		args[k] = v
	}
	for flag, want := range map[string]time.Duration{
		"--grace-period": janitor.DefaultGracePeriod, "--min-unreachable": webhook.DefaultMinUnreachable,
		"--probe-timeout": webhook.DefaultProbeTimeout, "--return-probe-interval": janitor.DefaultReturnProbeInterval,
		// controller-runtime's leader-election defaults, which the binary's flags keep
		"--leader-election-lease-duration": 15 * time.Second, "--leader-election-renew-deadline": 10 * time.Second,
		"--leader-election-retry-period": 2 * time.Second,
	} {
		got, err := time.ParseDuration(args[flag])
		g.Expect(err).NotTo(HaveOccurred(), flag)
		g.Expect(got).To(Equal(want), flag)
	}
	g.Expect(args).To(HaveKeyWithValue("--janitor-workers", strconv.Itoa(janitor.DefaultWorkers)))
	g.Expect(args).To(HaveKeyWithValue("--kube-api-burst", strconv.Itoa(janitor.DefaultClientBurst)))
	g.Expect(args).To(HaveKeyWithValue("--liqo-namespace", liqojanitor.DefaultLiqoNamespace))
	g.Expect(args).To(HaveKeyWithValue("--storm-min-unreachable", strconv.Itoa(liqojanitor.DefaultStormMinUnreachable)))
	g.Expect(args).To(HaveKeyWithValue("--storm-max-unreachable-share", strconv.Itoa(liqojanitor.DefaultStormMaxUnreachableShare)))
	g.Expect(args).To(HaveKeyWithValue("--liqo-uninstaller-users", "")) // gate rule 18 off, as the binary's default
}

// TestChartNamesLiqosUninstaller: gate rule 18 is off unless enabled; enabled, its identities follow
// liqo.namespace unless named, and reach both the binary's flag and the policy fallback's list, which also
// asks for a pod-bound token.
func TestChartNamesLiqosUninstaller(t *testing.T) {
	tests := map[string]struct {
		values map[string]any
		want   string
	}{
		"Liqo's pre-delete Job in liqo.namespace": {values: map[string]any{"liqo": map[string]any{"namespace": "liqo-system",
			"uninstaller": map[string]any{"enabled": true}}},
			want: "system:serviceaccount:liqo-system:liqo-pre-delete"},
		"named users": {values: map[string]any{"liqo": map[string]any{"uninstaller": map[string]any{"enabled": true,
			"users": []any{"system:serviceaccount:liqo:a", "system:serviceaccount:liqo:b"}}}},
			want: "system:serviceaccount:liqo:a,system:serviceaccount:liqo:b"},
		"off by default": {values: map[string]any{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			tc.values["policy"] = map[string]any{"enabled": true}
			b, _ := render(t, installNS, tc.values)
			g.Expect(one[*appsv1.Deployment](t, b, installNS, appName).Spec.Template.Spec.Containers[0].Args).
				To(ContainElement("--liqo-uninstaller-users=" + tc.want))
			vap := one[*admissionregistrationv1.ValidatingAdmissionPolicy](t, b, "", policyName)
			var list string
			for _, v := range vap.Spec.Variables {
				if v.Name == "uninstallerMark" {
					list = v.Expression
				}
			}
			want := "[]"
			if tc.want != "" {
				want = `["` + strings.ReplaceAll(tc.want, ",", `","`) + `"]`
			}
			g.Expect(list).To(And(ContainSubstring("request.userInfo.username in "+want),
				ContainSubstring("'authentication.kubernetes.io/pod-name' in request.userInfo.extra")))
		})
	}
}

func TestChartNotesTellTheNextStep(t *testing.T) {
	g := NewWithT(t)
	_, r := render(t, installNS, nil)
	g.Expect(r.Notes).To(ContainSubstring("kubectl create clusterrolebinding mark-unreachable-<user>"))
	g.Expect(r.Notes).To(ContainSubstring("--clusterrole=" + liqojanitor.MarkRoleName))
	_, r = render(t, installNS, map[string]any{"janitor": map[string]any{"dryRun": true}})
	g.Expect(r.Notes).To(ContainSubstring("DRY RUN"))
}

// The install's name is the product's: the tools module spells it, the product defines it.
func TestTheInstallIsNamedAsTheProduct(t *testing.T) {
	if manifests.ReleaseName != liqojanitor.Name {
		t.Fatalf("manifests.ReleaseName = %q, the product's name is %q", manifests.ReleaseName, liqojanitor.Name)
	}
}
