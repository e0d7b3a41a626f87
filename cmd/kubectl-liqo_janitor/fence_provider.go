package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"github.com/liqotech/liqo/pkg/consts"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
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
// control-plane identity for it.
func (e *env) connectProvider(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster, path string) (*providerConn, error) {
	if path == "" {
		return e.identityConn(ctx, c, fc)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("reading --provider-kubeconfig %s: %w", path, err)
	}
	return newProviderConn(cfg, "--provider-kubeconfig "+path)
}

// identityConn reaches the provider with the consumer's control-plane identity: the Secret labelled
// liqo.io/remote-cluster-id=<provider>, liqo.io/identity-type=ControlPlane in the consumer's tenant
// namespace, whose data key "kubeconfig" (consts.KubeconfigSecretField, pkg/consts/authentication.go; read
// there by the crdReplicator, internal/crdReplicator/crdReplicator-operator.go, and by
// pkg/utils/kubeconfig/restcfg.go, in v1.0.3, v1.1.0 and v1.2.0) holds a kubeconfig for the provider.
func (e *env) identityConn(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster) (*providerConn, error) {
	secret, err := identitySecret(ctx, c, fc)
	if err != nil {
		return nil, err
	}
	data := secret.Data[consts.KubeconfigSecretField]
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, fmt.Errorf("the %q key of Secret %s/%s is not a kubeconfig: %w; %s", consts.KubeconfigSecretField,
			secret.Namespace, secret.Name, err, passKubeconfig(fc))
	}
	p, err := newProviderConn(cfg, fmt.Sprintf("the control-plane identity of Secret %s/%s", secret.Namespace, secret.Name))
	if err != nil {
		return nil, err
	}
	p.identity, p.remoteTenant = true, secret.Annotations[consts.RemoteTenantNamespaceAnnotKey]
	return p, nil
}

// passKubeconfig is the next step when fence cannot use the consumer's identity.
func passKubeconfig(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("pass --provider-kubeconfig <file> with a kubeconfig of an admin of the provider %s", printable(string(fc.Spec.ClusterID)))
}

func identitySecret(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster) (*corev1.Secret, error) {
	id := string(fc.Spec.ClusterID)
	ns := foreignClusterTenant(fc)
	if ns == "" {
		return nil, fmt.Errorf("no --provider-kubeconfig, and ForeignCluster %s names no tenant namespace (status.tenantNamespace.local) "+
			"where its control-plane identity would be: %s", printable(fc.Name), passKubeconfig(fc))
	}
	var list corev1.SecretList
	err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{
		liqojanitor.RemoteClusterIDLabel: id, liqojanitor.IdentityTypeLabel: liqojanitor.ControlPlaneIdentity})
	switch {
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("no --provider-kubeconfig, and you may not read the control-plane identity Secret in namespace %s: %s", ns, passKubeconfig(fc))
	case err != nil:
		return nil, fmt.Errorf("listing Secrets in namespace %s: %w", ns, err)
	case len(list.Items) == 0:
		return nil, fmt.Errorf("no --provider-kubeconfig, and no Secret labelled %s=%s,%s=%s in namespace %s: %s",
			liqojanitor.RemoteClusterIDLabel, printable(id), liqojanitor.IdentityTypeLabel, liqojanitor.ControlPlaneIdentity, ns, passKubeconfig(fc))
	}
	return &list.Items[0], nil
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
	fmt.Fprintf(w, "No --provider-kubeconfig: using %s. On the provider it:\n", printable(p.via))
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
	return lines{
		fmt.Sprintf("the consumer's control-plane identity may not %s on the provider: nothing was deleted or written.", strings.Join(denied, ", ")),
		"In Liqo it may delete only Renews, ResourceSlices and NamespaceMaps in its tenant namespace (ClusterRole " + remoteControlPlaneRole + ");",
		"ShadowPods are deletable by the ResourceSlice identities only, in the remote namespaces.",
		"Pass --provider-kubeconfig <file> with a kubeconfig of an admin of the provider.",
	}
}

// kubeSystemUID is the UID of namespace kube-system: one per cluster, so two API servers with the same
// are the same cluster.
func kubeSystemUID(ctx context.Context, c client.Client) (string, error) {
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, ns); err != nil {
		return "", err
	}
	return string(ns.UID), nil
}

