package janitor_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// Liqo v1.2.0's webhooks the janitor's writes pass through (deployments/liqo/templates/webhooks), all
// with failurePolicy Fail.
const (
	liqoFCWebhook    = "fc.mutate.liqo.io"
	liqoSliceWebhook = "resourceslice.validate.liqo.io"
)

// liqoWebhookDown registers stand-ins for Liqo's ForeignCluster and ResourceSlice webhooks, as Liqo
// registers them (failurePolicy Fail), calling an address where nothing listens: Liqo's webhook pod is
// down. It returns when the API server enforces them, and a function that brings Liqo's webhook back
// (here: the stand-ins go, as if it answered and allowed again).
func liqoWebhookDown(t *testing.T, probe *fixture.Provider) (recover func()) {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	down := admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/")}
	rule := func(group, resource string) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"UPDATE"},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"v1beta1"}, Resources: []string{resource}}}}
	}
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "liqo-mutating-standin"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: liqoFCWebhook, ClientConfig: down, Rules: rule("core.liqo.io", "foreignclusters"),
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}}}}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "liqo-validating-standin"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: liqoSliceWebhook, ClientConfig: down,
			Rules: rule("authentication.liqo.io", "resourceslices"), FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}}}}
	for _, obj := range []client.Object{mutating, validating} {
		g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	}
	recover = func() {
		for _, obj := range []client.Object{mutating, validating} {
			_ = client.IgnoreNotFound(env.Client.Delete(context.Background(), obj))
		}
	}
	t.Cleanup(recover)
	g.Eventually(func() error {
		return fixture.Annotate(ctx, env.Client, probe.ForeignCluster, map[string]*string{"example.com/probe": ptr.To("1")}, client.DryRunAll)
	}).Should(MatchError(ContainSubstring(`failed calling webhook "` + liqoFCWebhook + `"`)))
	return recover
}

// liqoWebhooks runs a test twice: against stand-ins for Liqo's webhooks (liqoWebhookDown), and against
// Liqo v1.2.0's real webhook binary with its chart's configurations, started before the test builds its
// peering (Liqo's webhooks must have seen the objects they later admit) and stopped by down.
func liqoWebhooks(t *testing.T, test func(t *testing.T, down func(*testing.T, *fixture.Provider) (recover func()))) {
	t.Helper()
	t.Run("stand-in", func(t *testing.T) { test(t, liqoWebhookDown) })
	t.Run("Liqo's real webhook", func(t *testing.T) {
		env := harness.Require(t)
		g := NewWithT(t)
		ns := fixture.Prefix("liqo-") // Liqo's namespace, which InstallLocalClusterID creates
		g.Expect(env.InstallLocalClusterID(t.Context(), ns, "consumer")).To(Succeed())
		t.Cleanup(func() {
			_ = env.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		})
		w, err := env.StartLiqoWebhook(t.Context(), ns)
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(func() { g.Expect(w.Remove(context.Background())).To(Succeed()) })
		test(t, func(t *testing.T, p *fixture.Provider) func() {
			t.Helper()
			g.Expect(w.Stop()).To(Succeed())
			// Removed again before the test's layout is retired (build's clean-up, registered earlier),
			// which a stopped webhook would refuse.
			t.Cleanup(func() { g.Expect(w.Remove(context.Background())).To(Succeed()) })
			g.Eventually(func() error {
				return fixture.Annotate(t.Context(), env.Client, p.ForeignCluster, map[string]*string{"example.com/probe": ptr.To("1")}, client.DryRunAll)
			}).Should(MatchError(ContainSubstring(`failed calling webhook "` + liqoFCWebhook + `"`)))
			return func() { g.Expect(w.Start(context.Background())).To(Succeed()) }
		})
	})
}

func TestWhileLiqosWebhookIsDownTheJanitorSaysSoAndFinishesSoonAfterItReturns(t *testing.T) {
	liqoWebhooks(t, janitorWhileLiqosWebhookIsDown)
}

