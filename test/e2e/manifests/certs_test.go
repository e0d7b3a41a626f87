package manifests_test

import (
	"context"
	"maps"
	"testing"
	"time"

	certmanagerv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/liqo-janitor/liqo-janitor/manifests"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
	"github.com/liqo-janitor/liqo-janitor/webhook/certs"
)

var (
	withCertManager    = map[string]any{"certManager": map[string]any{"enabled": true}}
	withoutCertManager = map[string]any{"certManager": map[string]any{"enabled": false}}
)

// TestChartRendersNoKeyMaterialAndTheSameEveryTime: with or without cert-manager, two renders are byte
// for byte the same (no lookup, no genCA), and hold no key, no certificate and no caBundle: what Argo
// CD and Flux render never drifts from what is applied.
func TestChartRendersNoKeyMaterialAndTheSameEveryTime(t *testing.T) {
	for name, values := range map[string]map[string]any{"with cert-manager": withCertManager, "without cert-manager": withoutCertManager} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			first, err := manifests.Render(t.Context(), installNS, values)
			g.Expect(err).NotTo(HaveOccurred())
			second, err := manifests.Render(t.Context(), installNS, values)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(second.Manifest).To(Equal(first.Manifest), "two renders differ")
			// caBundle as a field (the policy liqo-janitor-certs names it in its CEL and comments)
			for _, s := range []string{"PRIVATE KEY", "BEGIN CERTIFICATE", "caBundle:", "kind: Secret"} {
				g.Expect(first.Manifest).NotTo(ContainSubstring(s))
			}
		})
	}
}

