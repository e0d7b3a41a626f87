package fence

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// remoteControlPlaneRole is where Liqo says what a consumer's control-plane identity may do on the
// provider: the ClusterRole deployments/liqo/files/liqo-remote-controlplane-ClusterRole.yaml (the same in
// v1.0.3, v1.1.0 and v1.2.0), bound in the consumer's tenant namespace there by the tenant controller
// (pkg/liqo-controller-manager/authentication/tenant-controller/tenant_controller.go, "remote-controlplane"):
// Renews, ResourceSlices and NamespaceMaps in that namespace, nothing else; ShadowPods are written by the
// ResourceSlice identities' virtual kubelets, in the remote namespaces only.
const remoteControlPlaneRole = "liqo-remote-controlplane (deployments/liqo/files/liqo-remote-controlplane-ClusterRole.yaml)"

// providerConn is the provider's API server, and how fence reaches it.
type providerConn struct {
	c    client.Client
	host string
	// via is what the plan says of the credentials: the file, or the identity Secret.
	via string
	// identity: the credentials are the consumer's control-plane identity, not the operator's.
	identity bool
	// remoteTenant is the consumer's tenant namespace on the provider, as the identity Secret names it.
	remoteTenant string
}

// The client rate limits of fence's connection to the provider.
const (
	providerQPS   = 100
	providerBurst = 200
)

func newProviderConn(cfg *rest.Config, via string) (*providerConn, error) {
	cfg = rest.CopyConfig(cfg)
	// One delete per object this consumer left there: at client-go's default 5 requests a second, 400
	// ShadowPods took 80 s; the provider's API server is the limit to respect, not the plugin's.
	cfg.QPS, cfg.Burst = providerQPS, providerBurst
	c, err := client.New(cfg, client.Options{Scheme: liqojanitor.NewScheme()})
	if err != nil {
		return nil, fmt.Errorf("connecting to the provider (%s): %w", via, err)
	}
	return &providerConn{c: c, host: cfg.Host, via: via}, nil
}

// connectProvider reaches the provider with --provider-kubeconfig, or else with the consumer's
// control-plane identity for it — only once its server is the API server the janitor kept (k) and its
// certificate verified against the kept CA, before anything is read there (kept.go).
func connectProvider(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster, path string, k *kept) (*providerConn, error) {
	var cfg *rest.Config
	var via, remoteTenant string
	identity := path == ""
	if identity {
		secret, err := identitySecret(ctx, c, fc)
		if err != nil {
			return nil, err
		}
		if cfg, err = identityConfig(fc, secret); err != nil {
			return nil, err
		}
		via = "the control-plane identity of Secret " + output.Printable(secret.Namespace+"/"+secret.Name)
		remoteTenant = secret.Annotations[liqojanitor.RemoteTenantNamespaceAnnotation]
	} else {
		var err error
		if cfg, err = clientcmd.BuildConfigFromFlags("", path); err != nil {
			return nil, fmt.Errorf("reading --provider-kubeconfig %s: %w", path, err)
		}
		via = "--provider-kubeconfig " + path
	}
	cfg, err := k.pin(cfg, via, identity)
	if err != nil {
		return nil, err
	}
	if err := k.verify(ctx, cfg, via); err != nil {
		return nil, err
	}
	p, err := newProviderConn(cfg, via)
	if err != nil {
		return nil, err
	}
	p.identity, p.remoteTenant = identity, remoteTenant
	return p, nil
}

