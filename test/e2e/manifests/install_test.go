package manifests_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	certmanagerv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// apply server-side applies b in its order, as `kubectl apply --server-side -k` would, and returns the
// warnings the API server answered with.
func apply(t *testing.T, b built) []string {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	warnings := &harness.WarningRecorder{}
	c, err := env.NewClient(func(cfg *rest.Config) { cfg.WarningHandlerWithContext = warnings })
	g.Expect(err).NotTo(HaveOccurred())
	for _, u := range b.raw {
		g.Expect(c.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(u.DeepCopy()),
			client.FieldOwner(fieldOwner), client.ForceOwnership)).To(Succeed(), "applying %s", describe(u))
	}
	return warnings.Warnings()
}

// deleteAll removes what apply created (a namespace stays Terminating without kube-controller-manager,
// which is harmless), so that no webhook configuration outlives the test that applied it.
func deleteAll(c client.Client, b built) {
	for _, u := range slices.Backward(b.raw) {
		_ = client.IgnoreNotFound(c.Delete(context.Background(), u.DeepCopy()))
	}
}

// ensureLiqoNamespace creates Liqo's namespace, which Liqo's installation creates on a real cluster.
func ensureLiqoNamespace(t *testing.T) {
	t.Helper()
	env := harness.Require(t)
	err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: liqoNS}})
	if !apierrors.IsAlreadyExists(err) {
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
	}
}

func TestKustomizationsApplyToTheAPIServer(t *testing.T) {
	env := harness.Require(t)
	ensureLiqoNamespace(t)
	// Applied one after the other (the overlay re-applies the default install and adds to it), and
	// removed only at the end: a deleted namespace stays Terminating here.
	for _, dir := range []string{defaultDir, identitySecretDir, policyDir} {
		b := kustomize(t, dir)
		t.Cleanup(func() { deleteAll(env.Client, b) })
		t.Run(dir, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(apply(t, b)).To(BeEmpty(), "the API server warns about unknown, duplicate or deprecated fields")
			for _, u := range b.raw {
				got := &unstructured.Unstructured{}
				got.SetGroupVersionKind(u.GroupVersionKind())
				g.Expect(env.Client.Get(t.Context(), client.ObjectKeyFromObject(u), got)).To(Succeed(), "getting %s", describe(u))
				g.Expect(got.GetLabels()).To(HaveKeyWithValue(nameLabel, appName))
			}
		})
	}
}

func TestDeploymentIsHardened(t *testing.T) {
	g := NewWithT(t)
	b := kustomize(t, defaultDir)
	d := one[*appsv1.Deployment](t, b, installNS, appName)
	g.Expect(d.Spec.Replicas).To(Equal(ptr.To[int32](2)))
	g.Expect(d.Spec.Template.Spec.ServiceAccountName).To(Equal(appName))
	g.Expect(d.Spec.Template.Labels).To(HaveKeyWithValue(nameLabel, appName))
	g.Expect(labels.SelectorFromSet(d.Spec.Selector.MatchLabels).Matches(labels.Set(d.Spec.Template.Labels))).To(BeTrue())

	pod := d.Spec.Template.Spec
	g.Expect(pod.SecurityContext.RunAsNonRoot).To(Equal(ptr.To(true)))
	g.Expect(pod.SecurityContext.SeccompProfile).To(Equal(&corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}))
	g.Expect(pod.Containers).To(HaveLen(1))
	c := pod.Containers[0]
	g.Expect(c.Image).To(Equal("ghcr.io/liqo-janitor/liqo-janitor:v0.1.0"))
	g.Expect(c.Args).To(ContainElement("--leader-elect=true"))
	g.Expect(c.Args).NotTo(ContainElement("--release-identity-secrets"))
	g.Expect(c.SecurityContext).To(Equal(&corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}))
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		g.Expect(c.Resources.Requests).To(HaveKey(name))
		g.Expect(c.Resources.Limits).To(HaveKey(name))
	}
	g.Expect(c.Resources.Limits.Memory().Cmp(resource.MustParse("128Mi"))).To(BeNumerically(">=", 0))

	// Probes on the health port (by name: healthProbe.port moves it): ready only once the webhook server serves TLS.
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: path, Port: intstr.FromString("health")}}}
	}
	g.Expect(c.ReadinessProbe).To(HaveField("ProbeHandler", probe("/readyz").ProbeHandler))
	g.Expect(c.LivenessProbe).To(HaveField("ProbeHandler", probe("/healthz").ProbeHandler))
	g.Expect(c.Args).To(ContainElement("--health-probe-bind-address=:8081"))

	// The default: the binary keeps its certificates in Secrets it reads through the API (nothing mounted,
	// nothing written to the read-only root filesystem) and injects the bundle into its configurations.
	g.Expect(c.Args).To(ContainElements("--cert-management=self", "--webhook-service="+webhookService,
		"--webhook-configuration="+appName))
	g.Expect(c.VolumeMounts).To(BeEmpty())
	g.Expect(pod.Volumes).To(BeEmpty())
	g.Expect(pod.HostNetwork).To(BeFalse())

	pdb := one[*policyv1.PodDisruptionBudget](t, b, installNS, appName)
	g.Expect(pdb.Spec.MinAvailable).To(Equal(ptr.To(intstr.FromInt32(1))))
	g.Expect(labels.SelectorFromSet(pdb.Spec.Selector.MatchLabels).Matches(labels.Set(d.Spec.Template.Labels))).To(BeTrue())
}