// TestChartWithoutCertManagerLetsTheBinaryManageTheCertificates: no cert-manager object, no volume, the
// binary's flags, and the certificates' RBAC narrowed to the two Secrets and the two configurations.
func TestChartWithoutCertManagerLetsTheBinaryManageTheCertificates(t *testing.T) {
	g := NewWithT(t)
	b, _ := render(t, installNS, withoutCertManager)
	for _, u := range b.raw {
		g.Expect(u.GetAPIVersion()).NotTo(HavePrefix("cert-manager.io/"), "no cert-manager object without cert-manager")
	}
	pod := one[*appsv1.Deployment](t, b, installNS, appName).Spec.Template.Spec
	g.Expect(pod.Volumes).To(BeEmpty(), "nothing mounted: the binary reads its Secret through the API")
	g.Expect(pod.Containers[0].VolumeMounts).To(BeEmpty())
	g.Expect(pod.Containers[0].Args).To(ContainElements("--cert-management=self", "--webhook-service="+webhookService,
		"--webhook-configuration="+appName, "--cert-validity=8760h", "--ca-validity=87600h"))
	for _, cfg := range []client.Object{one[*admissionregistrationv1.MutatingWebhookConfiguration](t, b, "", appName),
		one[*admissionregistrationv1.ValidatingWebhookConfiguration](t, b, "", appName)} {
		g.Expect(cfg.GetAnnotations()).NotTo(HaveKey("cert-manager.io/inject-ca-from"))
	}

	g.Expect(one[*rbacv1.Role](t, b, installNS, "liqo-janitor-certs").Rules).To(ConsistOf(
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "patch"},
			ResourceNames: []string{certs.CASecretName, certs.CertSecretName}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}}))
	g.Expect(one[*rbacv1.ClusterRole](t, b, "", "liqo-janitor-certs").Rules).To(ConsistOf(
		rbacv1.PolicyRule{APIGroups: []string{"admissionregistration.k8s.io"}, Verbs: []string{"get", "patch"},
			Resources: []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"}, ResourceNames: []string{appName}}))
	want := withSelfManagedCertificates()
	g.Expect(serviceAccountGrants(t, b)).To(Equal(want))
	b, _ = render(t, installNS, withCertManager)
	g.Expect(serviceAccountGrants(t, b)).To(Equal(needed), "nothing of it with cert-manager")
}

func withSelfManagedCertificates() map[grant][]string {
	m := maps.Clone(needed)
	m[grant{installNS, "", "secrets"}] = []string{"create", "get", "list", "patch"}
	m[grant{"", "admissionregistration.k8s.io", "mutatingwebhookconfigurations"}] = []string{"get", "patch"}
	m[grant{"", "admissionregistration.k8s.io", "validatingwebhookconfigurations"}] = []string{"get", "patch"}
	return m
}

// TestHelmUpgradesSwitchBetweenCertManagerAndSelfManagedCertificates installs the chart with Helm's
// library on the API server with cert-manager, upgrades it to self-managed certificates (the binary's
// certificate manager then runs as the chart's ServiceAccount, so its RBAC is what the chart grants, and
// injects the bundle), upgrades it again (the injected caBundle survives), and back to cert-manager.
func TestHelmUpgradesSwitchBetweenCertManagerAndSelfManagedCertificates(t *testing.T) {
	env := harness.Require(t)
	ensureLiqoNamespace(t)
	g := NewWithT(t)
	h := newHelm(t)
	t.Cleanup(h.uninstall)

	h.install(withCertManager)
	h.expectCertManager(g, true)

	h.upgrade(withoutCertManager)
	h.expectCertManager(g, false)
	cm := startCertManager(t, env)
	g.Eventually(func() error { return cm.Ready(nil) }).WithTimeout(30*time.Second).Should(Succeed(), "the chart's ServiceAccount may do what the binary does")
	bundle := h.caBundle(g)
	g.Expect(bundle).NotTo(BeEmpty())

	h.upgrade(map[string]any{"certManager": map[string]any{"enabled": false}, "janitor": map[string]any{"gracePeriod": "45s"}})
	g.Expect(h.caBundle(g)).To(Equal(bundle), "a Helm upgrade keeps the caBundle the binary injected")
	g.Expect(cm.Ready(nil)).To(Succeed())

	h.upgrade(withCertManager)
	h.expectCertManager(g, true)
	sa := serviceAccountClient(t, env)
	err := sa.Get(t.Context(), client.ObjectKey{Namespace: h.ns, Name: certs.CASecretName}, &corev1.Secret{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "with cert-manager the ServiceAccount reads no Secret: %v", err)
}

// helmRelease drives the chart as `helm install/upgrade/uninstall` does, with Helm's library.
type helmRelease struct {
	t   *testing.T
	cfg *action.Configuration
	ns  string
}

func newHelm(t *testing.T) *helmRelease {
	t.Helper()
	return newHelmIn(t, installNS)
}

// newHelmIn drives a release in namespace ns.
func newHelmIn(t *testing.T, ns string) *helmRelease {
	t.Helper()
	env := harness.Require(t)
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &env.KubeconfigPath, new(string)
	*flags.Namespace = ns
	cfg := action.NewConfiguration()
	NewWithT(t).Expect(cfg.Init(flags, ns, "secret")).To(Succeed())
	return &helmRelease{t: t, cfg: cfg, ns: ns}
}

func (h *helmRelease) install(values map[string]any) {
	ch, err := manifests.Chart()
	NewWithT(h.t).Expect(err).NotTo(HaveOccurred())
	in := action.NewInstall(h.cfg)
	in.ReleaseName, in.Namespace, in.CreateNamespace, in.WaitStrategy = manifests.ReleaseName, h.ns, true, kube.HookOnlyStrategy
	_, err = in.RunWithContext(h.t.Context(), ch, values)
	NewWithT(h.t).Expect(err).NotTo(HaveOccurred(), "helm install")
}

func (h *helmRelease) upgrade(values map[string]any) {
	ch, err := manifests.Chart()
	NewWithT(h.t).Expect(err).NotTo(HaveOccurred())
	up := action.NewUpgrade(h.cfg)
	up.Namespace, up.WaitStrategy = h.ns, kube.HookOnlyStrategy
	_, err = up.RunWithContext(h.t.Context(), manifests.ReleaseName, ch, values)
	NewWithT(h.t).Expect(err).NotTo(HaveOccurred(), "helm upgrade with %v", values)
}

func (h *helmRelease) uninstall() {
	un := action.NewUninstall(h.cfg)
	un.WaitStrategy = kube.HookOnlyStrategy
	if _, err := un.Run(manifests.ReleaseName); err != nil {
		h.t.Logf("helm uninstall: %v", err)
	}
	env := harness.Require(h.t)
	for _, name := range []string{certs.CASecretName, certs.CertSecretName} {
		_ = env.Client.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name}})
	}
}