// checkNotConsumer refuses a provider connection that reaches the consumer itself.
func checkNotConsumer(ctx context.Context, consumer client.Client, p *providerConn) error {
	local, err := kubeSystemUID(ctx, consumer)
	if err != nil {
		return fmt.Errorf("reading namespace kube-system on this cluster: %w (fence compares its UID with the provider's, "+
			"to be sure %s does not reach this cluster itself); nothing was written", err, printable(p.via))
	}
	remote, err := kubeSystemUID(ctx, p.c)
	if err != nil {
		return providerErr("reading namespace kube-system (fence compares its UID with this cluster's, to be sure "+
			printable(p.via)+" does not reach this cluster itself)", err)
	}
	if local == remote {
		return lines{
			fmt.Sprintf("%s reaches this cluster itself, not the provider: namespace kube-system has the same UID %s on both API servers.",
				printable(p.via), local),
			"Nothing was deleted or written. Pass --provider-kubeconfig <file> with a kubeconfig of the provider.",
		}
	}
	return nil
}

// checkProviderID reads Liqo's cluster-ID ConfigMap on the provider, if it may: it must name the
// ForeignCluster's cluster ID. It returns what the plan says of it.
func checkProviderID(ctx context.Context, p *providerConn, liqoNS string, fc *liqov1beta1.ForeignCluster, localID string) (string, error) {
	id, err := liqoClusterID(ctx, p.c, liqoNS)
	switch {
	case apierrors.IsForbidden(err):
		return "not checked (you may not list ConfigMaps in namespace " + liqoNS + " there)", nil
	case err != nil:
		return "", providerErr("reading Liqo's cluster-ID ConfigMap", err)
	case id == "":
		return "not checked (no cluster-ID ConfigMap in namespace " + liqoNS + " there)", nil
	case id == localID:
		return "", lines{
			fmt.Sprintf("%s reaches a cluster whose Liqo cluster ID is %s: this consumer's own.", printable(p.via), printable(id)),
			"Nothing was deleted or written. Pass --provider-kubeconfig <file> with a kubeconfig of the provider " + printable(string(fc.Spec.ClusterID)) + ".",
		}
	case id != string(fc.Spec.ClusterID):
		return "", lines{
			fmt.Sprintf("wrong provider: %s reaches the Liqo cluster %s, not %s (ForeignCluster %s).",
				printable(p.via), printable(id), printable(string(fc.Spec.ClusterID)), printable(fc.Name)),
			"Nothing was deleted or written. Pass --provider-kubeconfig <file> with a kubeconfig of the provider " + printable(string(fc.Spec.ClusterID)) + ".",
		}
	}
	return id + " (Liqo's cluster-ID ConfigMap there)", nil
}

// liqoClusterID reads CLUSTER_ID from Liqo's cluster-ID ConfigMap in namespace ns, selected by its label
// as Liqo does (utils.GetClusterIDWithControllerClient, pkg/utils/cluster_info.go; the gate reads the
// local one the same way): "" when there is none.
func liqoClusterID(ctx context.Context, c client.Client, ns string) (string, error) {
	var cms corev1.ConfigMapList
	if err := c.List(ctx, &cms, client.InNamespace(ns),
		client.MatchingLabels{liqojanitor.ClusterIDConfigMapNameLabel: liqojanitor.ClusterIDConfigMapNameValue}); err != nil {
		return "", err
	}
	ids := map[string]bool{}
	for i := range cms.Items {
		if id := cms.Items[i].Data[liqojanitor.ClusterIDConfigMapKey]; id != "" {
			ids[id] = true
		}
	}
	if len(ids) > 1 {
		return "", fmt.Errorf("several cluster-ID ConfigMaps in namespace %s disagree: %s", ns, strings.Join(sortedKeys(ids), ", "))
	}
	for id := range ids {
		return id, nil
	}
	return "", nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// providerErr words a failed request to the provider.
func providerErr(what string, err error) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("on the provider, %s: %w; nothing more was deleted or written. Pass --provider-kubeconfig <file> with a "+
			"kubeconfig of an admin of the provider", what, err)
	}
	return fmt.Errorf("on the provider, %s: %w", what, err)
}
