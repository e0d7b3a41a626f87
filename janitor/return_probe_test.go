package janitor_test

import (
	"strings"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// partitionedProvider starts a second real API server — the provider — behind a TCP proxy that refuses
// connections (a partition) until the test brings it Up, and names the proxy as the provider's API
// server in the status of p's ForeignCluster, as Liqo's ForeignCluster controller writes it.
func partitionedProvider(t *testing.T, p *fixture.Provider) *harness.Outage {
	t.Helper()
	link := providerBehind(t, p)
	link.Down()
	return link
}

// providerBehind is partitionedProvider with the link up: the provider answers.
func providerBehind(t *testing.T, p *fixture.Provider) *harness.Outage {
	t.Helper()
	g := NewWithT(t)
	env := harness.Require(t)
	provider, err := harness.Start(harness.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(provider.Stop()).To(Succeed()) })
	link, err := provider.NewOutage("provider-" + p.ID)
	g.Expect(err).NotTo(HaveOccurred())
	fc := get(t, p.ForeignCluster)
	fc.Status.APIServerURL = "https://" + link.Addr
	g.Expect(env.Client.Status().Update(t.Context(), fc)).To(Succeed())
	return link
}

func returned() float64 { return counter("liqo_janitor_returned_clusters", nil) }

func countReason(t *testing.T, p *fixture.Provider, reason string) int {
	t.Helper()
	n := 0
	for _, r := range eventReasons(t, "ForeignCluster", p.ForeignCluster.Name) {
		if r == reason {
			n++
		}
	}
	return n
}

// poke changes an annotation nobody decides on, so that the janitor makes a pass, and waits for it (a
// pass counted by reason).
func poke(t *testing.T, p *fixture.Provider, reason janitor.WaitReason, value string) {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	label := map[string]string{"reason": string(reason)}
	seen := counter("liqo_janitor_waits_total", label)
	g.Expect(fixture.Annotate(t.Context(), env.Client, p.ForeignCluster, map[string]*string{"example.com/poke": ptr.To(value)})).To(Succeed())
	g.Eventually(func() float64 { return counter("liqo_janitor_waits_total", label) }).Should(BeNumerically(">", seen))
}

func TestAProviderThatAnswersAgainIsReportedOncePerReturnAndGetsNothingMore(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	p := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 3}).Providers[0]
	kill(t, p)
	link := partitionedProvider(t, p)
	startJanitor(t, janitor.Options{ReturnProbeInterval: 200 * time.Millisecond})
	g.Expect(fixture.Mark(ctx, env.Client, p, liqojanitor.MarkedByAnnotation, "alice")).To(Succeed())
	g.Eventually(cleanupAnnotation(t, p)).WithTimeout(30*time.Second).Should(Equal("pods 3/3, resourceslices 1/1, namespacemaps 1/1, renews 1/1"),
		"while the partition holds, the probe finds nothing and the clean-up runs")
	g.Expect(returned()).To(BeZero())

	// The partition heals: Liqo's status still says Error, the janitor's own probe hears the provider.
	g.Expect(link.Up()).To(Succeed())
	g.Eventually(cleanupAnnotation(t, p)).WithTimeout(10 * time.Second).Should(HavePrefix(liqojanitor.ReturnedPrefix))
	summary := cleanupAnnotation(t, p)()
	for _, want := range []string{"answered the janitor's probe", "marked dead by alice", "pods force-deleted by the janitor: 3",
		"before: pods 3/3", "next: kubectl liqo-janitor fence " + p.ID} {
		g.Expect(summary).To(ContainSubstring(want))
	}
	g.Eventually(func() int { return countReason(t, p, "ProviderReturned") }).Should(Equal(1))
	g.Expect(returned()).To(Equal(1.0))

	// Releases stop for good: a pod deleted on the dead node now stays, even after the provider is gone again.
	link.Down()
	late, err := fixture.BindPod(ctx, env.Client, p, p.Pods[0].Namespace, p.ID+"-late", true)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Client.Delete(ctx, late, client.GracePeriodSeconds(30))).To(Succeed())
	poke(t, p, janitor.WaitReturned, "1")
	g.Expect(gone(t, late)()).To(BeFalse(), "nothing is released once the provider has returned")

	// The provider goes and comes back, and Liqo's status flips: still one return, one event.
	g.Expect(link.Up()).To(Succeed())
	g.Expect(fixture.Revive(ctx, env.Client, p)).To(Succeed())
	poke(t, p, janitor.WaitReturned, "2")
	g.Expect(countReason(t, p, "ProviderReturned")).To(Equal(1))
	g.Expect(cleanupAnnotation(t, p)()).To(Equal(summary), "the record of the return stays as written")

	// The operator fences: the janitor records it, says so once, and stops counting the cluster.
	// (no gate here: the test writes the record as the gate stamps it, for the recorded return)
	ret, ok := liqojanitor.RecordedReturn(get(t, p.ForeignCluster), time.Now())
	g.Expect(ok).To(BeTrue())
	fence := liqojanitor.FenceRecord{At: time.Now(), By: "bob", Return: ret.At, Counts: "shadowpods 3, pods 3"}.String()
	g.Expect(fixture.Annotate(ctx, env.Client, p.ForeignCluster, map[string]*string{liqojanitor.FencedAnnotation: &fence})).To(Succeed())
	g.Eventually(cleanupAnnotation(t, p)).Should(HaveSuffix("; fenced by bob: shadowpods 3, pods 3"))
	g.Expect(strings.HasPrefix(cleanupAnnotation(t, p)(), liqojanitor.ReturnedPrefix)).To(BeTrue())
	g.Eventually(func() int { return countReason(t, p, "Fenced") }).Should(Equal(1))
	g.Expect(returned()).To(BeZero())
	g.Expect(gone(t, late)()).To(BeFalse(), "a fence resumes nothing")
}

