package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/liqo-janitor/liqo-janitor/test/harness"
	"github.com/liqo-janitor/liqo-janitor/webhook/certs"
)

// rotationTest is one run of the binary with --cert-management=self and validities of seconds.
type rotationTest struct {
	t         *testing.T
	env       *harness.Env
	ns, name  string // the Secrets' namespace; the webhook configurations' name
	port      string
	probeAddr string
	start     time.Time
	timeline  []string
	seen      map[string]bool
	fc        *liqov1beta1.ForeignCluster
	firstCA   []byte
	touches   int
	// touchedFirst: the API server called the webhook while the first CA alone was trusted.
	touchedFirst bool
	firstServe   []byte
}

// TestSelfManagedCertificatesRotate runs the binary's wiring with --cert-management=self against the
// real API server, with a 3s serving certificate and a 9s CA: the CA is made first, the serving
// certificate only once the bundle is injected (the configurations are created late on purpose),
// readyz turns ready only when the certificate served verifies against the injected bundle, the serving
// certificate is renewed, the CA is renewed with both CAs in the bundle, and the old CA is dropped when
// it expires. Throughout, the API server calls the webhook through the configurations (failurePolicy
// Fail) on every sample, so no rotation ever leaves it without trust in what is served.
func TestSelfManagedCertificatesRotate(t *testing.T) {
	rt := startRotation(t)
	g := NewWithT(t)
	g.Consistently(rt.ready).WithTimeout(1500*time.Millisecond).Should(BeFalse(), "not ready without webhook configurations")
	rt.observeSecrets()
	g.Expect(rt.seen).To(HaveKey("CA created"))
	g.Expect(rt.seen).NotTo(HaveKey("serving certificate issued"), "no serving certificate before its CA is in the bundle")
	rt.createConfigurations()
	g.Eventually(rt.sample).WithTimeout(40*time.Second).WithPolling(100*time.Millisecond).Should(BeTrue(), "the old CA is dropped")
	t.Log("rotation timeline (seconds since the binary started):\n" + strings.Join(rt.timeline, "\n"))
	for _, step := range []string{"bundle injected", "ready", "serving certificate rotated", "CA rotated, both CAs in the bundle",
		"serving certificate issued by the new CA", "old CA dropped from the bundle"} {
		g.Expect(rt.seen).To(HaveKey(step))
	}
	// Every sample once ready changed the ForeignCluster through the webhooks (a failed call fails it at
	// once), however few samples a loaded machine takes; at least one with the first CA alone, the last
	// once the old CA was dropped.
	g.Expect(rt.touchedFirst).To(BeTrue(), "the API server called the webhook before the CA rotated")
}

func startRotation(t *testing.T) *rotationTest {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	t.Setenv("KUBECONFIG", env.KubeconfigPath)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "certs-"}}
	g.Expect(env.Client.Create(t.Context(), ns)).To(Succeed())
	_, port, err := net.SplitHostPort(freeAddr(t))
	g.Expect(err).NotTo(HaveOccurred())
	rt := &rotationTest{t: t, env: env, ns: ns.Name, name: ns.Name, port: port, probeAddr: freeAddr(t), seen: map[string]bool{}}

	o := parseFlags(t, "--metrics-bind-address=0", "--health-probe-bind-address="+rt.probeAddr, "--enable-janitor=false",
		"--webhook-port="+port, "--cert-management=self", "--namespace="+rt.ns, "--webhook-configuration="+rt.name,
		"--cert-extra-dns-names=localhost", "--cert-validity=3s", "--ca-validity=9s", "--cert-check-interval=200ms")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	rt.start = time.Now()
	go func() { done <- run(ctx, o) }()
	t.Cleanup(func() { cancel(); NewWithT(t).Expect(<-done).To(Succeed()) })
	return rt
}

func (rt *rotationTest) mark(step string) {
	if rt.seen[step] {
		return
	}
	rt.seen[step] = true
	rt.timeline = append(rt.timeline, fmt.Sprintf("  %6.2fs  %s", time.Since(rt.start).Seconds(), step))
}