// TestDeploymentMountsCertManagersCertificate: with certManager.enabled the serving certificate is the
// Certificate's Secret, mounted read-only where --webhook-cert-dir points, and nothing else of it.
func TestDeploymentMountsCertManagersCertificate(t *testing.T) {
	g := NewWithT(t)
	b, _ := render(t, installNS, withCertManager)
	pod := one[*appsv1.Deployment](t, b, installNS, appName).Spec.Template.Spec
	c := pod.Containers[0]
	cert := one[*certmanagerv1.Certificate](t, b, installNS, servingCert)
	certDir := argValue(c.Args, certDirFlag)
	g.Expect(certDir).NotTo(BeEmpty(), "the Deployment sets %s", certDirFlag)
	mount := mountAt(c.VolumeMounts, certDir)
	g.Expect(mount).NotTo(BeNil(), "a volume is mounted at %s", certDir)
	g.Expect(mount.ReadOnly).To(BeTrue())
	g.Expect(pod.Volumes).To(ContainElement(corev1.Volume{Name: mount.Name, VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: cert.Spec.SecretName, Items: []corev1.KeyToPath{
			{Key: "tls.crt", Path: "tls.crt"}, {Key: "tls.key", Path: "tls.key"}}}}}), "what is served, and nothing else of the Secret")
	g.Expect(c.Args).To(ContainElement("--cert-management=cert-manager"))
}

// TestChartRunsInTheNodesNetworkOnRequest: hostNetwork puts the pods in the node's network (the API server
// calls the webhook at the node's address) and keeps them resolving the cluster's Services.
func TestChartRunsInTheNodesNetworkOnRequest(t *testing.T) {
	g := NewWithT(t)
	b, _ := render(t, installNS, map[string]any{"hostNetwork": true, "webhook": map[string]any{"port": 10443}})
	pod := one[*appsv1.Deployment](t, b, installNS, appName).Spec.Template.Spec
	g.Expect(pod.HostNetwork).To(BeTrue())
	g.Expect(pod.DNSPolicy).To(Equal(corev1.DNSClusterFirstWithHostNet))
	g.Expect(pod.Containers[0].Args).To(ContainElement("--webhook-port=10443"))
}

func TestServicesReachTheContainerPorts(t *testing.T) {
	custom := map[string]any{"webhook": map[string]any{"port": 10443}, "metrics": map[string]any{"port": 10080},
		"healthProbe": map[string]any{"port": 10081}}
	installs := map[string]struct {
		b                        built
		webhook, metrics, health int32
	}{
		"the default install":     {kustomize(t, defaultDir), 9443, 8080, 8081},
		"ports of the operator's": {func() built { b, _ := render(t, installNS, custom); return b }(), 10443, 10080, 10081},
	}
	for name, in := range installs {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			d := one[*appsv1.Deployment](t, in.b, installNS, appName)
			c := d.Spec.Template.Spec.Containers[0]
			for _, tc := range []struct {
				service          string
				port, targetPort int32
				flag             string
			}{
				{service: webhookService, port: 443, targetPort: in.webhook, flag: fmt.Sprintf("--webhook-port=%d", in.webhook)},
				{service: metricsService, port: in.metrics, targetPort: in.metrics, flag: fmt.Sprintf("--metrics-bind-address=:%d", in.metrics)},
			} {
				svc := one[*corev1.Service](t, in.b, installNS, tc.service)
				g.Expect(labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels))).To(BeTrue())
				g.Expect(svc.Spec.Ports).To(HaveLen(1))
				g.Expect(svc.Spec.Ports[0].Port).To(Equal(tc.port))
				g.Expect(containerPort(c, svc.Spec.Ports[0].TargetPort)).To(Equal(tc.targetPort), "%s reaches the port the binary listens on", tc.service)
				g.Expect(c.Args).To(ContainElement(tc.flag))
			}
			g.Expect(c.Args).To(ContainElement(fmt.Sprintf("--health-probe-bind-address=:%d", in.health)))
			for _, probe := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
				g.Expect(containerPort(c, probe.HTTPGet.Port)).To(Equal(in.health), "the kubelet probes the health port")
			}
		})
	}
}

// containerPort resolves a Service's or probe's port (a number, or the name of one of c's ports) to a
// number; 0 if the name is not c's.
func containerPort(c corev1.Container, port intstr.IntOrString) int32 {
	if port.Type == intstr.Int {
		return port.IntVal
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return p.ContainerPort
		}
	}
	return 0
}

