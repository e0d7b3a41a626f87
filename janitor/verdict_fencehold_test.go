package janitor_test

import (
	"context"
	"sync"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// fenceContract is a provider's contract as its agent publishes it: SafeAfter about 130 s.
func fenceContract(provider string) liqojanitor.FenceContract {
	return liqojanitor.FenceContract{FenceAfter: liqojanitor.Duration(time.Minute), Poll: liqojanitor.Duration(5 * time.Second),
		GraceCap: liqojanitor.Duration(10 * time.Second), Failover: liqojanitor.Duration(15 * time.Second),
		Stop: liqojanitor.Duration(30 * time.Second), ProviderClusterID: provider}
}

// writeFenceRecords writes, as the janitor's renewer would, the records of the providers' fences into the
// ConfigMap liqo-janitor-fence-renewals of the janitor's namespace ns, each value as given.
func writeFenceRecords(t *testing.T, ns string, values map[string]string) {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: liqojanitor.FenceRenewalsConfigMap}}
	err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(cm), cm)
	if apierrors.IsNotFound(err) {
		cm.Data = values
		g.Expect(env.Client.Create(t.Context(), cm)).To(Succeed())
		return
	}
	g.Expect(err).NotTo(HaveOccurred())
	cm.Data = values
	g.Expect(env.Client.Update(t.Context(), cm)).To(Succeed())
}

// fenceRecordUntil is the renewer's record of a provider whose fence completes at deadline: its last
// renewal that may have landed SafeAfter before.
func fenceRecordUntil(provider string, deadline time.Time) string {
	c := fenceContract(provider)
	landed := deadline.Add(-c.SafeAfter())
	return liqojanitor.FenceRenewal{Contract: c.String(), LastAck: &landed, LastLanded: &landed}.String()
}

// firstWrite is the janitor's client, recording when it first wrote to an object of a cluster — anything but
// a ForeignCluster (its own keys) and the ConfigMaps of its namespace (its records) — on this machine's
// clock, taken before the request is sent: no write of the API server's happened earlier.
type firstWrite struct {
	client.Client
	own string

	mu sync.Mutex
	at time.Time
}

func (w *firstWrite) note(obj client.Object) {
	if _, fc := obj.(*liqov1beta1.ForeignCluster); fc || obj.GetNamespace() == w.own {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.at.IsZero() {
		w.at = now
	}
}

func (w *firstWrite) first() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.at
}

func (w *firstWrite) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	w.note(obj)
	return w.Client.Delete(ctx, obj, opts...)
}

func (w *firstWrite) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	w.note(obj)
	return w.Client.Patch(ctx, obj, patch, opts...)
}

func (w *firstWrite) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	w.note(obj)
	return w.Client.Update(ctx, obj, opts...)
}

