package manifests_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/liqo-janitor/liqo-janitor/manifests"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
	"github.com/liqo-janitor/liqo-janitor/webhook/certs"
)

// certsPolicy is the ValidatingAdmissionPolicy that narrows the janitor's writes of its own certificates.
const certsPolicy = appName + "-certs"

// options are the chart's options that decide which policies and which certificate RBAC an install has.
type options struct{ certManager, identitySecrets, policy bool }

func (o options) values() map[string]any {
	return map[string]any{
		"certManager":     map[string]any{"enabled": o.certManager},
		"identitySecrets": map[string]any{"enabled": o.identitySecrets},
		"policy":          map[string]any{"enabled": o.policy},
	}
}

func (o options) String() string {
	return fmt.Sprintf("certManager=%t,identitySecrets=%t,policy=%t", o.certManager, o.identitySecrets, o.policy)
}

// ensureNamespace creates namespace ns unless it exists, as Helm's --create-namespace would (a namespace of
// the test's own: another test deletes the install namespace, which then stays Terminating here).
func ensureNamespace(t *testing.T, ns string) {
	t.Helper()
	env := harness.Require(t)
	err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if !apierrors.IsAlreadyExists(err) {
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
	}
}

// serviceAccountUser is the username of the chart's ServiceAccount installed into ns.
func serviceAccountUser(ns string) string { return "system:serviceaccount:" + ns + ":" + appName }

// TestChartOptionsCoexistOnTheAPIServer renders the chart with Helm's library under every combination of
// its certificate, identity-Secret and policy options, and applies it (for real, not a dry run) to the API
// server: every object is accepted without a warning, and the install has exactly the policies its options
// ask for (the certificates' policy in every one).
func TestChartOptionsCoexistOnTheAPIServer(t *testing.T) {
	env := harness.Require(t)
	ensureLiqoNamespace(t)
	const ns = "chart-options"
	ensureNamespace(t, ns)
	for _, certManager := range []bool{true, false} {
		for _, identitySecrets := range []bool{true, false} {
			for _, policy := range []bool{true, false} {
				o := options{certManager, identitySecrets, policy}
				t.Run(o.String(), func(t *testing.T) {
					g := NewWithT(t)
					b, _ := render(t, ns, o.values())
					t.Cleanup(func() { deleteAll(env.Client, b) })
					g.Expect(apply(t, b)).To(BeEmpty(), "the API server warns about unknown, duplicate or deprecated fields")
					var policies []string
					for _, p := range all[*admissionregistrationv1.ValidatingAdmissionPolicy](b) {
						g.Expect(env.Client.Get(t.Context(), client.ObjectKeyFromObject(p), &admissionregistrationv1.ValidatingAdmissionPolicy{})).To(Succeed())
						policies = append(policies, p.Name)
					}
					want := []string{eventsPolicy, certsPolicy}
					if identitySecrets {
						want = append(want, identityPolicy)
					}
					if policy {
						want = append(want, policyName)
					}
					g.Expect(policies).To(ConsistOf(want))
					var roles []string
					for _, r := range all[*rbacv1.Role](b) { // in ns
						roles = append(roles, r.Name)
					}
					g.Expect(slices.Contains(roles, "liqo-janitor-certs")).To(Equal(!certManager), "the certificates' RBAC without cert-manager only")
				})
			}
		}
	}
}

// TestPolicyFallbackIsOnByDefaultWhereTheClusterServesIt: the gate's fallback is rendered by default
// wherever ValidatingAdmissionPolicy is served (a client-only render for Kubernetes 1.30, as install.yaml is
// made, or a cluster whose API list names the kind), not where a cluster's API list lacks it, and not when
// turned off. Installed with Helm against the API server, Helm's discovery finds it served.
func TestPolicyFallbackIsOnByDefaultWhereTheClusterServesIt(t *testing.T) {
	const (
		webhookKind = "admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration"
		policyKind  = "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy"
	)
	tests := map[string]struct {
		values  map[string]any
		cluster manifests.Cluster
		want    bool
	}{
		"a client-only render for Kubernetes 1.30":           {want: true},
		"a client-only render for a later Kubernetes":        {cluster: manifests.Cluster{KubeVersion: "v1.34.0"}, want: true},
		"a cluster that lists ValidatingAdmissionPolicy":     {cluster: manifests.Cluster{APIVersions: []string{webhookKind, policyKind}}, want: true},
		"a cluster whose API list lacks it (API turned off)": {cluster: manifests.Cluster{APIVersions: []string{webhookKind}}},
		"turned off": {values: map[string]any{"policy": map[string]any{"enabled": false}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			r, err := manifests.RenderForCluster(t.Context(), installNS, tc.values, tc.cluster)
			g.Expect(err).NotTo(HaveOccurred())
			b := fromYAML(t, "the chart", r.Manifest)
			var names []string
			for _, p := range all[*admissionregistrationv1.ValidatingAdmissionPolicy](b) {
				names = append(names, p.Name)
			}
			if tc.want {
				g.Expect(names).To(ContainElement(policyName))
				g.Expect(all[*admissionregistrationv1.ValidatingAdmissionPolicyBinding](b)).To(ContainElement(HaveField("Name", policyName)))
			} else {
				g.Expect(names).NotTo(ContainElement(policyName))
			}
		})
	}
}

