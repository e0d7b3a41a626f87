package fence

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// fence trusts only the provider the janitor kept. At its first sight of the confirmed mark the janitor
// keeps, in its records in its own namespace (liqojanitor.KeptRecord: janitor rule 16), where the
// provider's API server is, the proxy Liqo reaches it through and the CA its certificate is signed by —
// what Liqo's control-plane Identity said then (liqojanitor.ProviderTargets). Before fence reads anything
// on the provider, in every mode, the server it is about to talk to must be that API server: the same
// https host and port as the kept URL, and a certificate that verifies against the kept CA for that host
// (checked by a TLS handshake that is cut before any request is sent, and then pinned: fence's client
// trusts the kept CA only). Nothing a namespace user can write decides it: not a Secret found by its
// labels, not a look-alike of the records in another namespace, not the CA or tls-server-name of a
// kubeconfig.
//
// The host is the kept apiServer's even when Liqo reaches it through a proxy (an in-band peering's
// foreignProxyUrl, the identity kubeconfig's proxy-url: pkg/utils/kubeconfig GenerateKubeconfig puts
// authParams.apiServer in server and authParams.proxyURL in proxy-url, v1.0.3, v1.1.0 and v1.2.0): the
// proxy is asked to CONNECT to that host, and TLS runs end to end through it, so the certificate proves the
// server whatever the route. With the consumer's identity Secret, fence takes the route the janitor kept
// (the kept proxy, never one the Secret names); with --provider-kubeconfig, the route is the operator's
// own (the file's proxy-url, or the environment's), and the certificate still has to verify.

// verifyTimeout bounds the TLS handshake that verifies the provider's API server.
const verifyTimeout = 30 * time.Second

// kept is the janitor's record of the marked provider for the current mark.
type kept struct {
	targets   liqojanitor.Targets
	apiServer *url.URL
	at        time.Time
	from      string
	// configMap is where it was read: "<janitor's namespace>/liqo-janitor-records".
	configMap string
}

// Kept is, in the plan, the provider's API server liqo-janitor kept for the mark, which fence verified
// the provider against before it read anything there.
type Kept struct {
	// APIServer and Proxy are the kept target; KeptAt and From when and from what the janitor kept it, in
	// ConfigMap (its records, in its namespace).
	APIServer string      `json:"apiServer"`
	Proxy     string      `json:"proxy,omitempty"`
	KeptAt    metav1.Time `json:"keptAt"`
	From      string      `json:"from"`
	ConfigMap string      `json:"configMap"`
	// Ignored are look-alikes of the records in other namespaces ("namespace/name"), not read.
	Ignored []string `json:"ignored,omitempty"`
}

// planned is k as the plan shows it (escaped), with the look-alikes ignored.
func (k *kept) planned(ignored []string) *Kept {
	return &Kept{APIServer: output.Printable(k.targets.APIServer), Proxy: output.Printable(k.targets.Proxy),
		KeptAt: metav1.NewTime(k.at.UTC()), From: output.Printable(k.from), ConfigMap: k.configMap, Ignored: ignored}
}