func TestWebhookConfigurationsPointAtTheInstall(t *testing.T) {
	g := NewWithT(t)
	for _, cfg := range []client.Object{
		one[*admissionregistrationv1.MutatingWebhookConfiguration](t, kustomize(t, defaultDir), "", appName),
		one[*admissionregistrationv1.ValidatingWebhookConfiguration](t, kustomize(t, defaultDir), "", appName),
	} {
		g.Expect(cfg.GetAnnotations()).NotTo(HaveKey("cert-manager.io/inject-ca-from"), "by default the binary injects its bundle")
	}
	b, _ := render(t, installNS, withCertManager)
	svc := one[*corev1.Service](t, b, installNS, webhookService)
	cert := one[*certmanagerv1.Certificate](t, b, installNS, servingCert)
	g.Expect(cert.Spec.DNSNames).To(ConsistOf(
		svc.Name+"."+svc.Namespace+".svc", svc.Name+"."+svc.Namespace+".svc.cluster.local",
		appName+"-metrics."+svc.Namespace+".svc")) // /metrics is served with it too
	// selfSigned Issuer → CA Certificate → CA Issuer → serving Certificate: a renewal of the serving
	// certificate keeps the trust anchor, the CA the injector copies.
	caIssuer := one[*certmanagerv1.Issuer](t, b, installNS, cert.Spec.IssuerRef.Name)
	g.Expect(cert.Spec.IssuerRef.Kind).To(Equal("Issuer"))
	g.Expect(caIssuer.Spec.CA).NotTo(BeNil(), "the serving certificate is signed by a CA Issuer")
	ca := one[*certmanagerv1.Certificate](t, b, installNS, caCert)
	g.Expect(ca.Spec.IsCA).To(BeTrue())
	g.Expect(caIssuer.Spec.CA.SecretName).To(Equal(ca.Spec.SecretName))
	g.Expect(ca.Spec.IssuerRef.Kind).To(Equal("Issuer"))
	g.Expect(one[*certmanagerv1.Issuer](t, b, installNS, ca.Spec.IssuerRef.Name).Spec.SelfSigned).NotTo(BeNil())

	generatedMut, generatedVal := generatedWebhooks(t)
	mut := one[*admissionregistrationv1.MutatingWebhookConfiguration](t, b, "", appName)
	val := one[*admissionregistrationv1.ValidatingWebhookConfiguration](t, b, "", appName)
	for _, meta := range []metav1.Object{mut, val} {
		g.Expect(meta.GetAnnotations()).To(HaveKeyWithValue("cert-manager.io/inject-ca-from", ca.Namespace+"/"+ca.Name), "the CA, not the serving certificate")
		g.Expect(meta.GetLabels()).To(HaveKeyWithValue(nameLabel, appName), "the gate's messages select on this label")
	}
	// Everything but the Service reference is as generated (matchConditions, failurePolicy, timeouts,
	// sideEffects, rules, paths).
	wantRef := func(path *string) *admissionregistrationv1.ServiceReference {
		return &admissionregistrationv1.ServiceReference{Name: svc.Name, Namespace: svc.Namespace, Path: path}
	}
	g.Expect(mut.Webhooks).To(HaveLen(len(generatedMut.Webhooks)))
	for i, w := range generatedMut.Webhooks {
		g.Expect(w.MatchConditions).NotTo(BeEmpty())
		w.ClientConfig.Service = wantRef(w.ClientConfig.Service.Path)
		g.Expect(mut.Webhooks[i]).To(Equal(w))
	}
	g.Expect(val.Webhooks).To(HaveLen(len(generatedVal.Webhooks)))
	for i, w := range generatedVal.Webhooks {
		g.Expect(w.MatchConditions).NotTo(BeEmpty())
		w.ClientConfig.Service = wantRef(w.ClientConfig.Service.Path)
		g.Expect(val.Webhooks[i]).To(Equal(w))
	}
}

func TestIdentitySecretsComponentTurnsTheFlagOn(t *testing.T) {
	g := NewWithT(t)
	d := one[*appsv1.Deployment](t, kustomize(t, identitySecretDir), installNS, appName)
	args := d.Spec.Template.Spec.Containers[0].Args
	g.Expect(args).To(ContainElement("--release-identity-secrets"))
	g.Expect(args).To(ContainElement("--leader-elect=true"), "the component adds to the args, it does not replace them")
}

// generatedWebhooks reads the configurations `make manifests` generates, as they are before kustomize.
func generatedWebhooks(t *testing.T) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	t.Helper()
	mut, val, err := harness.GeneratedWebhooks(repoRoot(t))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return mut, val
}

// argValue returns the value of a --flag=value argument, or "" if it is not set.
func argValue(args []string, prefix string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, prefix); ok {
			return v
		}
	}
	return ""
}

func mountAt(mounts []corev1.VolumeMount, path string) *corev1.VolumeMount {
	for i := range mounts {
		if mounts[i].MountPath == path {
			return &mounts[i]
		}
	}
	return nil
}
