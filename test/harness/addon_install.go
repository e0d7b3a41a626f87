package harness

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// Install is what a replica of the binary takes from an install of the chart, as a pod of its Deployment
// would: the ServiceAccount it authenticates as, and the container whose arguments and environment it
// runs with.
type Install struct {
	// Namespace is the release namespace: the Deployment's, so a pod's own (what it reads from its
	// ServiceAccount's namespace file, and what the downward API's metadata.namespace gives).
	Namespace string
	// ServiceAccount names the Deployment's ServiceAccount, in Namespace.
	ServiceAccount string
	// Container is the Deployment's liqo-janitor container.
	Container corev1.Container
}

// User is the username the API server knows the Install's ServiceAccount by.
func (inst *Install) User() string { return serviceAccountUser(inst.Namespace, inst.ServiceAccount) }

func serviceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// InstallOf is the Install a Deployment of the chart runs its pods with (e.g. one a test installed with
// Helm, with values of its own); its RBAC is the test's to apply. The binary's container is the one named
// liqo-janitor (the consumer's Deployment), or else the only one (the provider fence's).
func InstallOf(dep *appsv1.Deployment) (*Install, error) {
	containers := dep.Spec.Template.Spec.Containers
	i := 0
	for i < len(containers) && containers[i].Name != liqojanitor.Name {
		i++
	}
	if i == len(containers) && len(containers) == 1 {
		i = 0
	}
	if i == len(containers) {
		return nil, fmt.Errorf("the Deployment %s/%s has no container %s", dep.Namespace, dep.Name, liqojanitor.Name)
	}
	sa := dep.Spec.Template.Spec.ServiceAccountName
	if sa == "" {
		sa = "default" // what the API server gives a pod that names none
	}
	return &Install{Namespace: dep.Namespace, ServiceAccount: sa, Container: *containers[i].DeepCopy()}, nil
}

// installedKinds are the kinds of the rendered install DefaultInstall applies: who the binary is and what
// it may do. The rest (webhook configurations, policies, Services, certificates) is for the tests that
// register or apply them.
var installedKinds = map[string]bool{"Namespace": true, "ServiceAccount": true, "ClusterRole": true,
	"ClusterRoleBinding": true, "Role": true, "RoleBinding": true}

// harnessFieldOwner is the field manager of what the harness applies.
const harnessFieldOwner = "liqo-janitor-harness"

// DefaultInstall applies, once per Env, the rendered install's (InstallFile: the chart with its defaults)
// namespace, ServiceAccount, ClusterRoles, ClusterRoleBindings, Roles and RoleBindings, creating the
// namespaces its Roles live in (Liqo's, which Liqo's chart makes) when missing, and returns its Install:
// what StartReplica runs the binary as and with. A permission the code needs and the chart lacks then
// fails the test that needs it, and the test package in any case (RBACDenials).
func (e *Env) DefaultInstall() (*Install, error) {
	e.installOnce.Do(func() { e.install, e.installErr = e.applyInstall(context.Background(), InstallFile) })
	return e.install, e.installErr
}

// ProviderFenceInstallFile is the rendered install of the provider fence alone
// (manifests.ProviderFenceInstallFile).
const ProviderFenceInstallFile = "manifests/provider-fence/install.yaml"

// ProviderFenceInstall applies, once per Env, what the provider-only install (ProviderFenceInstallFile)
// says the provider fence is and may do, as DefaultInstall does the janitor's, and returns its Install.
func (e *Env) ProviderFenceInstall() (*Install, error) {
	e.fenceInstallOnce.Do(func() {
		e.fenceInstall, e.fenceInstallErr = e.applyInstall(context.Background(), ProviderFenceInstallFile)
	})
	return e.fenceInstall, e.fenceInstallErr
}

// applyInstall applies the RBAC of a rendered install file and returns the Install of its Deployment.
func (e *Env) applyInstall(ctx context.Context, file string) (*Install, error) {
	docs, err := e.documents(file)
	if err != nil {
		return nil, err
	}
	var inst *Install
	for _, u := range docs {
		if u.GetKind() != "Deployment" {
			continue
		}
		dep := &appsv1.Deployment{}
		if err := fromUnstructured(u, dep); err != nil {
			return nil, err
		}
		if inst, err = InstallOf(dep); err != nil {
			return nil, err
		}
	}
	if inst == nil {
		return nil, fmt.Errorf("%s has no Deployment: run make manifests", file)
	}
	return inst, e.applyRBAC(ctx, file, docs)
}