func TestAnAnswerDuringTheGraceWindowIsAReturnButAStatusFromBeforeTheMarkIsNot(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 2, PodsPerProvider: 2})
	early, vetoed := cons.Providers[0], cons.Providers[1]
	kill(t, early)
	// vetoed: Liqo saw it answering before the mark (what the gate's rule 4 refuses); it never went away.
	g.Expect(fixture.SetAPIServerStatus(ctx, env.Client, vetoed.ForeignCluster, liqov1beta1.ConditionStatusEstablished, time.Hour)).To(Succeed())
	g.Expect(fixture.Terminate(ctx, env.Client, vetoed)).To(Succeed())
	startJanitor(t, janitor.Options{GracePeriod: time.Hour})
	g.Expect(fixture.Mark(ctx, env.Client, early, markedAtNow()...)).To(Succeed())
	g.Expect(fixture.Mark(ctx, env.Client, vetoed, markedAtNow()...)).To(Succeed())
	g.Eventually(cleanupAnnotation(t, early)).Should(HavePrefix(liqojanitor.GracePlanPrefix))
	poke(t, vetoed, janitor.WaitReachable, "1")

	// Within the grace window (Liqo ≥ v1.1 already force-deleted the pods on the mark itself), Liqo sees
	// the provider answer again.
	at := metav1.Now()
	fc := get(t, early.ForeignCluster)
	fc.Status.Conditions = []liqov1beta1.Condition{{Type: liqov1beta1.APIServerStatusCondition, Status: liqov1beta1.ConditionStatusEstablished,
		LastTransitionTime: at}}
	g.Expect(env.Client.Status().Update(ctx, fc)).To(Succeed())
	g.Eventually(cleanupAnnotation(t, early)).Should(HavePrefix(liqojanitor.ReturnedPrefix))
	g.Expect(cleanupAnnotation(t, early)()).To(ContainSubstring("Liqo's APIServerStatus turned Established"))
	g.Eventually(func() int { return countReason(t, early, "ProviderReturned") }).Should(Equal(1))

	g.Expect(countReason(t, vetoed, "ProviderReturned")).To(BeZero())
	g.Expect(cleanupAnnotation(t, vetoed)()).To(BeEmpty(), "a mark against a live provider waits, writing nothing (rule 2)")
	g.Expect(returned()).To(Equal(1.0))
	g.Expect(podsLeft(t, early)).To(Equal(2))
	g.Expect(podsLeft(t, vetoed)).To(Equal(2))
}