// TestSelfManagedCertificatesAndIdentitySecretsAsTheServiceAccount installs the chart with Helm's library
// with self-managed certificates and the identity-Secret opt-in (and the default policy fallback, which
// Helm finds served), then runs the real binary with the Deployment's own arguments as the chart's
// ServiceAccount (a token from the TokenRequest API): it creates its two certificate Secrets, injects the
// CA bundle and becomes ready, and renews a spoilt serving certificate (a patch of its Secret) — neither the
// identity-Secret policy nor the certificates' policy stands in its way.
func TestSelfManagedCertificatesAndIdentitySecretsAsTheServiceAccount(t *testing.T) {
	env := harness.Require(t)
	ensureLiqoNamespace(t)
	g := NewWithT(t)
	ctx := t.Context()
	const ns = "self-managed-certs"
	h := newHelmIn(t, ns)
	t.Cleanup(h.uninstall)
	h.install(map[string]any{"certManager": map[string]any{"enabled": false}, "identitySecrets": map[string]any{"enabled": true}})
	for _, name := range []string{policyName, identityPolicy, certsPolicy} {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, &admissionregistrationv1.ValidatingAdmissionPolicy{})).To(Succeed(), name)
	}

	dep := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: appName}, dep)).To(Succeed())
	inst, err := harness.InstallOf(dep)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inst.ServiceAccount).To(Equal(appName))
	g.Expect(inst.Container.Args).To(ContainElements("--cert-management=self", "--release-identity-secrets"))
	// as a pod of this release: its ServiceAccount, its container's arguments, ns as its own namespace
	r, err := env.StartReplicaOf(inst, "self-managed-identity-secrets", "--webhook-port="+freePort(t),
		"--cert-management=self", "--cert-check-interval=500ms") // the harness serves its own certificate unless told
	g.Expect(err).NotTo(HaveOccurred(), "the binary becomes ready as the chart's ServiceAccount")
	t.Cleanup(func() { _ = r.Terminate(30 * time.Second) })

	ca, serving := &corev1.Secret{}, &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: certs.CASecretName}, ca)).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: certs.CertSecretName}, serving)).To(Succeed())
	g.Expect(ca.Type).To(Equal(corev1.SecretTypeTLS))
	g.Expect(serving.Type).To(Equal(corev1.SecretTypeTLS))
	g.Expect(h.caBundle(g)).To(Equal(ca.Data["ca.crt"]), "the bundle injected")

	// A spoilt serving certificate is renewed: the binary patches its Secret, as at every renewal.
	spoilt := []byte("not a certificate")
	g.Expect(jsonPatch(ctx, env.Client, serving, map[string]any{"op": "replace", "path": "/data/tls.crt",
		"value": base64.StdEncoding.EncodeToString(spoilt)})).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &corev1.Secret{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(serving), got)).To(Succeed())
		g.Expect(got.Data["tls.crt"]).To(HavePrefix("-----BEGIN CERTIFICATE-----"))
	}).WithTimeout(30*time.Second).Should(Succeed(), "renewed by the binary (log: %s)", r.Log)
	log, err := os.ReadFile(r.Log)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(log)).NotTo(ContainSubstring("ValidatingAdmissionPolicy"), "no write of the binary was refused")

	// Exactly its two certificate Secrets are exempt from the identity-Secret policy: any other Secret in its
	// namespace (Helm's release Secret lives there) it may not change, though its role may patch Secrets.
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "not-its-certificate"}, Data: map[string][]byte{"k": []byte("v")}}
	g.Expect(env.Client.Create(ctx, other)).To(Succeed())
	expectRefusedByPolicy(g, jsonPatch(ctx, impersonate(t, serviceAccountUser(ns)), other,
		map[string]any{"op": "replace", "path": "/data/k", "value": base64.StdEncoding.EncodeToString([]byte("w"))}), identityPolicy, http.StatusForbidden)
}

