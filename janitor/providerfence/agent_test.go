package providerfence_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor/providerfence"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

func TestMain(m *testing.M) {
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	os.Exit(harness.Run(m, harness.Options{}, func(e *harness.Env) error {
		return e.InstallLocalClusterID(context.Background(), liqoNamespace, providerID)
	}))
}

// Short settings (issue 36's tests): renew every 1 s, poll every 1 s, fence after 8 s.
const (
	renewEvery = time.Second
	poll       = time.Second
	fenceAfter = 8 * time.Second
	graceCap   = 2 * time.Second
	// slack is what a loaded machine may add to a poll's own bound.
	slack = 5 * time.Second
)

var opts = providerfence.Options{LiqoNamespace: liqoNamespace, Poll: poll, GraceCap: graceCap, Version: "test"}

// startFence runs an agent on e through cfg (nil: the admin) until the end of the test.
func startFence(t *testing.T, e *harness.Env, cfg *rest.Config) {
	t.Helper()
	stop, err := e.StartProviderFence(opts, cfg)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(stop)
}

// TestOnlyAnOptedInConsumerThatRenewedIsFenced: a consumer whose Tenant does not opt in gets nothing
// written (fence rule 1), one that opted in but never renewed gets the contract and nothing else, and is
// never fenced (rule 4) — by the time a renewing witness is fenced, both were looked at for longer than
// fenceAfter.
func TestOnlyAnOptedInConsumerThatRenewedIsFenced(t *testing.T) {
	e := env(t)
	g := NewWithT(t)
	c := e.Client
	notOptedIn := layOut(t, c, "")
	neverRenewed := layOut(t, c, fenceAfter.String())
	witness := layOut(t, c, fenceAfter.String())
	before, err := fixture.ResourceVersions(t.Context(), c, append(append(notOptedIn.Mine, notOptedIn.Tenant), neverRenewed.Mine...)...)
	g.Expect(err).NotTo(HaveOccurred())
	startFence(t, e, nil)

	r := startRenewing(t, c, witness, renewEvery, 0)
	g.Eventually(r.Count).Should(BeNumerically(">=", 3))
	r.Stop()
	awaitFence(t, c, witness, time.Minute)

	for _, name := range []string{liqojanitor.FenceLeaseName, liqojanitor.FenceStateLeaseName} {
		err := c.Get(t.Context(), client.ObjectKey{Namespace: notOptedIn.Namespace, Name: name}, &coordinationv1.Lease{})
		g.Expect(err).To(MatchError(ContainSubstring("not found")), "nothing is written for a consumer that did not opt in")
	}
	lease := awaitLease(t, c, neverRenewed)
	contract, err := liqojanitor.ParseFenceContract(lease.Annotations[liqojanitor.FenceContractAnnotation])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(contract.ProviderClusterID).To(Equal(providerID))
	g.Expect(time.Duration(contract.FenceAfter)).To(Equal(fenceAfter))
	g.Expect(lease.Annotations).NotTo(HaveKey(liqojanitor.ArmedAtAnnotation))
	g.Expect(lease.Annotations).NotTo(HaveKey(liqojanitor.SeenRVAnnotation))
	g.Expect(state(t, c, neverRenewed).ArmedAt).To(BeNil())
	after, err := fixture.ResourceVersions(t.Context(), c, append(append(notOptedIn.Mine, notOptedIn.Tenant), neverRenewed.Mine...)...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after).To(Equal(before), "neither consumer's ShadowPods, pods or Tenant are touched")
	g.Expect(tenantCondition(t, c, neverRenewed)).To(Equal(authv1beta1.TenantConditionActive))
}