// identityConfig is the REST config of the consumer's control-plane identity Secret (identitySecret),
// whose data key "kubeconfig" (consts.KubeconfigSecretField, pkg/consts/authentication.go; read by
// kubeconfig.BuildConfigFromSecret, pkg/utils/kubeconfig/restcfg.go, for the crdReplicator and the identity
// manager, in v1.0.3, v1.1.0 and v1.2.0) holds a kubeconfig for the provider — used only with the inline
// credentials secretKubeconfig lets through.
func identityConfig(fc *liqov1beta1.ForeignCluster, secret *corev1.Secret) (*rest.Config, error) {
	name := output.Printable(secret.Namespace + "/" + secret.Name)
	if awsIdentity(secret) {
		return nil, fmt.Errorf("no --provider-kubeconfig, and Secret %s is an AWS IAM identity: Liqo gets its token from AWS "+
			"(identityManager.mutateIAMConfig), fence does not; nothing was read on the provider or written: %s", name, passKubeconfig(fc))
	}
	data, ok := secret.Data[liqojanitor.KubeconfigSecretKey]
	if !ok {
		return nil, fmt.Errorf("no --provider-kubeconfig, and Secret %s has no %q key: %s", name, liqojanitor.KubeconfigSecretKey, passKubeconfig(fc))
	}
	cfg, err := secretKubeconfig(data)
	if err != nil {
		return nil, output.Lines{
			fmt.Sprintf("no --provider-kubeconfig, and the kubeconfig in Secret %s (key %q) %s.", name, liqojanitor.KubeconfigSecretKey, output.Printable(err.Error())),
			"fence uses a kubeconfig it finds in the cluster only with inline credentials (a client certificate and key, or a token): " +
				"it never runs its exec or auth-provider credential plugins nor reads files it names, not even with --dry-run. " +
				"Nothing was run, read on the provider or written.",
			"Pass --provider-kubeconfig <file> with a kubeconfig of an admin of the provider " + output.Printable(string(fc.Spec.ClusterID)) + ".",
		}
	}
	return cfg, nil
}

// secretKubeconfig is the REST config of a kubeconfig found in a Secret of the cluster. Whoever may write
// that Secret wrote it, so its context in use may carry credentials only inline — a client certificate and
// key, or a token (and impersonation) — and nothing that makes the plugin run a program (exec), load an
// auth-provider plugin, or read a file on the operator's machine (token, certificate, key or CA files);
// basic authentication is no Liqo identity's either. It is checked before any client is built from it.
func secretKubeconfig(data []byte) (*rest.Config, error) {
	kc, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("is not a kubeconfig: %w", err)
	}
	kctx, ok := kc.Contexts[kc.CurrentContext]
	if !ok {
		return nil, fmt.Errorf("has no current context (%q)", kc.CurrentContext)
	}
	auth, cluster := kc.AuthInfos[kctx.AuthInfo], kc.Clusters[kctx.Cluster]
	if auth == nil || cluster == nil {
		return nil, fmt.Errorf("names in its current context %q a user or cluster it does not define", kc.CurrentContext)
	}
	if err := inlineCredentials(auth, cluster); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*kc, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("is not a usable kubeconfig: %w", err)
	}
	return cfg, nil
}

// inlineCredentials refuses the user and cluster of a kubeconfig found in the cluster unless their
// credentials are inline: a client certificate and key, or a token.
func inlineCredentials(auth *clientcmdapi.AuthInfo, cluster *clientcmdapi.Cluster) error {
	var refused []string
	if auth.Exec != nil {
		refused = append(refused, fmt.Sprintf("an exec credential plugin (command %q)", auth.Exec.Command))
	}
	if auth.AuthProvider != nil {
		refused = append(refused, fmt.Sprintf("an auth-provider plugin (%q)", auth.AuthProvider.Name))
	}
	for _, f := range []struct{ what, value string }{{"a token file", auth.TokenFile}, {"a client-certificate file", auth.ClientCertificate},
		{"a client-key file", auth.ClientKey}, {"a certificate-authority file", cluster.CertificateAuthority}} {
		if f.value != "" {
			refused = append(refused, fmt.Sprintf("%s (%s)", f.what, f.value))
		}
	}
	if auth.Username != "" || auth.Password != "" {
		refused = append(refused, "basic authentication")
	}
	if len(refused) > 0 {
		return fmt.Errorf("uses %s", strings.Join(refused, ", "))
	}
	if auth.Token == "" && (len(auth.ClientCertificateData) == 0 || len(auth.ClientKeyData) == 0) {
		return errors.New("carries no inline client certificate and key, nor token")
	}
	return nil
}

// awsIdentity is identityManager.isAwsIdentity (pkg/identityManager/certificate.go, v1.0.3, v1.1.0 and
// v1.2.0): a Secret with the five AWS keys (const.go) is an IAM identity, whose token Liqo gets from AWS.
func awsIdentity(secret *corev1.Secret) bool {
	for _, k := range []string{"awsAccessKeyID", "awsSecretAccessKey", "awsRegion", "awsEksClusterID", "awsIamUserArn"} {
		if _, ok := secret.Data[k]; !ok {
			return false
		}
	}
	return true
}

// passKubeconfig is the next step when fence cannot use the consumer's identity.
func passKubeconfig(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("pass --provider-kubeconfig <file> with a kubeconfig of an admin of the provider %s", output.Printable(string(fc.Spec.ClusterID)))
}