func janitorWhileLiqosWebhookIsDown(t *testing.T, liqoWebhookDown func(*testing.T, *fixture.Provider) func()) {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	p := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 3, ExtraResourceSlices: 20}).Providers[0]
	kill(t, p)
	g.Expect(fixture.Mark(ctx, env.Client, p)).To(Succeed())
	recover := liqoWebhookDown(t, p)
	refusedSlices := map[string]string{"kind": "ResourceSlice", "result": "refused_by_webhook"}
	refusedBefore := counter("liqo_janitor_objects_total", refusedSlices)
	calls := func() float64 {
		n, err := env.APIServerMetric(ctx, "apiserver_admission_webhook_rejection_count", map[string]string{"name": liqoSliceWebhook})
		g.Expect(err).NotTo(HaveOccurred())
		return n
	}
	callsBefore := calls()
	startJanitor(t, janitor.Options{})

	// What Liqo's webhook does not stand in the way of goes at once.
	g.Eventually(func() int { return podsLeft(t, p) }).WithTimeout(30 * time.Second).Should(BeZero())
	g.Eventually(gone(t, p.NamespaceMap)).Should(BeTrue())
	g.Eventually(gone(t, p.Renew)).Should(BeTrue())
	// The rest waits, and the janitor says what for: one event naming both webhooks.
	g.Eventually(func() []string { return eventReasons(t, "ForeignCluster", p.ForeignCluster.Name) }).Should(ContainElement("BlockedByWebhook"))
	note := eventNote(t, p, "BlockedByWebhook")
	g.Expect(note).To(ContainSubstring(liqoFCWebhook + ", " + liqoSliceWebhook))
	g.Expect(note).To(ContainSubstring("resourceslices 21, the cleanup record"))
	g.Expect(gone(t, p.ResourceSlice)()).To(BeFalse())
	g.Expect(get(t, p.ResourceSlice).Finalizers).To(ContainElement(liqojanitor.ReplicatorFinalizer))
	g.Expect(counter("liqo_janitor_objects_total", refusedSlices)).To(BeNumerically(">=", refusedBefore+21))

	// No storm: a pass tries one ResourceSlice write, not 21, and passes come seconds apart.
	after := calls()
	g.Consistently(calls).WithTimeout(6*time.Second).WithPolling(500*time.Millisecond).Should(BeNumerically("<=", after+4),
		"at most a few refused writes in 6s")
	g.Expect(after-callsBefore).To(BeNumerically("<=", 21+2), "the first pass's concurrent writes, then one a pass")

	// Liqo's webhook answers again: the rest goes within seconds, and the record is written.
	recover()
	g.Eventually(cleanupAnnotation(t, p)).WithTimeout(20 * time.Second).Should(Equal("pods 3/3, resourceslices 21/21, namespacemaps 1/1, renews 1/1"))
	g.Eventually(func() []string { return eventReasons(t, "ForeignCluster", p.ForeignCluster.Name) }).Should(ContainElements("WebhookAnswering", "CleanupStarted", "CleanupDone"))
	g.Expect(countReason(t, p, "CleanupStarted")).To(Equal(1), "the phase events fire once, on the record that was written")
}

// eventNote is the note of p's ForeignCluster's event of reason.
func eventNote(t *testing.T, p *fixture.Provider, reason string) string {
	t.Helper()
	for _, e := range events(t) {
		if e.Regarding.Kind == "ForeignCluster" && e.Regarding.Name == p.ForeignCluster.Name && e.Reason == reason {
			return e.Note
		}
	}
	return ""
}

// A return the janitor cannot write onto the ForeignCluster — Liqo's webhook refusing every ForeignCluster
// write — is kept in the janitor's namespace first (janitor rule 17), said once, and read by the next
// leader: a janitor restarted after the provider went again releases nothing, and writes the return's
// record once Liqo's webhook answers, without a second ProviderReturned.
func TestAReturnLiqosWebhookRefusesIsKeptAndSurvivesARestart(t *testing.T) {
	liqoWebhooks(t, returnKeptWhileLiqosWebhookIsDown)
}

