package janitor_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
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

func TestWhileLiqosWebhookIsDownTheJanitorSaysSoAndFinishesSoonAfterItReturns(t *testing.T) {
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