// identitySecret is the consumer's control-plane identity Secret for fc's provider, found as Liqo finds
// it, through its Identity — never by its labels (anyone who may create Secrets in some namespace can
// label one as Liqo labels it):
//   - the cluster's tenant namespace: exactly one namespace labelled liqo.io/remote-cluster-id=<provider>
//     with liqo.io/tenant-namespace (tenantNamespaceManager.GetNamespace, pkg/tenantNamespace/namespaceManager.go);
//     a namespace is cluster-scoped, only a cluster admin (or Liqo) labels one;
//   - there, exactly one Identity (authentication.liqo.io) labelled liqo.io/remote-cluster-id=<provider>
//     of spec.type ControlPlane (getters.GetControlPlaneIdentityByClusterID, pkg/utils/getters/k8sGetters.go,
//     which Liqo's foreigncluster controller reads, core/foreigncluster-controller/status.go
//     handleAuthenticationModuleStatus);
//   - the Secret its status.kubeconfigSecretRef names, in its namespace (a LocalObjectReference,
//     apis/authentication/v1beta1/identity_types.go IdentityStatus; read by getters.GetKubeconfigSecretFromIdentity,
//     written by the identity controller for the Secret it creates and owns,
//     authentication/identity-controller/identity_controller.go handleIdentityStatus, forge.KubeconfigSecret
//     and MutateKubeconfigSecret, authentication/forge/kubeconfig.go).
//
// The same in Liqo v1.0.3, v1.1.0 and v1.2.0. None or several of either, and fence refuses, saying so.
func identitySecret(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster) (*corev1.Secret, error) {
	ns, err := tenantNamespace(ctx, c, fc)
	if err != nil {
		return nil, err
	}
	identity, err := controlPlaneIdentity(ctx, c, fc, ns)
	if err != nil {
		return nil, err
	}
	name := output.Printable(ns + "/" + identity.Name)
	ref := identity.Status.KubeconfigSecretRef
	if ref == nil || ref.Name == "" {
		return nil, fmt.Errorf("no --provider-kubeconfig, and Identity %s names no kubeconfig Secret yet (status.kubeconfigSecretRef): %s", name, passKubeconfig(fc))
	}
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, secret); err != nil {
		return nil, fmt.Errorf("no --provider-kubeconfig, and reading Secret %s/%s, which Identity %s names: %w; %s",
			output.Printable(ns), output.Printable(ref.Name), name, err, passKubeconfig(fc))
	}
	return secret, nil
}

// tenantNamespace is fc's provider's tenant namespace on this consumer, as Liqo finds it.
func tenantNamespace(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster) (string, error) {
	id := string(fc.Spec.ClusterID)
	selector := fmt.Sprintf("%s=%s,%s", liqojanitor.RemoteClusterIDLabel, output.Printable(id), liqojanitor.TenantNamespaceLabel)
	list, err := liqojanitor.TenantNamespaces(ctx, c, id)
	switch {
	case apierrors.IsForbidden(err):
		return "", fmt.Errorf("no --provider-kubeconfig, and you may not list namespaces (fence finds the tenant namespace of %s "+
			"labelled %s, as Liqo does): %s", output.Printable(id), selector, passKubeconfig(fc))
	case err != nil:
		return "", fmt.Errorf("listing the namespaces labelled %s: %w", selector, err)
	case len(list.Items) == 0:
		return "", fmt.Errorf("no --provider-kubeconfig, and no tenant namespace of %s (labelled %s), where Liqo keeps its "+
			"control-plane Identity: %s", output.Printable(id), selector, passKubeconfig(fc))
	case len(list.Items) > 1:
		names := make([]string, 0, len(list.Items))
		for i := range list.Items {
			names = append(names, output.Printable(list.Items[i].Name))
		}
		return "", fmt.Errorf("no --provider-kubeconfig, and %d tenant namespaces of %s (%s), where Liqo takes exactly one "+
			"(tenantNamespaceManager.GetNamespace): nothing was read on the provider or written: %s",
			len(names), output.Printable(id), strings.Join(names, ", "), passKubeconfig(fc))
	}
	return list.Items[0].Name, nil
}