// waitingNotes are the notes of the Waiting events on p's ForeignCluster.
func waitingNotes(t *testing.T, p *fixture.Provider) []string {
	t.Helper()
	var notes []string
	for _, e := range events(t) {
		if e.Regarding.Kind == "ForeignCluster" && e.Regarding.Name == p.ForeignCluster.Name && e.Reason == "Waiting" {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// TestAMarkPastTheGateWaitsForTheProvidersFence (janitor rule 22): the provider fences this consumer by
// itself, and its deadline is 20 s ahead; the mark is made past the gate (this package's control plane
// registers no webhook: the mark lands unstamped, as the policy fallback admits one or Liqo v1.0's tools
// write it), and the grace period is 1 s. The janitor shows its plan with what it waits for, releases
// nothing before the deadline — its first write to the cluster's objects is at or after it, on this
// machine's clock — and releases everything once it has passed, woken at the deadline.
func TestAMarkPastTheGateWaitsForTheProvidersFence(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns := env.OwnNamespace(t)
	p := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 3}).Providers[0]
	kill(t, p)
	deadline := time.Now().Add(20 * time.Second)
	writeFenceRecords(t, ns, map[string]string{p.ID: fenceRecordUntil(p.ID, deadline)})
	w := &firstWrite{own: ns}
	stop, err := env.StartJanitorWith(janitor.Options{Namespace: ns, GracePeriod: time.Second}, func(inner client.Client) client.Client {
		w.Client = inner
		return w
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { NewWithT(t).Expect(stop()).To(Succeed()) })
	g.Expect(fixture.Mark(ctx, env.Client, p)).To(Succeed())

	waiting := "waiting for the provider's fence until " + deadline.UTC().Format(time.RFC3339) +
		" (the provider's contract: provider " + p.ID + " fences after 1m0s without a renewal"
	g.Eventually(cleanupAnnotation(t, p)).WithTimeout(15 * time.Second).Should(And(HavePrefix(liqojanitor.GracePlanPrefix),
		ContainSubstring(waiting), HaveSuffix("then it would release pods 3, resourceslices 1, namespacemaps 1, renews 1")))
	g.Eventually(func() []string { return waitingNotes(t, p) }).Should(ContainElement(And(ContainSubstring(waiting),
		ContainSubstring("nothing is released before"))))

	mc, err := metadata.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	plan, err := janitor.PlanCluster(ctx, env.Client, mc, p.ForeignCluster.Name, janitor.Options{Namespace: ns})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(plan.Wait).To(Equal(janitor.WaitFenceDeadline))
	g.Expect(plan.FenceDeadline).To(BeTemporally("==", deadline))
	g.Expect(plan.FenceLeft).To(BeNumerically(">", 0))
	g.Expect(liqojanitor.ParseFenceContract(plan.FenceContract)).To(Equal(fenceContract(p.ID)))
	g.Expect(plan.Summary).To(HavePrefix(waiting))
	g.Expect(w.first()).To(BeZero(), "nothing released before the deadline")

	g.Eventually(func() int { return podsLeft(t, p) }).WithTimeout(45 * time.Second).Should(BeZero())
	first := w.first()
	g.Expect(first).To(BeTemporally(">=", deadline), "the janitor's first write to the cluster's objects is at or after the deadline")
	g.Expect(first).To(BeTemporally("<", deadline.Add(5*time.Second)), "woken at the deadline")
	g.Eventually(cleanupAnnotation(t, p)).Should(Equal("pods 3/3, resourceslices 1/1, namespacemaps 1/1, renews 1/1"))
}

// TestWithoutAContractOrALandedRenewalNothingIsAwaited (janitor rule 22): a record without the provider's
// contract (no provider-side fence), or without a renewal that may have landed (the provider's agent never
// armed for this consumer), holds nothing: the janitor releases after the grace period, as without a record.
func TestWithoutAContractOrALandedRenewalNothingIsAwaited(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns := env.OwnNamespace(t)
	cons := build(t, fixture.Spec{Providers: 2, PodsPerProvider: 2})
	noContract, notLanded := cons.Providers[0], cons.Providers[1]
	now := time.Now()
	writeFenceRecords(t, ns, map[string]string{
		noContract.ID: liqojanitor.FenceRenewal{LastAck: &now, LastLanded: &now}.String(),
		notLanded.ID:  liqojanitor.FenceRenewal{Contract: fenceContract(notLanded.ID).String()}.String(),
	})
	startJanitor(t, janitor.Options{Namespace: ns, GracePeriod: time.Second})
	for _, p := range cons.Providers {
		kill(t, p)
		g.Expect(fixture.Mark(ctx, env.Client, p)).To(Succeed())
	}
	for _, p := range cons.Providers {
		g.Eventually(func() int { return podsLeft(t, p) }).WithTimeout(20*time.Second).Should(BeZero(), p.ID)
	}
}

// TestAnUnreadableFenceRecordHoldsUntilItIsRead (janitor rule 22): the renewer's record of the provider is
// garbage, then carries a contract that does not parse: the janitor cannot know the provider's deadline, so
// it releases nothing and says why; once the record reads again (here with a deadline passed), the change
// of the ConfigMap wakes the cluster and it is released at once.
func TestAnUnreadableFenceRecordHoldsUntilItIsRead(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns := env.OwnNamespace(t)
	p := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 2}).Providers[0]
	kill(t, p)
	writeFenceRecords(t, ns, map[string]string{p.ID: "{not json"})
	startJanitor(t, janitor.Options{Namespace: ns, GracePeriod: time.Second})
	g.Expect(fixture.Mark(ctx, env.Client, p)).To(Succeed())

	unreadable := func(what string) []types.GomegaMatcher {
		return []types.GomegaMatcher{ContainSubstring("the janitor's record of the provider's fence cannot be read"),
			ContainSubstring("key " + p.ID + " of ConfigMap " + ns + "/" + liqojanitor.FenceRenewalsConfigMap), ContainSubstring(what)}
	}
	g.Eventually(func() []string { return waitingNotes(t, p) }).WithTimeout(15 * time.Second).
		Should(ContainElement(And(unreadable("not a fence renewal record")...)))
	g.Expect(cleanupAnnotation(t, p)()).To(ContainSubstring("waiting for the provider's fence, whose record is unreadable"))
	g.Consistently(func() int { return podsLeft(t, p) }).WithTimeout(3*time.Second).Should(Equal(len(p.Pods)),
		"held past the grace period")

	landed := time.Now()
	writeFenceRecords(t, ns, map[string]string{p.ID: liqojanitor.FenceRenewal{Contract: `{"fenceAfter":"1m"}`, LastLanded: &landed}.String()})
	g.Eventually(func() []string { return waitingNotes(t, p) }).WithTimeout(15 * time.Second).
		Should(ContainElement(And(unreadable("the record's contract")...)))
	g.Consistently(func() int { return podsLeft(t, p) }).WithTimeout(2 * time.Second).Should(Equal(len(p.Pods)))
	g.Expect(counter("liqo_janitor_waits_total", map[string]string{"reason": string(janitor.WaitFenceUnreadable)})).To(BeNumerically(">", 0))

	writeFenceRecords(t, ns, map[string]string{p.ID: fenceRecordUntil(p.ID, time.Now().Add(-time.Second))})
	// well before the 30 s recheck of an unreadable record: the change of the ConfigMap wakes the cluster
	g.Eventually(func() int { return podsLeft(t, p) }).WithTimeout(10 * time.Second).Should(BeZero())
}
