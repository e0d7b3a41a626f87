package webhook

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
)

// The gate's own look at the provider (rule 4). Liqo's APIServerStatus is evidence Liqo keeps current only
// while its controller runs, only on a transition, and only for the ForeignCluster its lookup finds
// (foreigncluster-controller/apiserverchecker.go checkAndUpdateCallback writes the condition only when the
// status changes, Liqo v1.0.3 to v1.2.0). So before it accepts a mark the gate asks the provider itself:
// a TLS handshake and an unauthenticated GET of /readyz at every https URL Liqo wrote into the status
// (status.apiServerUrl, status.foreignProxyUrl). Any HTTP answer — 200, 401 or 403 alike — vetoes the
// mark; no answer within the timeout changes nothing. The probe sends no credentials (no client
// certificate, no token, no proxy), follows no redirect, reads nothing of the answer beyond "it answered",
// and cannot verify the provider's certificate (the gate holds no CA of it): an answer can only ever
// refuse a mark, never allow one.

// prober probes providers' API servers.
type prober struct {
	client *http.Client
}

// probePath is what the probe asks for: a path every Kubernetes API server serves, unauthenticated where
// anonymous auth is on, and answered with 401/403 where it is off — an answer either way.
const probePath = "/readyz"

func newProber(timeout time.Duration) *prober {
	transport := &http.Transport{
		Proxy:             nil, // straight to the address Liqo wrote, never through an environment proxy
		DialContext:       (&net.Dialer{Timeout: timeout}).DialContext,
		DisableKeepAlives: true,
		//nolint:gosec // the answer is never trusted: only whether one came (see above); no credentials are sent
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: timeout,
	}
	return &prober{client: &http.Client{
		Transport:     transport,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// probeURLs are the https URLs of the provider's API server that fc's status names.
func probeURLs(fc *liqov1beta1.ForeignCluster) []string {
	var out []string
	for _, raw := range []string{fc.Status.APIServerURL, fc.Status.ForeignProxyURL} {
		if u, err := url.Parse(raw); err == nil && u.Scheme == "https" && u.Host != "" && u.User == nil {
			out = append(out, (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: strings.TrimSuffix(u.Path, "/")}).String())
		}
	}
	return out
}

// probe asks, concurrently, every URL fc's status names; it returns the first that answered.
func (p *prober) probe(ctx context.Context, fc *liqov1beta1.ForeignCluster) probeResult {
	urls := probeURLs(fc)
	if len(urls) == 0 {
		return probeResult{}
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
			return probeResult{Answered: u}
		}
	}
	return probeResult{}
}

// answers reports whether the API server at base gives any HTTP answer to an unauthenticated GET.
func (p *prober) answers(ctx context.Context, base string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+probePath, http.NoBody)
	if err != nil {
		return false
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return true
}