// expectCertManager checks the release's objects in the API server for one mode or the other.
func (h *helmRelease) expectCertManager(g Gomega, enabled bool) {
	env := harness.Require(h.t)
	ctx := h.t.Context()
	for _, name := range []string{caCert, servingCert} {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(certmanagerv1.SchemeGroupVersion.WithKind("Certificate"))
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: h.ns, Name: name}, u)
		g.Expect(err == nil).To(Equal(enabled), "Certificate %s: %v", name, err)
	}
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: h.ns, Name: "liqo-janitor-certs"}, &rbacv1.Role{})
	g.Expect(apierrors.IsNotFound(err)).To(Equal(enabled), "the certificates' Role: %v", err)
	dep := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: h.ns, Name: appName}, dep)).To(Succeed())
	mode := map[bool]string{true: "--cert-management=cert-manager", false: "--cert-management=self"}[enabled]
	g.Expect(dep.Spec.Template.Spec.Containers[0].Args).To(ContainElement(mode))
	mut := &admissionregistrationv1.MutatingWebhookConfiguration{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: appName}, mut)).To(Succeed())
	if enabled {
		g.Expect(mut.Annotations).To(HaveKeyWithValue("cert-manager.io/inject-ca-from", h.ns+"/"+caCert), "the CA injector's source")
	} else {
		g.Expect(mut.Annotations).NotTo(HaveKey("cert-manager.io/inject-ca-from"), "the CA injector no longer writes the caBundle")
	}
}

// caBundle returns the caBundle of the first webhook, after checking every webhook of both
// configurations carries the same.
func (h *helmRelease) caBundle(g Gomega) []byte {
	env := harness.Require(h.t)
	var bundles [][]byte
	for _, cfg := range []client.Object{&admissionregistrationv1.MutatingWebhookConfiguration{}, &admissionregistrationv1.ValidatingWebhookConfiguration{}} {
		g.Expect(env.Client.Get(h.t.Context(), client.ObjectKey{Name: appName}, cfg)).To(Succeed())
		harness.ForEachWebhook(cfg, func(cc *admissionregistrationv1.WebhookClientConfig, _ **metav1.LabelSelector) {
			bundles = append(bundles, cc.CABundle)
		})
	}
	for _, b := range bundles {
		g.Expect(b).To(Equal(bundles[0]))
	}
	return bundles[0]
}

// serviceAccountClient is a client that impersonates the chart's ServiceAccount.
func serviceAccountClient(t *testing.T, env *harness.Env) client.Client {
	t.Helper()
	c, err := env.NewClient(func(cfg *rest.Config) {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + installNS + ":" + appName}
	})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return c
}

// startCertManager runs the binary's certificate manager (package webhook/certs) as the chart's
// ServiceAccount, with the install's names, until the test ends.
func startCertManager(t *testing.T, env *harness.Env) *certs.Manager {
	t.Helper()
	g := NewWithT(t)
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + installNS + ":" + appName}
	scheme := runtime.NewScheme()
	g.Expect(corev1.AddToScheme(scheme)).To(Succeed())
	g.Expect(admissionregistrationv1.AddToScheme(scheme)).To(Succeed())
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	g.Expect(err).NotTo(HaveOccurred())
	cm := certs.New(certs.Options{Namespace: installNS, Service: webhookService, WebhookConfiguration: appName,
		CertValidity: certs.DefaultCertValidity, CAValidity: certs.DefaultCAValidity, CheckInterval: 500 * time.Millisecond})
	g.Expect(cm.Add(mgr)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); NewWithT(t).Expect(<-done).To(Succeed()) })
	return cm
}