// ready reports whether the binary's /readyz answers 200.
func (rt *rotationTest) ready() bool {
	resp, err := http.Get("http://" + rt.probeAddr + "/readyz") //nolint:noctx // a probe in a test
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// createConfigurations registers the gate's generated webhooks under the test's name, calling the binary
// at localhost with no caBundle, for labelled ForeignClusters only, on every change of them.
func (rt *rotationTest) createConfigurations() {
	g := NewWithT(rt.t)
	mut, val, err := rt.env.GeneratedWebhooks()
	g.Expect(err).NotTo(HaveOccurred())
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"certs-test": rt.name}}
	always := []admissionregistrationv1.MatchCondition{{Name: "always", Expression: "true"}}
	for i := range mut.Webhooks {
		mut.Webhooks[i].MatchConditions = always
	}
	for i := range val.Webhooks {
		val.Webhooks[i].MatchConditions = always
	}
	for _, cfg := range []client.Object{mut, val} {
		harness.ForEachWebhook(cfg, func(cc *admissionregistrationv1.WebhookClientConfig, os **metav1.LabelSelector) {
			cc.URL = ptr.To("https://localhost:" + rt.port + *cc.Service.Path)
			cc.Service, *os = nil, sel
		})
		cfg.SetName(rt.name)
		g.Expect(rt.env.Client.Create(rt.t.Context(), cfg)).To(Succeed())
		rt.t.Cleanup(func() { _ = rt.env.Client.Delete(context.Background(), cfg) })
	}
	rt.fc = &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: rt.name, Labels: map[string]string{"certs-test": rt.name}},
		Spec: liqov1beta1.ForeignClusterSpec{ClusterID: liqov1beta1.ClusterID(rt.name)}}
}

// sample observes the Secrets, then the bundle, what is served and readyz at one moment, records each
// first sight in the timeline, and reports whether the old CA has been dropped. A moment a rotation fell
// into is skipped: nothing is judged from it. Once ready, every sample also changes the labelled
// ForeignCluster through the API server, which calls the webhooks and must trust them.
func (rt *rotationTest) sample() bool {
	g := NewWithT(rt.t)
	rt.observeSecrets()
	m, ok := rt.moment()
	if !ok {
		return false
	}
	if len(m.bundle) > 0 {
		rt.mark("bundle injected")
	}
	if m.ready {
		g.Expect(m.leaf).NotTo(BeNil(), "ready, so what is served verifies against the injected bundle (both read before and after readyz, unchanged)")
		rt.mark("ready")
		rt.touch()
	}
	if m.leaf != nil && len(m.bundle) == 2 && rt.firstCA != nil && m.bundle[1].Equal(parseCert(rt.t, rt.firstCA)) {
		rt.mark("CA rotated, both CAs in the bundle")
		if m.leaf.Issuer.String() == m.bundle[0].Subject.String() {
			rt.mark("serving certificate issued by the new CA")
		}
	}
	if rt.seen["CA rotated, both CAs in the bundle"] && len(m.bundle) == 1 && !m.bundle[0].Equal(parseCert(rt.t, rt.firstCA)) {
		g.Expect(m.leaf).NotTo(BeNil(), "what is served verifies against the bundle without the old CA")
		rt.mark("old CA dropped from the bundle")
		rt.touch() // the API server calls the webhook with the new CA alone
		return true
	}
	return false
}

// moment is what the API server would see at one instant: the bundle injected into the configurations,
// the certificate served, and whether the binary says it is ready.
type moment struct {
	bundle []*x509.Certificate
	served *x509.Certificate // what the server presents, trusted or not (nil: no handshake)
	leaf   *x509.Certificate // served, if it verifies against bundle for the Service's name
	ready  bool
}

// moment reads the bundle and the served certificate, then readyz, then the bundle and the served
// certificate again. It returns false when either changed in between (a rotation fell into the reading:
// the three were not seen at one instant), so that no judgement rests on two moving things sampled apart.
// The configurations' resourceVersions only grow and certificates are never re-served once replaced, so
// equal values before and after mean they held throughout.
func (rt *rotationTest) moment() (moment, bool) {
	bundle, version := rt.injected()
	served := rt.served()
	ready := rt.ready()
	if _, again := rt.injected(); again != version || !sameCert(served, rt.served()) {
		return moment{}, false
	}
	return moment{bundle: bundle, served: served, leaf: rt.verifies(served, bundle), ready: ready}, true
}

func sameCert(a, b *x509.Certificate) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && a.Equal(b))
}

