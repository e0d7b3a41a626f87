package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// The consumer's side of the credential (issue 37): the consumer's admin stores the kubeconfig in the
// consumer's liqo-janitor namespace as a Secret labelled liqojanitor.ProviderFenceSecretLabel=<provider
// cluster ID>, under the key liqojanitor.ProviderFenceKubeconfigKey.

// TokenSecretName is the consumer's credential's token Secret in its tenant namespace.
const TokenSecretName = liqojanitor.FenceCredentialTokenSecret

// fieldOwner is the plugin's field manager for what it applies.
const fieldOwner = "kubectl-liqo_janitor"

// CredentialOptions are what `fence-credential` is told.
type CredentialOptions struct {
	// Factory gives the provider's client (the kubeconfig flags: the provider's admin's) and the streams.
	Factory *cli.Factory
	// Consumer is the consumer's Liqo cluster ID.
	Consumer string
	// Server is the provider's API server as the consumer reaches it; empty: the kubeconfig's server.
	Server string
	// Revoke deletes the credential instead.
	Revoke bool
	// LiqoNamespace holds Liqo's cluster-ID ConfigMap on this provider.
	LiqoNamespace string
	// ConsumerJanitorNamespace is liqo-janitor's namespace on the consumer, for the command printed.
	ConsumerJanitorNamespace string
	// Timeout bounds the wait for the token controller.
	Timeout time.Duration
}

// Validate refuses options no run can use.
func (o *CredentialOptions) Validate() error {
	if o.Timeout <= 0 {
		return fmt.Errorf("--timeout=%s: give a positive duration, e.g. --timeout=1m", o.Timeout)
	}
	if o.Server != "" && !strings.HasPrefix(o.Server, "https://") {
		return fmt.Errorf("--provider-server=%s: the consumer reaches the provider's API server over https (https://host:port)", o.Server)
	}
	return nil
}

// Run is `fence-credential`: the credential made (or revoked) in the consumer's tenant namespace, and the
// kubeconfig printed.
func (o *CredentialOptions) Run(ctx context.Context) error {
	c, err := o.Factory.Client()
	if err != nil {
		return err
	}
	cons, err := findConsumer(ctx, c, o.Consumer)
	if err != nil {
		return err
	}
	if o.Revoke {
		return o.revoke(ctx, c, cons)
	}
	if err := liqojanitor.ApplyFenceCredential(ctx, c, cons.namespace, fieldOwner); err != nil {
		return err
	}
	secret, err := o.awaitToken(ctx, c, cons.namespace)
	if err != nil {
		return err
	}
	kubeconfig, err := o.kubeconfig(cons, secret)
	if err != nil {
		return err
	}
	if _, err := o.Factory.Out.Write(kubeconfig); err != nil {
		return err
	}
	o.note(ctx, c, cons)
	return nil
}

// awaitToken waits for the token controller (kube-controller-manager's) to fill the token Secret.
func (o *CredentialOptions) awaitToken(ctx context.Context, c client.Client, ns string) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, o.Timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: TokenSecretName}, secret); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return len(secret.Data[corev1.ServiceAccountTokenKey]) > 0, nil
	})
	if err != nil {
		return nil, fmt.Errorf("the token Secret %s/%s has no token after %s: Kubernetes' token controller (kube-controller-manager) "+
			"fills it; check that it runs, or retry with a longer --timeout: %w", ns, TokenSecretName, o.Timeout, err)
	}
	return secret, nil
}

// kubeconfig is the consumer's kubeconfig: the provider's API server and CA, the credential's token, no
// exec plugin.
func (o *CredentialOptions) kubeconfig(cons *consumer, secret *corev1.Secret) ([]byte, error) {
	cfg, err := o.Factory.RESTConfig()
	if err != nil {
		return nil, err
	}
	server := o.Server
	if server == "" {
		server = cfg.Host
	}
	ca := secret.Data[corev1.ServiceAccountRootCAKey]
	if len(ca) == 0 {
		return nil, fmt.Errorf("the token Secret %s/%s has no %s: the consumer could not verify the provider's API server; "+
			"check kube-controller-manager's --root-ca-file", cons.namespace, TokenSecretName, corev1.ServiceAccountRootCAKey)
	}
	name := "liqo-janitor-fence-" + cons.id
	k := clientcmdapi.NewConfig()
	k.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	k.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: string(secret.Data[corev1.ServiceAccountTokenKey])}
	k.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: cons.namespace}
	k.CurrentContext = name
	return clientcmd.Write(*k)
}

