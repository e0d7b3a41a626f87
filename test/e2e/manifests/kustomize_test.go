package manifests_test

import (
	"fmt"
	"path/filepath"
	"testing"

	certmanagerv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	. "github.com/onsi/gomega"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/manifests"
)

// The kustomizations under test, relative to the repository root.
const (
	defaultDir        = "manifests/default"
	policyDir         = "manifests/policy"
	identitySecretDir = "test/e2e/manifests/testdata/identity-secrets" // an overlay using the opt-in component
)

// Names the install gives its objects (liqojanitor.Name, or it and a suffix); the tests check every
// reference between them.
const (
	installNS      = manifests.ReleaseNamespace
	liqoNS         = "liqo"
	appName        = liqojanitor.Name
	nameLabel      = "app.kubernetes.io/name"
	policyName     = appName + "-mark-unreachable"
	webhookService = appName + "-webhook"
	metricsService = appName + "-metrics"
	servingCert    = appName + "-serving-cert"
	caCert         = appName + "-ca"
	leaderElection = appName + "-leader-election"
	fieldOwner     = appName + "-install-test"
	certDirFlag    = "--webhook-cert-dir="
)

// decoder decodes strictly (unknown or duplicate fields fail) into Kubernetes, cert-manager, Prometheus
// Operator and Liqo types; a kind none of them knows fails too.
var decoder = func() runtime.Decoder {
	s := runtime.NewScheme()
	utilruntime.Must(liqojanitor.AddToScheme(s))
	utilruntime.Must(certmanagerv1.AddToScheme(s))
	utilruntime.Must(monitoringv1.AddToScheme(s))
	return serializer.NewCodecFactory(s, serializer.EnableStrict).UniversalDeserializer()
}()

// built is the output of one kustomization, in the order `kubectl apply -k` applies it.
type built struct {
	raw     []*unstructured.Unstructured // what is sent to the API server
	objects []client.Object              // the same objects, decoded into their Go types
}

// kustomize builds dir (relative to the repository root) as `kubectl apply -k` does: builtin plugins only,
// files loaded from inside the kustomization roots only, legacy resource order unless the kustomization
// sets its own.
func kustomize(t *testing.T, dir string) built {
	t.Helper()
	g := NewWithT(t)
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionUnspecified
	resMap, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), filepath.Join(repoRoot(t), dir))
	g.Expect(err).NotTo(HaveOccurred(), "kustomize build %s", dir)
	var b built
	for _, r := range resMap.Resources() {
		data, err := r.MarshalJSON()
		g.Expect(err).NotTo(HaveOccurred())
		u := &unstructured.Unstructured{}
		g.Expect(u.UnmarshalJSON(data)).To(Succeed())
		b.add(t, u, data, dir)
	}
	return b
}

// add decodes one object (data, already read into u) strictly into its Go type and appends it.
func (b *built) add(t *testing.T, u *unstructured.Unstructured, data []byte, source string) {
	t.Helper()
	g := NewWithT(t)
	obj, _, err := decoder.Decode(data, nil, nil)
	g.Expect(err).NotTo(HaveOccurred(), "decoding %s from %s", describe(u), source)
	typed, ok := obj.(client.Object)
	g.Expect(ok).To(BeTrue(), "%s from %s is not an object", describe(u), source)
	b.raw = append(b.raw, u)
	b.objects = append(b.objects, typed)
}

// describe names an object as "Kind namespace/name" (no namespace for cluster-scoped objects).
func describe(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetKind() + " " + u.GetName()
	}
	return fmt.Sprintf("%s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
}

// all returns the objects of type T.
func all[T client.Object](b built) []T {
	var out []T
	for _, o := range b.objects {
		if typed, ok := o.(T); ok {
			out = append(out, typed)
		}
	}
	return out
}

// one returns the object of type T with the given namespace and name, failing the test if there is none.
func one[T client.Object](t *testing.T, b built, namespace, name string) T {
	t.Helper()
	for _, o := range all[T](b) {
		if o.GetNamespace() == namespace && o.GetName() == name {
			return o
		}
	}
	var zero T
	t.Fatalf("no %T %s/%s in the build", zero, namespace, name)
	return zero
}