// IdentitySecretsFile is the opt-in kustomize component that grants the janitor the Secrets it releases
// with --release-identity-secrets (rendered from the chart's identitySecrets.enabled).
const IdentitySecretsFile = "manifests/components/identity-secrets/identity-secrets.yaml"

// InstallIdentitySecrets applies, once per Env, the RBAC of the identity-Secrets component
// (IdentitySecretsFile) over DefaultInstall's: what an install that releases identity Secrets grants.
func (e *Env) InstallIdentitySecrets() error {
	if _, err := e.DefaultInstall(); err != nil {
		return err
	}
	e.identitySecretsOnce.Do(func() {
		docs, err := e.documents(IdentitySecretsFile)
		if err == nil {
			err = e.applyRBAC(context.Background(), IdentitySecretsFile, docs)
		}
		e.identitySecretsErr = err
	})
	return e.identitySecretsErr
}

// applyRBAC applies the objects of file (docs) that say who the binary is and what it may do
// (installedKinds), creating the namespaces they live in when missing (Liqo's, which Liqo's chart makes).
func (e *Env) applyRBAC(ctx context.Context, file string, docs []*unstructured.Unstructured) error {
	for _, u := range docs {
		if !installedKinds[u.GetKind()] {
			continue
		}
		if ns := u.GetNamespace(); ns != "" {
			if err := ensureNamespace(ctx, e.Client, ns); err != nil {
				return err
			}
		}
		if err := e.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
			client.FieldOwner(harnessFieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s from %s: %w", u.GetKind(), describe(u), file, err)
		}
	}
	return nil
}

// documents reads every object of a rendered file of the repository (InstallFile, IdentitySecretsFile).
func (e *Env) documents(file string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(filepath.Join(e.Root, file))
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(string(data), "\n---\n") {
		obj := map[string]any{}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return nil, fmt.Errorf("reading %s: %w", file, err)
		}
		if len(obj) == 0 { // comments only
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
	return out, nil
}

// fromUnstructured reads u into obj, strictly (an unknown field fails).
func fromUnstructured(u *unstructured.Unstructured, obj client.Object) error {
	data, err := yaml.Marshal(u.Object)
	if err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		return fmt.Errorf("reading %s %s: %w", u.GetKind(), describe(u), err)
	}
	return nil
}

func describe(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return ns + "/" + u.GetName()
	}
	return u.GetName()
}

// ensureNamespace creates namespace ns unless it exists.
func ensureNamespace(ctx context.Context, c client.Client, ns string) error {
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	return nil
}

// OwnNamespace creates a fresh namespace for one test holding what the rendered install grants its
// ServiceAccount in the release namespace (its Roles there, bound to the same ServiceAccount): the Lease,
// the brake and the records of replicas that must not share the release namespace's (pass it as
// --namespace, the janitor's own namespace, where the Lease is too). It is deleted when the test
// ends.
func (e *Env) OwnNamespace(tb testing.TB) string {
	tb.Helper()
	ns := e.Namespace(tb)
	if err := e.grantOwnNamespace(context.Background(), ns); err != nil {
		tb.Fatal(err)
	}
	return ns
}

// grantOwnNamespace applies into ns what the rendered install grants its ServiceAccount in the release
// namespace (OwnNamespace).
func (e *Env) grantOwnNamespace(ctx context.Context, ns string) error {
	inst, err := e.DefaultInstall()
	if err != nil {
		return fmt.Errorf("applying the install: %w", err)
	}
	docs, err := e.documents(InstallFile)
	if err != nil {
		return err
	}
	for _, u := range docs {
		if (u.GetKind() != "Role" && u.GetKind() != "RoleBinding") || u.GetNamespace() != inst.Namespace {
			continue
		}
		u = u.DeepCopy()
		u.SetNamespace(ns)
		if err := e.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
			client.FieldOwner(harnessFieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s of the install into %s: %w", u.GetKind(), u.GetName(), ns, err)
		}
	}
	return nil
}