// observeSecrets records the CA's and the serving certificate's Secrets appearing and changing.
func (rt *rotationTest) observeSecrets() {
	ca, serving := &corev1.Secret{}, &corev1.Secret{}
	if rt.env.Client.Get(rt.t.Context(), client.ObjectKey{Namespace: rt.ns, Name: certs.CASecretName}, ca) == nil {
		rt.mark("CA created")
		if rt.firstCA == nil {
			rt.firstCA = ca.Data["tls.crt"]
		}
	}
	if rt.env.Client.Get(rt.t.Context(), client.ObjectKey{Namespace: rt.ns, Name: certs.CertSecretName}, serving) == nil {
		NewWithT(rt.t).Expect(serving.Data).To(HaveLen(2), "the serving Secret holds tls.crt and tls.key only")
		rt.mark("serving certificate issued")
		if rt.firstServe == nil {
			rt.firstServe = serving.Data["tls.crt"]
		} else if string(rt.firstServe) != string(serving.Data["tls.crt"]) && string(rt.firstCA) == string(ca.Data["tls.crt"]) {
			rt.mark("serving certificate rotated")
		}
	}
}

// injected returns the bundle every webhook of both configurations carries (nil while they differ), and
// the two configurations' resourceVersions.
func (rt *rotationTest) injected() ([]*x509.Certificate, string) {
	var bundles []string
	version := ""
	for _, cfg := range []client.Object{&admissionregistrationv1.MutatingWebhookConfiguration{}, &admissionregistrationv1.ValidatingWebhookConfiguration{}} {
		if rt.env.Client.Get(rt.t.Context(), client.ObjectKey{Name: rt.name}, cfg) != nil {
			return nil, ""
		}
		version += cfg.GetResourceVersion() + "/"
		harness.ForEachWebhook(cfg, func(cc *admissionregistrationv1.WebhookClientConfig, _ **metav1.LabelSelector) {
			bundles = append(bundles, string(cc.CABundle))
		})
	}
	for _, b := range bundles {
		if b != bundles[0] {
			return nil, version
		}
	}
	var out []*x509.Certificate
	for rest := []byte(bundles[0]); ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			return out, version
		}
		out = append(out, parseDER(rt.t, block.Bytes))
	}
}

// served dials the webhook server and returns the certificate it presents, unverified (nil if no
// handshake).
func (rt *rotationTest) served() *x509.Certificate {
	d := &tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}} //nolint:gosec // verified apart, in verifies
	conn, err := d.DialContext(rt.t.Context(), "tcp", net.JoinHostPort("127.0.0.1", rt.port))
	if err != nil {
		return nil
	}
	defer conn.Close()
	return conn.(*tls.Conn).ConnectionState().PeerCertificates[0]
}

// verifies returns served if it verifies, as the API server checks it, against bundle for the Service's
// name, and nil otherwise.
func (rt *rotationTest) verifies(served *x509.Certificate, bundle []*x509.Certificate) *x509.Certificate {
	if served == nil {
		return nil
	}
	pool := x509.NewCertPool()
	for _, c := range bundle {
		pool.AddCert(c)
	}
	if _, err := served.Verify(x509.VerifyOptions{Roots: pool, DNSName: "liqo-janitor-webhook." + rt.ns + ".svc"}); err != nil {
		return nil
	}
	return served
}

// touch creates the labelled ForeignCluster, then changes a label of it: the API server calls both
// webhooks of the test's configurations, and with failurePolicy Fail refuses if it cannot trust them.
func (rt *rotationTest) touch() {
	g := NewWithT(rt.t)
	if rt.touches == 0 {
		g.Expect(rt.env.Client.Create(rt.t.Context(), rt.fc)).To(Succeed(), "created through the webhooks")
		rt.t.Cleanup(func() { _ = rt.env.Client.Delete(context.Background(), rt.fc) })
	}
	rt.touches++
	if !rt.seen["CA rotated, both CAs in the bundle"] {
		rt.touchedFirst = true
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{"certs-test-touch":"%d"}}}`, rt.touches)
	g.Expect(rt.env.Client.Patch(rt.t.Context(), rt.fc, rawMerge(patch))).To(Succeed(), "the API server trusts what is served")
}

func parseCert(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatal("no PEM certificate")
	}
	return parseDER(t, block.Bytes)
}

func parseDER(t *testing.T, der []byte) *x509.Certificate {
	t.Helper()
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