// TestTheFenceStopsExactlyTheLostConsumer: consumer C stops renewing — its last renewals carrying a
// renewTime a year ahead, which must extend nothing (fence rule 3) — while D renews on. The agent fences
// C, fenceAfter after its last observation and within a poll (and a loaded machine's slack) of it: C's
// Tenant is Cordoned, C's ShadowPods and pods are gone; C's PVC, Service, ConfigMap, Secret and
// namespaces, everything of D and a look-alike namespace of another tenant are untouched (fence rule 5).
func TestTheFenceStopsExactlyTheLostConsumer(t *testing.T) {
	e := env(t)
	g := NewWithT(t)
	c := e.Client
	lost, other := layOut(t, c, fenceAfter.String()), layOut(t, c, fenceAfter.String())
	alike := lookAlike(t, c, lost)
	untouched := append(append(append([]client.Object{}, other.Mine...), other.Kept...), alike...)
	untouched = append(untouched, other.Tenant)
	before, err := fixture.ResourceVersions(t.Context(), c, untouched...)
	g.Expect(err).NotTo(HaveOccurred())
	startFence(t, e, nil)

	rOther := startRenewing(t, c, other, renewEvery, 0)
	r := startRenewing(t, c, lost, renewEvery, 365*24*time.Hour)
	g.Eventually(r.Count).Should(BeNumerically(">=", 3))
	g.Eventually(func() string { return awaitLease(t, c, lost).Annotations[liqojanitor.ArmedAtAnnotation] }).ShouldNot(BeEmpty())
	sent, _ := r.Stop()
	f := awaitFence(t, c, lost, time.Minute)

	g.Expect(f.LastObservedAt).NotTo(BeNil())
	g.Expect(f.LastObservedAt.Before(sent)).To(BeFalse(), "the last observation is of the last renewal")
	waited := f.StartedAt.Sub(*f.LastObservedAt)
	g.Expect(waited).To(BeNumerically(">=", fenceAfter), "never before fenceAfter from the last observation")
	g.Expect(waited).To(BeNumerically("<=", fenceAfter+poll+slack), "within a poll of it: a renewTime ahead extends nothing")
	g.Expect(f.FencedAt.Sub(f.StartedAt)).To(BeNumerically("<=", graceCap+15*time.Second), "within the stop bound")
	g.Expect(f.ShadowPods).To(Equal(2))
	g.Expect(f.Pods).To(Equal(2))
	g.Expect(f.Tenant).To(Equal("cordoned"))

	g.Expect(tenantCondition(t, c, lost)).To(Equal(authv1beta1.TenantConditionCordoned))
	gone, err := fixture.ResourceVersions(t.Context(), c, lost.Mine...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fixture.Gone(gone)).To(Equal(len(lost.Mine)), "every ShadowPod and pod of the lost consumer")
	kept, err := fixture.ResourceVersions(t.Context(), c, lost.Kept...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kept).To(Equal(lost.KeptBefore), "the fence stops execution and keeps the state")
	g.Expect(rOther.Count()).To(BeNumerically(">", 0))
	after, err := fixture.ResourceVersions(t.Context(), c, untouched...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after).To(Equal(before), "another consumer's objects and a look-alike namespace's are untouched")
	g.Expect(state(t, c, other).Fence).To(BeNil())

	g.Eventually(func() string {
		return awaitLease(t, c, lost).Annotations[liqojanitor.ProviderFencedAnnotation]
	}).Should(ContainSubstring(`"pods":2`), "the consumer can read the record on its Lease")
	g.Eventually(func() []string { return tenantEvents(t, c, lost) }).Should(ContainElement(HavePrefix("Fenced: no renewal")))
}

