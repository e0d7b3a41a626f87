package janitor_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// ProviderReturned is never lost (janitor rule 17): it is sent for a kept return whose record says it has
// not been told, and the record then says it was — so neither a conflict on the ForeignCluster's write nor a
// leader change between keeping the return and telling it leaves the operator without exactly one event.

// keptRecord is the janitor's record of fc's mark in the records ConfigMap of ns ("" when there is none).
func keptRecord(t *testing.T, ns string, fc *liqov1beta1.ForeignCluster) func() liqojanitor.KeptRecord {
	t.Helper()
	env := harness.Require(t)
	return func() liqojanitor.KeptRecord {
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: liqojanitor.RecordsConfigMap}, cm); err != nil {
			return liqojanitor.KeptRecord{}
		}
		return liqojanitor.KeptRecords(cm)[fc.UID]
	}
}

// keep writes rec for fc into the records ConfigMap of ns, as a janitor keeps it.
func keep(t *testing.T, ns string, fc *liqov1beta1.ForeignCluster, rec liqojanitor.KeptRecord) {
	t.Helper()
	env := harness.Require(t)
	value, err := json.Marshal(rec)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: liqojanitor.RecordsConfigMap},
		Data: map[string]string{string(fc.UID): string(value)}}
	NewWithT(t).Expect(env.Client.Create(t.Context(), cm)).To(Succeed())
}

// markedInOwnNamespace lays out one dead provider with two pods, marked (stamped now), for a janitor whose
// own namespace it returns (granted as the release namespace is).
func markedInOwnNamespace(t *testing.T) (string, *fixture.Provider) {
	t.Helper()
	env := harness.Require(t)
	ns := env.OwnNamespace(t)
	p := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 2}).Providers[0]
	kill(t, p)
	NewWithT(t).Expect(fixture.Mark(t.Context(), env.Client, p, markedAtNow()...)).To(Succeed())
	return ns, p
}

// TestAReturnKeptButNotToldIsToldByTheNextLeader: an earlier leader kept the return and stopped before it
// sent ProviderReturned; the next one sends it, once, and records that it did.
func TestAReturnKeptButNotToldIsToldByTheNextLeader(t *testing.T) {
	g := NewWithT(t)
	ns, p := markedInOwnNamespace(t)
	fc := get(t, p.ForeignCluster)
	keep(t, ns, fc, liqojanitor.KeptRecord{Mark: fc.Annotations[liqojanitor.MarkedAtAnnotation],
		Return: &liqojanitor.KeptReturn{At: liqojanitor.RecordTime(time.Now()), How: "the janitor's probe of https://provider.example:6443"}})

	startJanitor(t, janitor.Options{Namespace: ns, GracePeriod: time.Hour})
	told := func() int { return countReason(t, p, "ProviderReturned") }
	g.Eventually(told).WithTimeout(30 * time.Second).Should(Equal(1))
	g.Eventually(func() bool { return keptRecord(t, ns, fc)().Return.Told }).Should(BeTrue())
	g.Eventually(cleanupAnnotation(t, p)).Should(HavePrefix(liqojanitor.ReturnedPrefix))
	poke(t, p, janitor.WaitReturned, "1")
	g.Expect(told()).To(Equal(1), "told once")
	g.Expect(podsLeft(t, p)).To(Equal(2))
}

// conflictOnce makes the first ForeignCluster patch after it is armed fail with a conflict, as when the
// ForeignCluster changed between the janitor's read and its write, without sending it.
type conflictOnce struct {
	client.Client
	armed atomic.Bool
}

func (c *conflictOnce) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if _, ok := obj.(*liqov1beta1.ForeignCluster); ok && c.armed.CompareAndSwap(true, false) {
		return apierrors.NewConflict(schema.GroupResource{Group: "core.liqo.io", Resource: "foreignclusters"}, obj.GetName(),
			context.DeadlineExceeded)
	}
	return c.Client.Patch(ctx, obj, patch, opts...)
}

// TestProviderReturnedIsSentOnceWhenTheRecordsWriteConflicts: the janitor keeps the return, and its first
// write onto the ForeignCluster conflicts: the event is sent all the same, once; the record follows on a
// later pass, without a second event.
func TestProviderReturnedIsSentOnceWhenTheRecordsWriteConflicts(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns, p := markedInOwnNamespace(t)
	c := &conflictOnce{}
	stop, err := env.StartJanitorWith(janitor.Options{Namespace: ns, GracePeriod: time.Hour}, func(inner client.Client) client.Client {
		c.Client = inner
		return c
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { NewWithT(t).Expect(stop()).To(Succeed()) })
	g.Eventually(cleanupAnnotation(t, p)).WithTimeout(30 * time.Second).Should(HavePrefix(liqojanitor.GracePlanPrefix))

	c.armed.Store(true)
	g.Expect(fixture.Revive(ctx, env.Client, p)).To(Succeed())
	told := func() int { return countReason(t, p, "ProviderReturned") }
	g.Eventually(told).WithTimeout(30*time.Second).Should(Equal(1), "told though the record's write conflicted")
	g.Expect(c.armed.Load()).To(BeFalse(), "the write conflicted")
	g.Eventually(func() bool { return keptRecord(t, ns, get(t, p.ForeignCluster))().Return.Told }).Should(BeTrue())

	// A later pass (whatever brings it: the revival's own events, or this poke) writes the record.
	poke(t, p, janitor.WaitReturned, "1")
	g.Eventually(cleanupAnnotation(t, p)).Should(HavePrefix(liqojanitor.ReturnedPrefix))
	g.Expect(told()).To(Equal(1), "and tells nothing again")
}

// TestDeletingAReturnedForeignClusterNeverSilencesTheAlarm (janitor rule 10): the returned-clusters gauge
// counts the returns kept in the janitor's namespace, so a returned, unfenced cluster whose ForeignCluster
// is deleted still counts — after a restart too — until its fence is seen.
func TestDeletingAReturnedForeignClusterNeverSilencesTheAlarm(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns, p := markedInOwnNamespace(t)
	stop := startJanitor(t, janitor.Options{Namespace: ns, GracePeriod: time.Hour})
	g.Expect(fixture.Revive(ctx, env.Client, p)).To(Succeed())
	g.Eventually(returned).WithTimeout(30 * time.Second).Should(Equal(1.0))
	g.Eventually(func() *liqojanitor.KeptReturn { return keptRecord(t, ns, p.ForeignCluster)().Return }).ShouldNot(BeNil())

	g.Expect(env.Client.Delete(ctx, p.ForeignCluster.DeepCopy())).To(Succeed())
	g.Eventually(gone(t, p.ForeignCluster)).Should(BeTrue())
	stop()
	startJanitor(t, janitor.Options{Namespace: ns, GracePeriod: time.Hour})
	// The new janitor reads the kept returns before its first verdict: another cluster's pass makes one.
	other := build(t, fixture.Spec{Providers: 1}).Providers[0]
	kill(t, other)
	g.Expect(fixture.Mark(ctx, env.Client, other, markedAtNow()...)).To(Succeed())
	g.Eventually(cleanupAnnotation(t, other)).WithTimeout(30 * time.Second).Should(HavePrefix(liqojanitor.GracePlanPrefix))
	g.Expect(returned()).To(Equal(1.0), "the deleted ForeignCluster's return still counts")
}
