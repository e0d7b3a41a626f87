package liqojanitor

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The prober, the one piece of shared behaviour in this package (the rest are declarations, formats,
// read-only lookups and the fence credential's apply). Our own look at the provider: the gate's before it accepts a mark (gate rule 4), the janitor's at a low
// rate while a cluster is marked (a provider that answers again has returned). Liqo's APIServerStatus is
// evidence Liqo keeps current only while its controller runs, only on a transition, and only for the
// ForeignCluster its lookup finds (foreigncluster-controller/apiserverchecker.go checkAndUpdateCallback
// writes the condition only when the status changes, Liqo v1.0.3 to v1.2.0). So we ask the provider
// ourselves: a TLS handshake and an unauthenticated GET of /readyz at every https URL Liqo wrote into the
// status (status.apiServerUrl, status.foreignProxyUrl). Any HTTP answer — 200, 401 or 403 alike — is an
// answer (it vetoes a mark, it shows a return); no answer within the timeout changes nothing. The probe
// sends no credentials (no client certificate, no token, no proxy), follows no redirect, reads nothing of
// the answer beyond "it answered", and cannot verify the provider's certificate (we hold no CA of it): an
// answer can only ever refuse a mark or stop a clean-up, never allow one.

// Prober probes providers' API servers.
type Prober struct {
	client *http.Client
}

// probePath is what the probe asks for: a path every Kubernetes API server serves, unauthenticated where
// anonymous auth is on, and answered with 401/403 where it is off — an answer either way.
const probePath = "/readyz"

// NewProber returns a Prober whose every probe is bounded by timeout.
func NewProber(timeout time.Duration) *Prober {
	transport := &http.Transport{
		Proxy:             nil, // straight to the address Liqo wrote, never through an environment proxy
		DialContext:       (&net.Dialer{Timeout: timeout}).DialContext,
		DisableKeepAlives: true,
		//nolint:gosec // the answer is never trusted: only whether one came (see above); no credentials are sent
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: timeout,
	}
	return &Prober{client: &http.Client{
		Transport:     transport,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// ProbeURLs are the https URLs of the provider's API server that fc's status names.
func ProbeURLs(fc *liqov1beta1.ForeignCluster) []string {
	var out []string
	for _, raw := range []string{fc.Status.APIServerURL, fc.Status.ForeignProxyURL} {
		if u, err := url.Parse(raw); err == nil && u.Scheme == "https" && u.Host != "" && u.User == nil {
			out = append(out, (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: strings.TrimSuffix(u.Path, "/")}).String())
		}
	}
	return out
}

// Probe asks, concurrently, every URL fc's status names; it returns the first that answered, or "".
func (p *Prober) Probe(ctx context.Context, fc *liqov1beta1.ForeignCluster) string {
	urls := ProbeURLs(fc)
	if len(urls) == 0 {
		return ""
	}
	answered := make(chan string, len(urls))
	for _, u := range urls {
		go func() {
			if p.answers(ctx, u) {
				answered <- u
				return
			}
			answered <- ""
		}()
	}
	for range urls {
		if u := <-answered; u != "" {
			return u
		}
	}
	return ""
}

// answers reports whether the API server at base gives any HTTP answer to an unauthenticated GET.
func (p *Prober) answers(ctx context.Context, base string) bool { return answers(ctx, p.client, base) }

// answers reports whether the API server at base gives c any HTTP answer to an unauthenticated GET.
func answers(ctx context.Context, c *http.Client, base string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+probePath, http.NoBody)
	if err != nil {
		return false
	}
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return true
}

// Targets are where a provider's API server is and how Liqo reaches it: its URL, the proxy Liqo's client
// dials it through (an in-band peering's foreignProxyUrl, the identity kubeconfig's proxy-url:
// pkg/utils/kubeconfig GenerateKubeconfig), and the CA its certificate is signed by (the control-plane
// Identity's spec.authParams.ca).
type Targets struct {
	APIServer string `json:"apiServer,omitempty"`
	Proxy     string `json:"proxy,omitempty"`
	CA        []byte `json:"ca,omitempty"`
}

// ProbeTargets asks the API server t names, through t's proxy when there is one (HTTP CONNECT, as Liqo's
// client does), for /readyz. With the provider's CA known, an answer counts only when the server's
// certificate verifies against it (an HTTPS proxy or a recycled address answers with another one); without
// it, any answer counts, unverified. It returns the URL that answered ("" when none did) and whether the
// answer was verified.
func (p *Prober) ProbeTargets(ctx context.Context, t Targets) (answered string, verified bool) {
	u, err := url.Parse(t.APIServer)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		return "", false
	}
	base := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: strings.TrimSuffix(u.Path, "/")}).String()
	transport := p.client.Transport.(*http.Transport).Clone()
	if proxy, err := url.Parse(t.Proxy); err == nil && (proxy.Scheme == "http" || proxy.Scheme == "https") && proxy.Host != "" {
		transport.Proxy = http.ProxyURL(proxy)
	}
	if pool := x509.NewCertPool(); len(t.CA) > 0 && pool.AppendCertsFromPEM(t.CA) {
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, ServerName: u.Hostname(), MinVersion: tls.VersionTLS12}
		verified = true
	}
	c := &http.Client{Transport: transport, Timeout: p.client.Timeout, CheckRedirect: p.client.CheckRedirect}
	if !answers(ctx, c, base) {
		return "", false
	}
	return base, verified
}

// ProviderTargets gathers where fc's provider is, as Liqo knows it now: the status' URLs, and the
// control-plane Identity of its tenant namespace (status.tenantNamespace.local, which Liqo's
// foreigncluster controller takes from that Identity's namespace: status.go
// handleAuthenticationModuleStatus) whose spec.clusterID is the cluster's — its authParams are what Liqo's
// identity kubeconfig is made of. from says where they come from, for a person.
func ProviderTargets(ctx context.Context, reader client.Reader, fc *liqov1beta1.ForeignCluster) (t Targets, from string) {
	t = Targets{APIServer: fc.Status.APIServerURL, Proxy: fc.Status.ForeignProxyURL}
	from = "the ForeignCluster's status"
	ns := fc.Status.TenantNamespace.Local
	if ns == "" {
		return t, from
	}
	var ids authv1beta1.IdentityList
	if err := reader.List(ctx, &ids, client.InNamespace(ns)); err != nil {
		return t, fmt.Sprintf("%s alone (the Identities of %s could not be read: %v)", from, ns, err)
	}
	for _, id := range ids.Items {
		if id.Spec.Type != authv1beta1.ControlPlaneIdentityType || id.Spec.ClusterID != fc.Spec.ClusterID {
			continue
		}
		p := id.Spec.AuthParams
		t.CA = p.CA
		if p.APIServer != "" {
			t.APIServer = p.APIServer
		}
		if p.ProxyURL != nil && *p.ProxyURL != "" {
			t.Proxy = *p.ProxyURL
		}
		return t, fmt.Sprintf("the ForeignCluster's status and Identity %s/%s", ns, id.Name)
	}
	return t, from
}