// TestCertsPolicyNarrowsWhatTheServiceAccountWrites: with self-managed certificates, the janitor's
// ServiceAccount may create Secrets in its namespace (RBAC cannot narrow create by name); the policy lets
// it create only its two certificate Secrets, of type kubernetes.io/tls, change only their data, and change
// nothing of the gate's webhook configurations but their caBundle.
func TestCertsPolicyNarrowsWhatTheServiceAccountWrites(t *testing.T) {
	env := harness.Require(t)
	const ns = "certs-policy"
	ensureNamespace(t, ns)
	g := NewWithT(t)
	ctx := t.Context()
	values := options{certManager: false}.values()
	for _, tmpl := range []string{"templates/serviceaccount.yaml", "templates/certs-rbac.yaml", "templates/certs-policy.yaml", "templates/webhook.yaml"} {
		applyTemplateIn(t, ns, values, tmpl)
	}
	janitor := impersonate(t, serviceAccountUser(ns))

	secret := func(name string, typ corev1.SecretType) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: typ,
			Data: map[string][]byte{"tls.crt": []byte("crt"), "tls.key": []byte("key")}}
		if typ == corev1.SecretTypeServiceAccountToken {
			s.Annotations = map[string]string{corev1.ServiceAccountNameKey: appName}
			s.Data = nil
		}
		return s
	}
	// wait until the new policy is enforced (dry-run, so an early success changes nothing)
	g.Eventually(func(g Gomega) {
		expectRefusedByPolicy(g, janitor.Create(ctx, secret("not-a-certificate", corev1.SecretTypeTLS), client.DryRunAll),
			certsPolicy, http.StatusForbidden)
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

	refusedSecrets := map[string]struct {
		secret   *corev1.Secret
		fragment string
	}{
		"a Secret of another name": {secret("not-a-certificate", corev1.SecretTypeTLS),
			"may not create Secret " + ns + "/not-a-certificate: it creates only its webhook certificates"},
		"a service-account token of another name": {secret("janitor-token", corev1.SecretTypeServiceAccountToken),
			"may not create Secret " + ns + "/janitor-token"},
		"a service-account token named as its CA": {secret(certs.CASecretName, corev1.SecretTypeServiceAccountToken),
			"of type kubernetes.io/service-account-token: its webhook certificates are of type kubernetes.io/tls, and it never creates a service-account token"},
		"an Opaque Secret named as its serving certificate": {secret(certs.CertSecretName, corev1.SecretTypeOpaque),
			"of type Opaque"},
	}
	for name, tc := range refusedSecrets {
		t.Run("creating "+name, func(t *testing.T) {
			expectRefusedByPolicy(NewWithT(t), janitor.Create(t.Context(), tc.secret), certsPolicy, http.StatusForbidden, tc.fragment)
		})
	}

	// Its two certificate Secrets: created, their data changed; nothing else of them.
	for _, name := range []string{certs.CASecretName, certs.CertSecretName} {
		s := secret(name, corev1.SecretTypeTLS)
		g.Expect(janitor.Create(ctx, s)).To(Succeed(), "creating %s", name)
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), s) })
		g.Expect(jsonPatch(ctx, janitor, s, map[string]any{"op": "replace", "path": "/data/tls.crt", "value": "cmVuZXdlZA=="})).
			To(Succeed(), "renewing %s", name)
		expectRefusedByPolicy(g, jsonPatch(ctx, janitor, s, map[string]any{"op": "add", "path": "/metadata/labels", "value": map[string]string{"x": "y"}}),
			certsPolicy, http.StatusForbidden, "may change only the data of Secret "+ns+"/"+name)
	}

	// The webhook configurations: the caBundle of any webhook, nothing else.
	mut, val := &admissionregistrationv1.MutatingWebhookConfiguration{}, &admissionregistrationv1.ValidatingWebhookConfiguration{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: appName}, mut)).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: appName}, val)).To(Succeed())
	g.Expect(val.Webhooks).NotTo(BeEmpty())
	bundle := base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\n"))
	setBundle := func(i int) map[string]any {
		return map[string]any{"op": "add", "path": fmt.Sprintf("/webhooks/%d/clientConfig/caBundle", i), "value": bundle}
	}
	refusedPatches := map[string][]map[string]any{
		"failing open":                   {{"op": "replace", "path": "/webhooks/0/failurePolicy", "value": "Ignore"}},
		"failing open with the caBundle": {setBundle(0), {"op": "replace", "path": "/webhooks/0/failurePolicy", "value": "Ignore"}},
		"a longer timeout":               {{"op": "replace", "path": "/webhooks/0/timeoutSeconds", "value": 30}},
		"no match conditions":            {{"op": "remove", "path": "/webhooks/0/matchConditions"}},
		"another Service path":           {{"op": "replace", "path": "/webhooks/0/clientConfig/service/path", "value": "/elsewhere"}},
		"a URL instead of the Service": {{"op": "remove", "path": "/webhooks/0/clientConfig/service"},
			{"op": "add", "path": "/webhooks/0/clientConfig/url", "value": "https://attacker.example/validate"}},
		"an object selector": {{"op": "add", "path": "/webhooks/0/objectSelector",
			"value": map[string]any{"matchLabels": map[string]string{"never": "matches"}}}},
		"no rules":        {{"op": "replace", "path": "/webhooks/0/rules", "value": []any{}}},
		"a webhook less":  {{"op": "remove", "path": "/webhooks/0"}},
		"a label":         {{"op": "add", "path": "/metadata/labels/example.com~1x", "value": "y"}},
		"an annotation":   {{"op": "add", "path": "/metadata/annotations", "value": map[string]string{"cert-manager.io/inject-ca-from": "elsewhere/ca"}}},
		"a finalizer too": {setBundle(0), {"op": "add", "path": "/metadata/finalizers", "value": []string{"example.com/hold"}}},
	}
	for name, ops := range refusedPatches {
		t.Run("patching the ValidatingWebhookConfiguration: "+name, func(t *testing.T) {
			expectRefusedByPolicy(NewWithT(t), jsonPatch(t.Context(), janitor, val, ops...), certsPolicy, http.StatusForbidden,
				"may change nothing of ValidatingWebhookConfiguration "+appName+" but the caBundle of its webhooks")
		})
	}
	t.Run("patching the MutatingWebhookConfiguration: its reinvocation policy", func(t *testing.T) {
		expectRefusedByPolicy(NewWithT(t), jsonPatch(t.Context(), janitor, mut, setBundle(0),
			map[string]any{"op": "replace", "path": "/webhooks/0/reinvocationPolicy", "value": "Never"}), certsPolicy, http.StatusForbidden,
			"may change nothing of MutatingWebhookConfiguration "+appName)
	})
	// Beyond the chart's RBAC, as a widened role one day might: deleting or creating one, or injecting a
	// CA bundle into another configuration (the same webhooks under another name), is refused too.
	grantRole(t, "certs-widened", []rbacv1.PolicyRule{{APIGroups: []string{"admissionregistration.k8s.io"},
		Resources: []string{"validatingwebhookconfigurations"}, Verbs: []string{"create", "delete", "patch"}}}, serviceAccountUser(ns))
	other := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "not-the-gate"}, Webhooks: slices.Clone(val.Webhooks)}
	for i := range other.Webhooks { // never called: its webhooks match no object
		other.Webhooks[i].ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"certs-policy-test": "never"}}
	}
	g.Expect(env.Client.Create(ctx, other)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), other) })
	t.Run("deleting, creating or injecting into another webhook configuration", func(t *testing.T) {
		g := NewWithT(t)
		expectRefusedByPolicy(g, janitor.Delete(t.Context(), val.DeepCopy(), client.DryRunAll), certsPolicy, http.StatusForbidden,
			"may not delete ValidatingWebhookConfiguration "+appName)
		made := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "janitor-made"}}
		expectRefusedByPolicy(g, janitor.Create(t.Context(), made, client.DryRunAll), certsPolicy, http.StatusForbidden,
			"may not create ValidatingWebhookConfiguration janitor-made")
		expectRefusedByPolicy(g, jsonPatch(t.Context(), janitor, other, setBundle(0)), certsPolicy, http.StatusForbidden,
			"may not change ValidatingWebhookConfiguration not-the-gate: it injects the CA bundle only into the webhook configurations of the gate, "+appName)
	})

	// What the binary does: the caBundle of every webhook, in both configurations, under the resourceVersion read.
	for _, cfg := range []client.Object{val, mut} {
		ops := []map[string]any{{"op": "test", "path": "/metadata/resourceVersion", "value": cfg.GetResourceVersion()}}
		n := len(val.Webhooks)
		if cfg == mut {
			n = len(mut.Webhooks)
		}
		for i := range n {
			ops = append(ops, setBundle(i))
		}
		g.Expect(jsonPatch(ctx, janitor, cfg, ops...)).To(Succeed(), "injecting the CA bundle into %T", cfg)
	}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: appName}, val)).To(Succeed())
	g.Expect(val.Webhooks[0].ClientConfig.CABundle).To(Equal([]byte("-----BEGIN CERTIFICATE-----\n")))
}

// freePort returns a loopback port nothing listens on at the moment.
func freePort(t *testing.T) string {
	t.Helper()
	addr, err := harness.FreeLocalAddr()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	_, port, err := net.SplitHostPort(addr)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return port
}
