package node

import (
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// The provider fence's settings in the node lane (the chart's values, main_test.go install): short, as
// issue 36's tests use them.
const (
	fencePoll     = time.Second
	fenceGraceCap = 5 * time.Second
	fenceAfter    = 8 * time.Second
	renewEvery    = time.Second
)

// TestTheInstalledProviderFenceStopsALostConsumersPods: this cluster is a provider too, and the chart's
// provider fence runs as pods on the real kubelet. A consumer whose Tenant opts in runs a pod here (a
// ShadowPod's, bound to the node, a real container); it renews, then stops. The leading agent pod fences
// it: the Tenant Cordoned, the ShadowPod deleted and the pod stopped by the kubelet within the grace cap;
// its PVC, Service, ConfigMap and Secret kept. The test logs the fence's timeline against the contract's
// bounds.
func TestTheInstalledProviderFenceStopsALostConsumersPods(t *testing.T) {
	env := harness.Require(t)
	logReplicasOnFailure(t)
	g := NewWithT(t)
	ctx := t.Context()
	c := env.Client
	w, err := fixture.LayOutTenant(ctx, c, fixture.TenantSpec{ID: "node-lane-lost-consumer", Provider: localClusterID,
		FenceAfter: fenceAfter.String(), Apps: []string{"web"}, Pod: func(s *corev1.PodSpec) {
			s.NodeName = Name
			s.TerminationGracePeriodSeconds = ptr.To[int64](60) // the fence caps it at the grace cap
			s.Containers[0].Image, s.Containers[0].ImagePullPolicy = sandboxImage, corev1.PullNever
		}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = c.Delete(ctx, w.Tenant) })
	pod := w.Mine[1].(*corev1.Pod)
	g.Eventually(func() (corev1.PodPhase, error) {
		var p corev1.Pod
		err := c.Get(ctx, client.ObjectKeyFromObject(pod), &p)
		return p.Status.Phase, err
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Equal(corev1.PodRunning), "the consumer's pod runs on the node")

	lease := &coordinationv1.Lease{}
	g.Eventually(func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: liqojanitor.FenceLeaseName}, lease)
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "the agent pod creates the consumer's Lease")
	r := fixture.StartRenewing(c, w, renewEvery, 0)
	t.Cleanup(func() { r.Stop() })
	g.Eventually(func() (*time.Time, error) {
		s, err := fixture.FenceState(ctx, c, w.Namespace)
		return s.ArmedAt, err
	}).WithTimeout(time.Minute).WithPolling(500*time.Millisecond).ShouldNot(BeNil(), "armed by an observed renewal")
	sent, answered := r.Stop()

	var f liqojanitor.ProviderFence
	g.Eventually(func() (bool, error) {
		s, err := fixture.FenceState(ctx, c, w.Namespace)
		if s.Fence != nil {
			f = *s.Fence
		}
		return s.Fence != nil && s.Fence.StoppedAt != nil, err
	}).WithTimeout(2*time.Minute).WithPolling(500*time.Millisecond).Should(BeTrue(), "fenced, and the last pod gone")

	var tenant authv1beta1.Tenant
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(w.Tenant), &tenant)).To(Succeed())
	g.Expect(tenant.Spec.TenantCondition).To(Equal(authv1beta1.TenantConditionCordoned))
	gone, err := fixture.ResourceVersions(ctx, c, w.Mine...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fixture.Gone(gone)).To(Equal(len(w.Mine)))
	kept, err := fixture.ResourceVersions(ctx, c, w.Kept...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kept).To(Equal(w.KeptBefore))
	g.Expect(f.NotStopped).To(BeEmpty())

	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(lease), lease)).To(Succeed())
	contract, err := liqojanitor.ParseFenceContract(lease.Annotations[liqojanitor.FenceContractAnnotation])
	g.Expect(err).NotTo(HaveOccurred())
	observed := f.LastObservedAt.Sub(sent)
	decided, stopped := f.StartedAt.Sub(*f.LastObservedAt), f.StoppedAt.Sub(f.StartedAt)
	t.Logf("the fence's timeline on this machine's clock: last renewal sent %s (answered +%s); observed +%s (bound: poll %s); "+
		"fence decided +%s after the observation (fenceAfter %s); Tenant cordoned and every deletion issued +%s; last pod gone +%s after the decision "+
		"(stop bound %s); renewal to last pod gone %s (contract bound %s, the consumer's T_safe %s)",
		sent.UTC().Format(time.RFC3339Nano), answered.Sub(sent), observed, time.Duration(contract.Poll), decided, time.Duration(contract.FenceAfter),
		f.FencedAt.Sub(f.StartedAt), stopped, time.Duration(contract.Stop), f.StoppedAt.Sub(sent), contract.Bound(), contract.SafeAfter())
	g.Expect(decided).To(BeNumerically(">=", fenceAfter))
	g.Expect(f.StoppedAt.Sub(sent)).To(BeNumerically("<=", contract.Bound()), "within the contract's bound")
}