// readKept reads the janitor's record of fc's provider for its current mark, in the janitor's namespace
// only, and refuses when there is none fence can verify a provider against.
func readKept(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster, ns cli.JanitorNamespace) (*kept, []string, error) {
	records, err := cli.ReadJanitorConfigMap(ctx, c, ns.Name, liqojanitor.RecordsConfigMap)
	if err != nil {
		return nil, nil, fmt.Errorf("%w; fence verifies the provider against what liqo-janitor kept there: nothing was read on the provider or written", err)
	}
	where := output.Printable(ns.Name + "/" + liqojanitor.RecordsConfigMap)
	name := output.Printable(fc.Name)
	refuse := func(why string, next ...string) error {
		msg := output.Lines{fmt.Sprintf("%s. fence acts only on the provider liqo-janitor kept for this mark (its API server, and the CA "+
			"its certificate must verify against), read in liqo-janitor's namespace %s (%s): nothing was read on the provider or written.",
			why, output.Printable(ns.Name), output.Printable(ns.From))}
		for _, lookAlike := range records.Ignored {
			msg = append(msg, cli.IgnoredLine(lookAlike, output.Printable(ns.Name))+"; anyone who may create ConfigMaps there could have written it")
		}
		return append(msg, next...)
	}
	if records.ConfigMap == nil {
		return nil, records.Ignored, refuse(fmt.Sprintf("liqo-janitor kept no record of ForeignCluster %s: there is no ConfigMap %s", name, where),
			keptNext(fc)...)
	}
	rec, ok := liqojanitor.KeptRecordOf(records.ConfigMap, fc.UID, fc.Annotations)
	if !ok {
		return nil, records.Ignored, refuse(fmt.Sprintf("liqo-janitor kept no record of ForeignCluster %s for its current mark (marked-at %q) in ConfigMap %s",
			name, output.Printable(fc.Annotations[liqojanitor.MarkedAtAnnotation]), where), keptNext(fc)...)
	}
	u, err := url.Parse(rec.Targets.APIServer)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, records.Ignored, refuse(fmt.Sprintf("the record liqo-janitor kept of ForeignCluster %s for this mark (ConfigMap %s) names no https API server (%q)",
			name, where, output.Printable(rec.Targets.APIServer)), keptNext(fc)...)
	}
	if len(rec.Targets.CA) == 0 || !x509.NewCertPool().AppendCertsFromPEM(rec.Targets.CA) {
		return nil, records.Ignored, refuse(fmt.Sprintf("liqo-janitor kept no CA of the provider of ForeignCluster %s for this mark (ConfigMap %s; "+
			"Liqo's control-plane Identity had no authParams.ca when it kept %s): fence cannot verify that a server is that provider",
			name, where, output.Printable(rec.Targets.APIServer)), handNext(fc)...)
	}
	return &kept{targets: rec.Targets, apiServer: u, at: rec.At.Time, from: rec.From, configMap: where}, records.Ignored, nil
}

// keptNext is the next step when the janitor kept nothing for the mark.
func keptNext(fc *liqov1beta1.ForeignCluster) []string {
	name := output.Printable(fc.Name)
	return []string{
		"liqo-janitor keeps it at its first sight of the confirmed mark; `kubectl liqo-janitor status " + name + "` says \"kept by liqo-janitor\" " +
			"on its return probe line once it did. Check that liqo-janitor runs (kubectl get deployments -A -l app.kubernetes.io/name=liqo-janitor), " +
			"then run fence again.",
		"If liqo-janitor runs in another namespace than the one above, pass --" + cli.JanitorNamespaceFlag + " <namespace>.",
	}
}

// handNext is the next step when fence cannot verify the provider at all.
func handNext(fc *liqov1beta1.ForeignCluster) []string {
	return []string{"Check yourself that the server is the provider " + output.Printable(string(fc.Spec.ClusterID)) +
		" and stop this consumer's ShadowPods there by hand (on the provider: kubectl get shadowpods -A -l " + liqojanitor.ShadowPodOriginLabel +
		"=<this consumer's cluster ID>," + liqojanitor.ShadowPodDestinationLabel + "=" + output.Printable(string(fc.Spec.ClusterID)) + ")."}
}

// describe says what the janitor kept, for a person.
func (k *kept) describe() string {
	s := k.targets.APIServer
	if k.targets.Proxy != "" {
		s += " through proxy " + k.targets.Proxy
	}
	return output.Printable(fmt.Sprintf("%s, kept by liqo-janitor at %s from %s (ConfigMap %s)", s, k.at.UTC().Format(time.RFC3339), k.from, k.configMap))
}

