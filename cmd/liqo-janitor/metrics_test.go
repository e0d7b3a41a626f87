package main

import (
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// serviceAccountToken creates the ServiceAccount name in ns and returns a token of it.
func serviceAccountToken(t *testing.T, cs kubernetes.Interface, ns, name string) string {
	t.Helper()
	g := NewWithT(t)
	_, err := cs.CoreV1().ServiceAccounts(ns).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	return tr.Status.Token
}

// TestMetricsAreServedOnlyToAuthorizedScrapers: by default /metrics is HTTPS with the webhook's
// certificate, and answers only a token the API server authenticates whose user may get /metrics (what
// the chart's ClusterRole liqo-janitor:metrics-reader grants).
func TestMetricsAreServedOnlyToAuthorizedScrapers(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cs, err := kubernetes.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	ns := env.Namespace(t)
	scraper, stranger := serviceAccountToken(t, cs, ns, "scraper"), serviceAccountToken(t, cs, ns, "stranger")
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "test-metrics-reader-" + ns},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	g.Expect(env.Client.Create(ctx, role)).To(Succeed())
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: ns}}}
	g.Expect(env.Client.Create(ctx, binding)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(ctx, binding); _ = env.Client.Delete(ctx, role) })

	// A webhook port of its own, and gone when the test ends: the package's later replicas take the
	// registered one.
	port := freeAddr(t)
	_, portNumber, _ := strings.Cut(port, ":")
	r, err := env.StartReplica("metrics-secure", "--metrics-secure=true", "--enable-janitor=false", "--webhook-port="+portNumber)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = r.Kill() })
	ca, err := env.WebhookCA()
	g.Expect(err).NotTo(HaveOccurred())
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca, MinVersion: tls.VersionTLS12}}}
	scrape := func(token string) int {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+r.Metrics+"/metrics", http.NoBody)
		g.Expect(err).NotTo(HaveOccurred())
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		if resp.StatusCode != http.StatusOK {
			t.Logf("token %.10q: HTTP %d: %s", token, resp.StatusCode, body)
		}
		return resp.StatusCode
	}
	g.Expect(scrape("")).To(Equal(http.StatusUnauthorized), "no token: unauthenticated")
	// a token the API server does not know: refused (controller-runtime's filter answers 500 when the
	// TokenReview errs on it, filters.WithAuthenticationAndAuthorization)
	g.Expect(scrape("not-a-token")).To(BeNumerically(">=", http.StatusUnauthorized))
	g.Expect(scrape(stranger)).To(Equal(http.StatusForbidden), "authenticated, but not allowed to get /metrics")
	g.Expect(scrape(scraper)).To(Equal(http.StatusOK), "the metrics reader")
	resp, err := http.Get("http://" + r.Metrics + "/metrics") //nolint:noctx // a scrape in a test
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusBadRequest), "no plain HTTP unless --metrics-secure=false")
}
