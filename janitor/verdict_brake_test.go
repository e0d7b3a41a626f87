package janitor_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// The janitor-wide brake (janitor rule 14) needs no ForeignCluster write: with Liqo's webhook refusing
// every ForeignCluster write (no pause, no unmark possible), an operator creates the ConfigMap
// liqo-janitor-brake in the janitor's namespace. Set before a pass, nothing is released; set during one,
// at most the batch under way goes (it is read before every batch); deleted, the clean-up goes on.
func TestTheBrakeStopsACleanupThatNoForeignClusterWriteCanStop(t *testing.T) {
	liqoWebhooks(t, brakeWhileLiqosWebhookIsDown)
}

func brakeWhileLiqosWebhookIsDown(t *testing.T, liqoWebhookDown func(*testing.T, *fixture.Provider) func()) {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns := env.OwnNamespace(t) // the janitor's own namespace, granted as the release namespace is
	p := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 1000}).Providers[0]
	kill(t, p)
	g.Expect(fixture.Mark(ctx, env.Client, p)).To(Succeed())
	liqoWebhookDown(t, p)
	g.Expect(fixture.Annotate(ctx, env.Client, p.ForeignCluster, map[string]*string{liqojanitor.PausedAnnotation: ptr.To("true")})).
		To(MatchError(ContainSubstring("failed calling webhook")), "nobody can pause the cluster")
	brake := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: liqojanitor.BrakeConfigMap},
		Data: map[string]string{liqojanitor.BrakeReasonKey: "wrong provider?"}}
	g.Expect(env.Client.Create(ctx, brake)).To(Succeed())

	const workers, batch = 1, 10
	startJanitor(t, janitor.Options{Namespace: ns, Workers: workers, BatchSize: batch})
	g.Eventually(func() string { return eventNote(t, p, "Waiting") }).WithTimeout(30 * time.Second).
		Should(ContainSubstring(`The janitor-wide brake is set (ConfigMap liqo-janitor-brake: "wrong provider?")`))
	g.Expect(counter("liqo_janitor_brake", nil)).To(Equal(1.0))
	g.Consistently(func() int { return podsLeft(t, p) }).WithTimeout(3*time.Second).Should(Equal(len(p.Pods)),
		"set before the pass: nothing is released")

	g.Expect(env.Client.Delete(ctx, brake)).To(Succeed())
	g.Eventually(func() int { return podsLeft(t, p) }).WithTimeout(30*time.Second).WithPolling(5*time.Millisecond).
		Should(BeNumerically("<", len(p.Pods)), "released once it goes")
	brake.ResourceVersion = ""
	g.Expect(env.Client.Create(ctx, brake)).To(Succeed())
	set := podsLeft(t, p) // counted after the brake is set: a pass may still be in its batch
	g.Consistently(func() int { return podsLeft(t, p) }).WithTimeout(3*time.Second).Should(BeNumerically(">=", set-batch-workers),
		"set during a pass: at most the batch under way goes")
	g.Expect(env.Client.Delete(ctx, brake)).To(Succeed())
	g.Eventually(func() int { return podsLeft(t, p) }).WithTimeout(60 * time.Second).Should(BeZero())
	g.Expect(counter("liqo_janitor_brake", nil)).To(BeZero())
}