// janitorNamespace creates a fresh namespace of the janitor's own, granted as OwnNamespace grants one, for
// a janitor started without Options.Namespace (StartJanitor): its records and brake are its alone.
func (e *Env) janitorNamespace(ctx context.Context) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "janitor-"}}
	if err := e.Client.Create(ctx, ns); err != nil {
		return "", fmt.Errorf("creating the janitor's namespace: %w", err)
	}
	return ns.Name, e.grantOwnNamespace(ctx, ns.Name)
}

// serviceAccountTokenExpiry is how long a token the harness requests for a ServiceAccount lasts: longer
// than any test run (the API server of the harness sets no --service-account-max-token-expiration), and
// than a demo kept running (`make demo KEEP=1`) is explored for.
const serviceAccountTokenExpiry = 7 * 24 * time.Hour

// ServiceAccountConfig is a rest.Config for the API server that authenticates as ServiceAccount
// namespace/name with a token of the TokenRequest API, as the kubelet mounts into a pod. The refusals by
// RBAC it receives are RBACDenials.
func (e *Env) ServiceAccountConfig(namespace, name string) (*rest.Config, error) {
	return e.serviceAccountConfig(namespace, name, nil)
}

// serviceAccountConfig is ServiceAccountConfig with a token bound to an object (a pod, as the kubelet's
// projected tokens are), or to nothing when bound is nil.
func (e *Env) serviceAccountConfig(namespace, name string, bound *authenticationv1.BoundObjectReference) (*rest.Config, error) {
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return nil, err
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(serviceAccountTokenExpiry.Seconds())),
			BoundObjectRef: bound},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("requesting a token of ServiceAccount %s/%s: %w", namespace, name, err)
	}
	user := serviceAccountUser(namespace, name)
	return &rest.Config{Host: e.Config.Host, APIPath: e.Config.APIPath, BearerToken: tr.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: e.Config.CAData, ServerName: e.Config.ServerName},
		// every refusal by RBAC is a permission the code needs and the install lacks: Run fails on one
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
			return denialRecorder{next: rt, record: func(body []byte) { e.recordDenials(user, body) }}
		}}, nil
}

// ServiceAccountKubeconfig writes a kubeconfig file for ServiceAccountConfig(namespace, name), e.g. for
// the binary, into the harness's directory, and returns its path.
func (e *Env) ServiceAccountKubeconfig(namespace, name string) (string, error) {
	cfg, err := e.ServiceAccountConfig(namespace, name)
	if err != nil {
		return "", err
	}
	user := serviceAccountUser(namespace, name)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["harness"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData, TLSServerName: cfg.ServerName}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["harness"] = &clientcmdapi.Context{Cluster: "harness", AuthInfo: user}
	kc.CurrentContext = "harness"
	f, err := os.CreateTemp(e.dir, namespace+"-"+name+"-*.kubeconfig")
	if err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	if err := clientcmd.WriteToFile(*kc, f.Name()); err != nil {
		return "", fmt.Errorf("writing the kubeconfig of ServiceAccount %s/%s: %w", namespace, name, err)
	}
	return f.Name(), nil
}

// processEnv is the container's environment as a process on this machine gets it: literal values as
// they are, and what the downward API would give from the pod (its namespace, name and ServiceAccount)
// by hand. A source the harness cannot stand in for (a Secret, a ConfigMap, a resource field) is an error.
func (inst *Install) processEnv(podName string) ([]string, error) {
	if len(inst.Container.EnvFrom) > 0 {
		return nil, errors.New("the container takes environment variables from a Secret or ConfigMap (envFrom), which the harness does not give")
	}
	var env []string
	for _, v := range inst.Container.Env {
		value := v.Value
		switch {
		case v.ValueFrom == nil:
		case v.ValueFrom.FieldRef != nil && v.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			value = inst.Namespace
		case v.ValueFrom.FieldRef != nil && v.ValueFrom.FieldRef.FieldPath == "metadata.name":
			value = podName
		case v.ValueFrom.FieldRef != nil && v.ValueFrom.FieldRef.FieldPath == "spec.serviceAccountName":
			value = inst.ServiceAccount
		default:
			return nil, fmt.Errorf("the container's environment variable %s comes from a source the harness does not give", v.Name)
		}
		env = append(env, v.Name+"="+value)
	}
	return env, nil
}
