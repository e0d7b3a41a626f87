package fencerenew

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// clientFor is a client of the provider from its fence credential (renew rule 1), every request bounded
// by timeout, each on a connection of its own (renew rule 2).
// The Lease is in the namespace of the kubeconfig's context (the provider's tenant namespace of this
// consumer), returned with the client.
func clientFor(kubeconfig []byte, timeout time.Duration) (client.Client, string, error) {
	cfg, ns, err := restConfigFor(kubeconfig)
	if err != nil {
		return nil, "", err
	}
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("the credential's TLS settings: %w", err)
	}
	cfg.TLSClientConfig = rest.TLSClientConfig{} // in the transport now
	cfg.Transport = &http.Transport{
		TLSClientConfig:     tlsConfig,
		DialContext:         (&net.Dialer{Timeout: timeout}).DialContext,
		TLSHandshakeTimeout: timeout,
		DisableKeepAlives:   true,
		Proxy:               http.ProxyFromEnvironment,
	}
	cfg.Timeout = timeout
	c, err := client.New(cfg, client.Options{Scheme: liqojanitor.NewScheme()})
	return c, ns, err
}

// restConfigFor reads a fence credential's kubeconfig, refusing what renew rule 1 forbids, each refusal
// saying what to hand over instead.
func restConfigFor(kubeconfig []byte) (*rest.Config, string, error) {
	raw, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, "", fmt.Errorf("not a kubeconfig: %w", err)
	}
	ctx, ok := raw.Contexts[raw.CurrentContext]
	if !ok {
		return nil, "", fmt.Errorf("the kubeconfig has no current context %q", raw.CurrentContext)
	}
	cluster, user := raw.Clusters[ctx.Cluster], raw.AuthInfos[ctx.AuthInfo]
	errs := []error{checkCluster(ctx.Cluster, cluster), checkUser(ctx.AuthInfo, user)}
	if ctx.Namespace == "" {
		errs = append(errs, errors.New("its context names no namespace: the provider's tenant namespace of this consumer, where its Lease is"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, "", fmt.Errorf("refused fence credential (%w); hand over the kubeconfig `kubectl liqo-janitor fence-credential` prints on the provider", err)
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*raw, nil).ClientConfig()
	return cfg, ctx.Namespace, err
}

// checkCluster says what renew rule 1 refuses of the kubeconfig's cluster: no verified CA inline.
func checkCluster(name string, cluster *clientcmdapi.Cluster) error {
	switch {
	case cluster == nil:
		return fmt.Errorf("its context names no cluster %q", name)
	case cluster.InsecureSkipTLSVerify:
		return errors.New("it skips TLS verification: the provider's CA is required")
	case len(cluster.CertificateAuthorityData) == 0:
		return errors.New("it carries no certificate-authority-data: the provider's CA is required inline")
	case cluster.CertificateAuthority != "":
		return errors.New("it names a CA file: only inline CA data")
	}
	return nil
}

// checkUser says what renew rule 1 refuses of the kubeconfig's user: anything but an inline token or
// client certificate.
func checkUser(name string, user *clientcmdapi.AuthInfo) error {
	switch {
	case user == nil:
		return fmt.Errorf("its context names no user %q", name)
	case user.Exec != nil || user.AuthProvider != nil:
		return errors.New("its user runs an exec plugin or an auth provider: only inline credentials (a token or a client certificate)")
	case user.TokenFile != "" || user.ClientCertificate != "" || user.ClientKey != "":
		return errors.New("it names files: only inline credentials and CA data")
	case user.Token == "" && (len(user.ClientCertificateData) == 0 || len(user.ClientKeyData) == 0):
		return errors.New("its user has no token and no client certificate")
	case user.Impersonate != "" || len(user.ImpersonateGroups) > 0:
		return errors.New("its user impersonates: use the credential as kubectl liqo-janitor fence-credential prints it")
	}
	return nil
}