// controlPlaneIdentity is the one ControlPlane Identity of fc's provider in its tenant namespace ns.
func controlPlaneIdentity(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster, ns string) (*authv1beta1.Identity, error) {
	id := string(fc.Spec.ClusterID)
	var list authv1beta1.IdentityList
	if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{liqojanitor.RemoteClusterIDLabel: id}); err != nil {
		return nil, fmt.Errorf("no --provider-kubeconfig, and listing the Identities of tenant namespace %s failed: %w; %s",
			output.Printable(ns), err, passKubeconfig(fc))
	}
	var found []*authv1beta1.Identity
	for i := range list.Items {
		if it := &list.Items[i]; it.Spec.Type == authv1beta1.ControlPlaneIdentityType && (it.Spec.ClusterID == "" || string(it.Spec.ClusterID) == id) {
			found = append(found, it)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return nil, fmt.Errorf("no --provider-kubeconfig, and no ControlPlane Identity of %s in its tenant namespace %s (fence uses only "+
			"the Secret that Identity names, never one found by its labels): %s", output.Printable(id), output.Printable(ns), passKubeconfig(fc))
	}
	return nil, fmt.Errorf("no --provider-kubeconfig, and %d ControlPlane Identities of %s in tenant namespace %s, where Liqo takes exactly one "+
		"(GetControlPlaneIdentityByClusterID): nothing was read on the provider or written: %s", len(found), output.Printable(id), output.Printable(ns), passKubeconfig(fc))
}

// access is one SelfSubjectAccessReview on the provider.
type access struct {
	Verb      string `json:"verb"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Allowed   bool   `json:"allowed"`
	group     string
}

func (a access) String() string {
	where := "in every namespace"
	if a.Namespace != "" {
		where = "in namespace " + a.Namespace
	}
	may := "may"
	if !a.Allowed {
		may = "may NOT"
	}
	return fmt.Sprintf("%s %s %s %s", may, a.Verb, a.Resource, where)
}

// identityAccess asks the provider what the consumer's control-plane identity may do of what fence does.
func identityAccess(ctx context.Context, p *providerConn, all bool) ([]access, error) {
	checks := []access{{Verb: "list", Resource: "shadowpods", group: "offloading.liqo.io"},
		{Verb: "delete", Resource: "shadowpods", group: "offloading.liqo.io"}, {Verb: "list", Resource: "pods"}}
	if all {
		for _, r := range []struct{ group, resource string }{{"authentication.liqo.io", "resourceslices"},
			{"offloading.liqo.io", "namespacemaps"}, {"authentication.liqo.io", "renews"}} {
			checks = append(checks, access{Verb: "delete", Resource: r.resource, Namespace: p.remoteTenant, group: r.group})
		}
	}
	for i := range checks {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: checks[i].Verb, Group: checks[i].group,
				Resource: checks[i].Resource, Namespace: checks[i].Namespace}}}
		if err := p.c.Create(ctx, review); err != nil {
			return nil, providerErr("asking what the control-plane identity may do (SelfSubjectAccessReview)", err)
		}
		checks[i].Allowed = review.Status.Allowed
	}
	return checks, nil
}

// checkIdentity shows what the consumer's control-plane identity may do on the provider, and refuses
// when it cannot stop the ShadowPods (as in Liqo it cannot).
func checkIdentity(ctx context.Context, w io.Writer, p *providerConn, all bool) error {
	checks, err := identityAccess(ctx, p, all)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "No --provider-kubeconfig: using %s. On the provider it:\n", output.Printable(p.via))
	var denied []string
	for _, a := range checks {
		fmt.Fprintf(w, "  %s\n", a)
		if !a.Allowed {
			denied = append(denied, a.Verb+" "+a.Resource)
		}
	}
	if len(denied) == 0 {
		return nil
	}
	return output.Lines{
		fmt.Sprintf("the consumer's control-plane identity may not %s on the provider: nothing was deleted or written.", strings.Join(denied, ", ")),
		"In Liqo it may delete only Renews, ResourceSlices and NamespaceMaps in its tenant namespace (ClusterRole " + remoteControlPlaneRole + ");",
		"ShadowPods are deletable by the ResourceSlice identities only, in the remote namespaces.",
		"Pass --provider-kubeconfig <file> with a kubeconfig of an admin of the provider.",
	}
}

// providerErr words a failed request to the provider.
func providerErr(what string, err error) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("on the provider, %s: %w; nothing more was deleted or written. Pass --provider-kubeconfig <file> with a "+
			"kubeconfig of an admin of the provider", what, err)
	}
	return fmt.Errorf("on the provider, %s: %w", what, err)
}