func returnKeptWhileLiqosWebhookIsDown(t *testing.T, liqoWebhookDown func(*testing.T, *fixture.Provider) func()) {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns := env.OwnNamespace(t) // the janitor's own namespace, granted as the release namespace is
	p := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 3}).Providers[0]
	kill(t, p)
	g.Expect(fixture.Mark(ctx, env.Client, p, markedAtNow()...)).To(Succeed())
	recover := liqoWebhookDown(t, p)
	// Liqo sees the provider answer again, within the grace window (its status is no annotation write).
	g.Expect(fixture.Revive(ctx, env.Client, p)).To(Succeed())
	opts := janitor.Options{Namespace: ns, GracePeriod: 2 * time.Second}
	errorsBefore := reconcileErrors()
	stop := startJanitor(t, opts)

	kept := func() string {
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "liqo-janitor-records"}, cm); err != nil {
			return ""
		}
		return cm.Data[string(p.ForeignCluster.UID)]
	}
	g.Eventually(kept).WithTimeout(30 * time.Second).Should(ContainSubstring(`"how":"Liqo's APIServerStatus turned Established"`))
	g.Eventually(func() int { return countReason(t, p, "ProviderReturned") }).Should(Equal(1), "said once, though not written onto the ForeignCluster")
	g.Eventually(func() string { return eventNote(t, p, "BlockedByWebhook") }).Should(ContainSubstring("the return record"))
	g.Consistently(reconcileErrors).WithTimeout(3*time.Second).Should(Equal(errorsBefore),
		"a refused record is no reconcile error: it comes back on the capped backoff")
	g.Expect(cleanupAnnotation(t, p)()).NotTo(HavePrefix(liqojanitor.ReturnedPrefix), "Liqo's webhook refuses the record")

	// The provider is gone again, and the janitor restarts: it reads the kept return before its first
	// verdict, long after the grace window.
	kill(t, p)
	stop()
	returnedPasses := map[string]string{"reason": string(janitor.WaitReturned)}
	before := counter("liqo_janitor_waits_total", returnedPasses)
	startJanitor(t, opts)
	g.Eventually(func() float64 { return counter("liqo_janitor_waits_total", returnedPasses) }).WithTimeout(30*time.Second).
		Should(BeNumerically(">", before), "the next janitor knows the return")
	g.Expect(podsLeft(t, p)).To(Equal(3), "nothing released after the return")

	recover()
	g.Eventually(cleanupAnnotation(t, p)).WithTimeout(30 * time.Second).Should(HavePrefix(liqojanitor.ReturnedPrefix))
	g.Expect(cleanupAnnotation(t, p)()).To(ContainSubstring("Liqo's APIServerStatus turned Established"))
	returnedEvents := func() int { return countReason(t, p, "ProviderReturned") }
	g.Eventually(returnedEvents).WithTimeout(30*time.Second).Should(Equal(1), "the event follows the record's write")
	g.Consistently(returnedEvents).WithTimeout(time.Second).Should(Equal(1))
	g.Expect(podsLeft(t, p)).To(Equal(3))

	// Unmarked: the kept return goes with its mark, and the cluster is no longer counted.
	g.Expect(fixture.Annotate(ctx, env.Client, p.ForeignCluster, map[string]*string{liqojanitor.MarkAnnotation: nil})).To(Succeed())
	g.Eventually(kept).Should(BeEmpty())
	g.Eventually(returned).Should(BeZero())
}

// A grace-window plan Liqo's webhook refuses to let the janitor write is no error (janitor rules 9, 11): the
// Waiting event shows it, and the pass returns a requeue alone — never an error, which would put the
// ForeignCluster on the controller's exponential backoff and drop the requeue.
// reconcileErrors is how many passes of the janitor's controller have returned an error.
func reconcileErrors() float64 {
	return counter("controller_runtime_reconcile_errors_total", map[string]string{"controller": "liqo-janitor"})
}

func TestAPlanLiqosWebhookRefusesIsNoError(t *testing.T) {
	liqoWebhooks(t, planWhileLiqosWebhookIsDown)
}

func planWhileLiqosWebhookIsDown(t *testing.T, liqoWebhookDown func(*testing.T, *fixture.Provider) func()) {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	p := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 3}).Providers[0]
	kill(t, p)
	g.Expect(fixture.Mark(ctx, env.Client, p)).To(Succeed())
	liqoWebhookDown(t, p)
	before := reconcileErrors()
	startJanitor(t, janitor.Options{GracePeriod: time.Hour})
	g.Eventually(func() string { return eventNote(t, p, "Waiting") }).WithTimeout(30 * time.Second).Should(ContainSubstring("; then it would release pods 3"))
	g.Consistently(reconcileErrors).WithTimeout(3*time.Second).Should(Equal(before), "the refused plan is no reconcile error")
	g.Expect(cleanupAnnotation(t, p)()).To(BeEmpty(), "Liqo's webhook refused the plan's write")
	g.Expect(podsLeft(t, p)).To(Equal(3))
}