// TestAFenceIsLatched: renewals that resume after a fence, for 5 × fenceAfter, un-cordon nothing and let
// nothing run again: a ShadowPod and pod that appear again are deleted again (fence rule 6). A Drained
// Tenant is left Drained (only Active is cordoned), its pods stopped all the same.
func TestAFenceIsLatched(t *testing.T) {
	e := env(t)
	g := NewWithT(t)
	c := e.Client
	w, drained := layOut(t, c, fenceAfter.String()), layOut(t, c, fenceAfter.String())
	drained.Tenant.Spec.TenantCondition = authv1beta1.TenantConditionDrained
	g.Expect(c.Update(t.Context(), drained.Tenant)).To(Succeed())
	startFence(t, e, nil)
	for _, x := range []*world{w, drained} {
		r := startRenewing(t, c, x, renewEvery, 0)
		g.Eventually(func() *time.Time { return state(t, c, x).ArmedAt }).ShouldNot(BeNil())
		r.Stop()
	}
	fenced := awaitFence(t, c, w, time.Minute)
	g.Expect(awaitFence(t, c, drained, time.Minute).Tenant).To(Equal("left Drained"))
	g.Expect(tenantCondition(t, c, drained)).To(Equal(authv1beta1.TenantConditionDrained))

	r := startRenewing(t, c, w, renewEvery, 0)
	again, err := fixture.ShadowPod(t.Context(), c, w.RemoteNamespaces[0], "again-0", w.ID, providerID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() (int, error) {
		rvs, err := fixture.ResourceVersions(t.Context(), c, again...)
		return fixture.Gone(rvs), err
	}).WithTimeout(30*time.Second).Should(Equal(len(again)), "what appears again is stopped again")
	g.Eventually(r.Count).WithTimeout(2 * time.Minute).Should(BeNumerically(">=", int(5*fenceAfter/renewEvery)))
	r.Stop()
	s := state(t, c, w)
	g.Expect(s.Fence).NotTo(BeNil())
	g.Expect(s.Fence.StartedAt).To(BeTemporally("==", fenced.StartedAt))
	g.Expect(s.Fence.ShadowPods).To(Equal(fenced.ShadowPods + 1))
	g.Expect(tenantCondition(t, c, w)).To(Equal(authv1beta1.TenantConditionCordoned))
	g.Expect(awaitLease(t, c, w).Annotations[liqojanitor.FenceStatusAnnotation]).To(ContainSubstring("unfence"))
}

// TestUnsafeSettingsAreRefusedWithTheMinimum: a fenceAfter below 6 renew intervals + a poll, or one whose
// deadline exceeds Kubernetes' 300 s taint eviction, is not armed; the Lease's status and an Event on the
// Tenant say why with the computed limit (fence rule 4).
func TestUnsafeSettingsAreRefusedWithTheMinimum(t *testing.T) {
	e := env(t)
	g := NewWithT(t)
	c := e.Client
	slow, long := layOut(t, c, fenceAfter.String()), layOut(t, c, "290s")
	startFence(t, e, nil)
	startRenewing(t, c, slow, 2*time.Second, 0) // min: 6 × 2 s + 1 s = 13 s
	startRenewing(t, c, long, renewEvery, 0)
	for _, x := range []struct {
		w    *world
		says string
	}{{slow, "below the minimum 13s"}, {long, "exceeds Kubernetes' 5m0s taint eviction"}} {
		g.Eventually(func() string {
			return awaitLease(t, c, x.w).Annotations[liqojanitor.FenceStatusAnnotation]
		}).WithTimeout(30 * time.Second).Should(And(HavePrefix("not armed: "), ContainSubstring(x.says)))
		g.Expect(state(t, c, x.w).ArmedAt).To(BeNil())
		g.Expect(awaitLease(t, c, x.w).Annotations).NotTo(HaveKey(liqojanitor.ArmedAtAnnotation))
		g.Eventually(func() []string { return tenantEvents(t, c, x.w) }).Should(ContainElement(ContainSubstring(x.says)))
	}
}

// tenantEvents are the agent's events on w's Tenant, as "Reason: note".
func tenantEvents(t *testing.T, c client.Client, w *world) []string {
	t.Helper()
	var evs eventsv1.EventList
	NewWithT(t).Expect(c.List(t.Context(), &evs, client.InNamespace(w.Namespace))).To(Succeed())
	var out []string
	for _, ev := range evs.Items {
		if ev.Regarding.Kind == "Tenant" && ev.Regarding.Name == w.Tenant.Name && ev.ReportingController == providerfence.ReportingController {
			out = append(out, ev.Reason+": "+strings.TrimSpace(ev.Note))
		}
	}
	return out
}
