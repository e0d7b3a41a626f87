package monitoring_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor/providerfence"
	"github.com/liqo-janitor/liqo-janitor/manifests"
	"github.com/liqo-janitor/liqo-janitor/test/e2e/monitoring"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
	"github.com/liqo-janitor/liqo-janitor/webhook"
)

// The real binary (bin/liqo-janitor) runs against this package's API server; the tests of the alerts
// alone do not need it, but one package keeps the chart's monitoring and the binary's metrics together.
var env *harness.Env

// leaderElectionID is cmd/liqo-janitor's Lease name, the label of its leader_election_master_status.
const leaderElectionID = "liqo-janitor.liqo-janitor.io"

func TestMain(m *testing.M) {
	os.Exit(harness.Run(m, harness.Options{WebhookPaths: []string{"../../../" + harness.GeneratedWebhooksFile}},
		func(e *harness.Env) error {
			env = e
			return e.InstallLocalClusterID(context.Background(), liqojanitor.DefaultLiqoNamespace, "consumer")
		}))
}

// prometheusOwn are series Prometheus makes itself, not the binary.
var prometheusOwn = map[string]bool{"up": true}

// TestAlertsAndDashboardNameOnlyMetricsTheBinaryExposes: every metric an alert or a dashboard panel of
// the chart selects is on the real binary's /metrics, once it leads and its gate has answered a request.
func TestAlertsAndDashboardNameOnlyMetricsTheBinaryExposes(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	addr, err := harness.FreeLocalAddr()
	g.Expect(err).NotTo(HaveOccurred())
	_, port, err := net.SplitHostPort(addr)
	g.Expect(err).NotTo(HaveOccurred())
	// the chart's leader election, in the release namespace: the package's only replica
	r, err := env.StartReplica("monitoring", "--webhook-port="+port, "--fence-renew-interval=1s")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = r.Kill() })
	g.Eventually(leads(r)).WithTimeout(60 * time.Second).Should(Equal(1.0))
	_, err = env.Review(r, webhook.ValidatePath, harness.UnconfirmedMarkReview())
	g.Expect(err).NotTo(HaveOccurred())
	renewAcknowledged(t)

	exposed := scrapedNames(t, r)
	// liqo_janitor_build_info: one series, 1, naming what runs (the harness builds the binary from this
	// checkout with the test's own Go toolchain, unstamped: the version is Go's record of the module)
	info := buildInfo(t, r)
	g.Expect(info).To(HaveLen(1), "one liqo_janitor_build_info series")
	g.Expect(info[0].GetGauge().GetValue()).To(Equal(1.0))
	got := map[string]string{}
	for _, l := range info[0].GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	g.Expect(got).To(HaveKeyWithValue("go_version", runtime.Version()))
	g.Expect(got).To(HaveKeyWithValue("version", Not(BeEmpty())))
	g.Expect(got).To(HaveKeyWithValue("revision", Not(BeEmpty())))
	g.Expect(got).To(HaveLen(3))
	exprs, err := monitoring.Expressions(t.Context(), env.Root)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(len(exprs)).To(BeNumerically(">", 8), "the eight alerts and the dashboard's queries")
	for where, expr := range exprs {
		names, err := monitoring.MetricNames(expr)
		g.Expect(err).NotTo(HaveOccurred(), "%s: %s", where, expr)
		g.Expect(names).NotTo(BeEmpty(), "%s selects no metric", where)
		for _, name := range names {
			if !prometheusOwn[name] {
				g.Expect(exposed[name]).To(BeTrue(), "%s selects %s, which the binary does not expose", where, name)
			}
		}
	}
}

// renewAcknowledged makes this control plane its own provider (the fence agent in this process, a
// consumer's tenant, its credential in the release namespace) and waits until the replica's fence renewer
// has an acknowledged renewal of it: then its per-provider series exist.
func renewAcknowledged(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	stop, err := env.StartProviderFence(providerfence.Options{LiqoNamespace: liqojanitor.DefaultLiqoNamespace, Poll: time.Second}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(stop)
	tenant, err := fixture.LayOutTenant(ctx, env.Client, fixture.TenantSpec{ID: "consumer", Provider: "consumer", FenceAfter: "60s", Apps: []string{"web"}})
	g.Expect(err).NotTo(HaveOccurred())
	kubeconfig, err := env.FenceCredential(ctx, tenant.Namespace)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "fence-self", Namespace: manifests.ReleaseNamespace,
		Labels: map[string]string{liqojanitor.ProviderFenceSecretLabel: "consumer"}},
		Data: map[string][]byte{liqojanitor.ProviderFenceKubeconfigKey: kubeconfig}})).To(Succeed())
	g.Eventually(func() (*time.Time, error) {
		cm := &corev1.ConfigMap{}
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: manifests.ReleaseNamespace, Name: liqojanitor.FenceRenewalsConfigMap}, cm)
		return liqojanitor.FenceRenewals(cm)["consumer"].LastAck, client.IgnoreNotFound(err)
	}).WithTimeout(time.Minute).ShouldNot(BeNil(), "the replica's renewals are acknowledged")
}

// scrapedNames returns the names of every sample on the replica's /metrics (histograms with their
// _bucket, _sum and _count).
func scrapedNames(t *testing.T, r *harness.Replica) map[string]bool {
	t.Helper()
	g := NewWithT(t)
	resp, err := http.Get("http://" + r.Metrics + "/metrics") //nolint:noctx // a scrape in a test
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	names := map[string]bool{}
	for line := range strings.SplitSeq(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	return names
}

// buildInfo returns the replica's liqo_janitor_build_info samples.
func buildInfo(t *testing.T, r *harness.Replica) []*dto.Metric {
	t.Helper()
	g := NewWithT(t)
	resp, err := http.Get("http://" + r.Metrics + "/metrics") //nolint:noctx // a scrape in a test
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(families).To(HaveKey("liqo_janitor_build_info"))
	g.Expect(families["liqo_janitor_build_info"].GetType()).To(Equal(dto.MetricType_GAUGE))
	return families["liqo_janitor_build_info"].GetMetric()
}

// leads reports whether the replica holds the Lease (controller-runtime's leader_election_master_status).
func leads(r *harness.Replica) func() (float64, error) {
	return func() (float64, error) {
		return r.Metric("leader_election_master_status", map[string]string{"name": leaderElectionID})
	}
}