// hostPort is u's host and port, the port https's when u has none, the host in lower case.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "443"
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// pin makes cfg, a connection to the provider through via, one that trusts only the kept CA, and refuses
// it unless its server is the kept API server (https, the same host and port). identity: cfg comes from a
// Secret of the cluster, whose route fence does not take: it goes through the kept proxy, or none.
func (k *kept) pin(cfg *rest.Config, via string, identity bool) (*rest.Config, error) {
	server := cfg.Host
	if !strings.Contains(server, "://") {
		server = "https://" + server
	}
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "https" || hostPort(u) != hostPort(k.apiServer) {
		return nil, output.Lines{
			fmt.Sprintf("%s reaches %s, not the provider's API server liqo-janitor kept for this mark: %s.",
				output.Printable(via), output.Printable(cfg.Host), k.describe()),
			"fence acts only on that server (the same https host and port): nothing was read on the provider or written.",
			"Pass --provider-kubeconfig <file> with a kubeconfig whose server is " + output.Printable(k.targets.APIServer) + " (it may reach it through a " +
				"proxy-url); a provider rebuilt at another address is another cluster for fence.",
		}
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Insecure, cfg.CAFile, cfg.CAData, cfg.ServerName = false, "", k.targets.CA, ""
	if identity {
		cfg.Proxy = k.proxy()
	}
	return cfg, nil
}

// proxy is the kept proxy as a client's Proxy function; nil (the environment's) when none was kept.
func (k *kept) proxy() func(*http.Request) (*url.URL, error) {
	if k.targets.Proxy == "" {
		return nil
	}
	u, err := url.Parse(k.targets.Proxy)
	if err != nil {
		return func(*http.Request) (*url.URL, error) {
			return nil, fmt.Errorf("the kept proxy %q: %w", k.targets.Proxy, err)
		}
	}
	return http.ProxyURL(u)
}

// errVerified cuts the verifying handshake once the certificate verified, before any request is sent.
var errVerified = errors.New("the certificate verified: the handshake is cut before any request")

// verify makes a TLS handshake with cfg's server (pinned: the kept API server), through cfg's route, and
// checks its certificate against the kept CA for the kept host. It sends no request: the handshake is cut
// once the certificate verified, or fails before.
func (k *kept) verify(ctx context.Context, cfg *rest.Config, via string) error {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(k.targets.CA)
	verified := false
	proxy := cfg.Proxy
	if proxy == nil {
		proxy = http.ProxyFromEnvironment // as client-go's transport for a config without one
	}
	transport := &http.Transport{
		Proxy:       proxy,
		DialContext: (&net.Dialer{Timeout: verifyTimeout}).DialContext,
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: k.apiServer.Hostname(), MinVersion: tls.VersionTLS12,
			VerifyConnection: func(tls.ConnectionState) error { verified = true; return errVerified }},
		TLSHandshakeTimeout: verifyTimeout,
		DisableKeepAlives:   true,
	}
	defer transport.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+hostPort(k.apiServer)+"/", http.NoBody)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Transport: transport, Timeout: verifyTimeout}).Do(req)
	if resp != nil {
		_ = resp.Body.Close()
	}
	if verified {
		return nil
	}
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var host x509.HostnameError
	var verification *tls.CertificateVerificationError
	if errors.As(err, &verification) || errors.As(err, &unknown) || errors.As(err, &invalid) || errors.As(err, &host) {
		return output.Lines{
			fmt.Sprintf("%s reaches a server whose certificate does not verify against the CA liqo-janitor kept for this mark (%s): %s.",
				output.Printable(via), k.describe(), output.Printable(tlsReason(err))),
			"It is not the provider the janitor kept (another cluster at that address, or something in between): nothing was read on the provider or written.",
			"Find the provider " + output.Printable(k.targets.APIServer) + " itself, with the CA it had when it was marked; a provider rebuilt since is another cluster for fence.",
		}
	}
	return output.Lines{
		fmt.Sprintf("fence could not reach %s through %s to verify its certificate against the CA liqo-janitor kept: %s.",
			output.Printable(k.targets.APIServer), output.Printable(via), output.Printable(tlsReason(err))),
		"Nothing was read on the provider or written. Run fence again once the provider's API server answers there.",
	}
}

// tlsReason is err without the request's method and URL around it.
func tlsReason(err error) string {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Err.Error()
	}
	return fmt.Sprint(err)
}