// TestTheJanitorProbesAtFirstSightAndBeforeItsFirstRelease (janitor rule 16): its rounds come every
// --return-probe-interval (here an hour, after the one at start, before either mark), but it probes a
// confirmed mark's provider once when it first sees the mark and once right before it first releases
// anything for it, so neither a provider that answers at the mark nor one that comes back after the first
// sight slips through the interval. The brake holds the first cluster's release until its provider is back.
func TestTheJanitorProbesAtFirstSightAndBeforeItsFirstRelease(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns := env.OwnNamespace(t)
	cons := build(t, fixture.Spec{Providers: 2, PodsPerProvider: 2})
	later, atMark := cons.Providers[0], cons.Providers[1]
	kill(t, later)
	kill(t, atMark)
	providerBehind(t, atMark) // it answers all along (started first: no API server starts after a partition)
	partitioned := partitionedProvider(t, later)
	brake := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: liqojanitor.BrakeConfigMap}}
	g.Expect(env.Client.Create(ctx, brake)).To(Succeed())
	startJanitor(t, janitor.Options{Namespace: ns, ReturnProbeInterval: time.Hour, GracePeriod: time.Second})

	g.Expect(fixture.Mark(ctx, env.Client, later, markedAtNow()...)).To(Succeed())
	g.Eventually(func() []string { return eventMessages(t, "ForeignCluster", later.ForeignCluster.Name, "Waiting") }).
		WithTimeout(30*time.Second).Should(ContainElement(ContainSubstring("brake is set")), "past its grace period, held by the brake alone")

	g.Expect(fixture.Mark(ctx, env.Client, atMark, markedAtNow()...)).To(Succeed())
	g.Eventually(cleanupAnnotation(t, atMark)).WithTimeout(30*time.Second).Should(HavePrefix(liqojanitor.ReturnedPrefix),
		"the probe at the first sight hears it")
	g.Expect(cleanupAnnotation(t, atMark)()).To(ContainSubstring("answered the janitor's probe"))

	g.Expect(partitioned.Up()).To(Succeed())
	g.Expect(env.Client.Delete(ctx, brake)).To(Succeed())
	g.Eventually(cleanupAnnotation(t, later)).WithTimeout(30*time.Second).Should(HavePrefix(liqojanitor.ReturnedPrefix),
		"the probe before the first release hears it")
	g.Expect(podsLeft(t, later)).To(Equal(2), "nothing is released")
	g.Expect(podsLeft(t, atMark)).To(Equal(2))
}

// TestAMarkFirstSeenAfterLiqoForgotTheProviderIsProbedWhereTheGateRecordedIt (janitor rule 16, gate rule
// 23): the gate recorded where the provider was when it admitted the mark; Liqo then cleared the status
// (force unpeer) before the janitor first saw the mark. The janitor keeps the gate's record as its targets,
// and hears the provider when it answers again.
func TestAMarkFirstSeenAfterLiqoForgotTheProviderIsProbedWhereTheGateRecordedIt(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	p := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 2}).Providers[0]
	kill(t, p)
	link := partitionedProvider(t, p)
	url := get(t, p.ForeignCluster).Status.APIServerURL
	recorded := liqojanitor.MarkTargets{Targets: liqojanitor.Targets{APIServer: url}, From: "the ForeignCluster's status", At: time.Now()}
	g.Expect(fixture.Mark(ctx, env.Client, p, liqojanitor.MarkTargetsAnnotation, recorded.String())).To(Succeed())
	fc := get(t, p.ForeignCluster)
	fc.Status.APIServerURL = "" // Liqo forgets it
	g.Expect(env.Client.Status().Update(ctx, fc)).To(Succeed())

	startJanitor(t, janitor.Options{ReturnProbeInterval: 200 * time.Millisecond, GracePeriod: time.Hour})
	g.Eventually(cleanupAnnotation(t, p)).WithTimeout(30 * time.Second).Should(HavePrefix(liqojanitor.GracePlanPrefix))
	g.Expect(link.Up()).To(Succeed())
	g.Eventually(cleanupAnnotation(t, p)).WithTimeout(30*time.Second).Should(HavePrefix(liqojanitor.ReturnedPrefix),
		"the janitor probes where the gate recorded the provider")
	g.Expect(cleanupAnnotation(t, p)()).To(ContainSubstring(url))
}