// note tells the provider's admin, on stderr, what to hand over and how the consumer's admin stores it, and
// warns when the agent ignores this consumer.
func (o *CredentialOptions) note(ctx context.Context, c client.Reader, cons *consumer) {
	w := o.Factory.ErrOut
	providerID, err := liqojanitor.LocalClusterID(ctx, c, o.LiqoNamespace)
	if err != nil {
		fmt.Fprintf(w, "Warning: this provider's Liqo cluster ID is unknown (%s): replace <provider cluster ID> below with it.\n",
			output.Printable(err.Error()))
		providerID = "<provider cluster ID>"
	}
	secret := "liqo-janitor-provider-fence-" + providerID
	fmt.Fprintf(w, `The kubeconfig above may only get, update and patch the Lease %s in namespace %s of this provider.
Hand it to the admin of consumer %s over a private channel; they store it in liqo-janitor's namespace there:

  kubectl -n %s create secret generic %s --from-file=%s=<this file> && \
    kubectl -n %s label secret %s %s=%s

Revoke it with: kubectl liqo-janitor fence-credential %s --revoke
`, liqojanitor.FenceLeaseName, cons.namespace, output.Printable(cons.id),
		o.ConsumerJanitorNamespace, secret, liqojanitor.ProviderFenceKubeconfigKey, o.ConsumerJanitorNamespace, secret, liqojanitor.ProviderFenceSecretLabel, providerID,
		output.Printable(cons.id))
	o.warnOptIn(w, cons)
}

// warnOptIn warns when the consumer's Tenant does not opt it in (fence rule 1).
func (o *CredentialOptions) warnOptIn(w io.Writer, cons *consumer) {
	switch {
	case cons.tenant == nil:
		fmt.Fprintf(w, "Warning: no Tenant of consumer %s in %s: the provider fence agent ignores it until its Tenant exists and carries %s.\n",
			output.Printable(cons.id), cons.namespace, liqojanitor.FenceAfterAnnotation)
	case cons.tenant.Annotations[liqojanitor.FenceAfterAnnotation] == "":
		fmt.Fprintf(w, "Warning: Tenant %s/%s has no %s: the provider fence agent ignores consumer %s until you set it:\n  %s\n",
			cons.namespace, cons.tenant.Name, liqojanitor.FenceAfterAnnotation, output.Printable(cons.id), cons.optInCommand())
	}
}

// revoke deletes the credential: the ServiceAccount (which invalidates its tokens), its Role and
// RoleBinding, and the token Secret.
func (o *CredentialOptions) revoke(ctx context.Context, c client.Client, cons *consumer) error {
	ns, name := cons.namespace, liqojanitor.FenceCredentialName
	var deleted []string
	var errs []error
	// The ServiceAccount first: deleting it invalidates its tokens at once.
	for _, o := range []struct {
		kind string
		obj  client.Object
	}{
		{"ServiceAccount", &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}},
		{"RoleBinding", &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}},
		{"Role", &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}},
		{"Secret", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: TokenSecretName}}},
	} {
		kind, obj := o.kind, o.obj
		switch err := c.Delete(ctx, obj); {
		case err == nil:
			deleted = append(deleted, kind+" "+obj.GetName())
		case !apierrors.IsNotFound(err):
			errs = append(errs, fmt.Errorf("deleting %s %s/%s: %w", kind, ns, obj.GetName(), err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if len(deleted) == 0 {
		fmt.Fprintf(o.Factory.Out, "Consumer %s has no fence credential in %s: nothing to revoke.\n", output.Printable(cons.id), ns)
		return nil
	}
	fmt.Fprintf(o.Factory.Out, "Revoked the fence credential of consumer %s: deleted %s in %s.\n",
		output.Printable(cons.id), strings.Join(deleted, ", "), ns)
	if cons.tenant != nil && cons.tenant.Annotations[liqojanitor.FenceAfterAnnotation] != "" {
		fmt.Fprintf(o.Factory.ErrOut, "Warning: Tenant %s/%s still carries %s: the consumer can no longer renew its Lease, so once armed the "+
			"agent fences it %s after its last renewal. To opt it out instead: kubectl annotate tenant -n %s %s %s-\n",
			ns, cons.tenant.Name, liqojanitor.FenceAfterAnnotation, cons.tenant.Annotations[liqojanitor.FenceAfterAnnotation],
			ns, cons.tenant.Name, liqojanitor.FenceAfterAnnotation)
	}
	return nil
}