// defaultInstall lists every object of manifests/default: all namespaced ones in the install namespace,
// except the Role and RoleBinding that read Liqo's cluster-ID ConfigMap, which live in Liqo's namespace.
var defaultInstall = []string{
	"Namespace " + installNS,
	"ServiceAccount " + installNS + "/" + appName,
	"ClusterRole " + appName,
	"ClusterRoleBinding " + appName,
	"Role " + liqoNS + "/" + appName,
	"RoleBinding " + liqoNS + "/" + appName,
	"Role " + installNS + "/" + leaderElection,
	"RoleBinding " + installNS + "/" + leaderElection,
	// the janitor's own ConfigMaps: the janitor-wide brake and its records (janitor rules 14, 16)
	"Role " + installNS + "/" + appName + "-brake",
	"RoleBinding " + installNS + "/" + appName + "-brake",
	// the providers' fence credentials, which the fence renewer lists (janitor/fencerenew)
	"Role " + installNS + "/" + appName + "-fence-credentials",
	"RoleBinding " + installNS + "/" + appName + "-fence-credentials",
	"ClusterRole " + liqojanitor.MarkRoleName,
	"ClusterRole " + appName + ":metrics-reader",
	// the kubectl plugin's way to the janitor's namespace, aggregated into view
	"ClusterRole " + appName + ":plugin",
	"Deployment " + installNS + "/" + appName,
	"PodDisruptionBudget " + installNS + "/" + appName,
	"Service " + installNS + "/" + webhookService,
	"Service " + installNS + "/" + metricsService,
	// the binary's own certificates (certManager.enabled=false, the default)
	"Role " + installNS + "/" + appName + "-certs",
	"RoleBinding " + installNS + "/" + appName + "-certs",
	"ClusterRole " + appName + "-certs",
	"ClusterRoleBinding " + appName + "-certs",
	"ValidatingAdmissionPolicy " + eventsPolicy,
	"ValidatingAdmissionPolicyBinding " + eventsPolicy,
	"ValidatingAdmissionPolicy " + certsPolicy,
	"ValidatingAdmissionPolicyBinding " + certsPolicy,
	// the gate's fallback, on by default (policy.enabled) where the API server serves it
	"ValidatingAdmissionPolicy " + policyName,
	"ValidatingAdmissionPolicyBinding " + policyName,
	"MutatingWebhookConfiguration " + appName,
	"ValidatingWebhookConfiguration " + appName,
}

func TestKustomizationsBuildIntoKnownTypes(t *testing.T) {
	tests := map[string]struct {
		dir  string
		want []string
	}{
		"the default install": {dir: defaultDir, want: defaultInstall},
		"an overlay with the identity-secrets component adds the Secret RBAC": {
			dir: identitySecretDir,
			want: append([]string{
				"ClusterRole " + appName + ":identity-secrets",
				"ClusterRoleBinding " + appName + ":identity-secrets",
				"ValidatingAdmissionPolicy " + identityPolicy,
				"ValidatingAdmissionPolicyBinding " + identityPolicy,
			}, defaultInstall...),
		},
		"the policy": {dir: policyDir, want: []string{
			"ValidatingAdmissionPolicy " + policyName,
			"ValidatingAdmissionPolicyBinding " + policyName,
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			b := kustomize(t, tc.dir)
			var got []string
			for _, u := range b.raw {
				got = append(got, describe(u))
				g.Expect(u.GetLabels()).To(HaveKeyWithValue(nameLabel, appName), "labels of %s", describe(u))
			}
			g.Expect(got).To(ConsistOf(tc.want))
		})
	}
}

func TestDefaultInstallAppliesNamespaceFirstAndWebhooksLast(t *testing.T) {
	g := NewWithT(t)
	b := kustomize(t, defaultDir)
	// kubectl applies in this order: namespaced objects need their namespace, and the webhook
	// configurations come last so that they never point at a Service that does not exist yet.
	g.Expect(describe(b.raw[0])).To(Equal("Namespace " + installNS))
	last := b.raw[len(b.raw)-2:]
	g.Expect([]string{last[0].GetKind(), last[1].GetKind()}).To(ConsistOf(
		"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"))
}
