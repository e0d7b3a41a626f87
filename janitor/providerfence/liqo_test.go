package providerfence_test

import (
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// TestWithLiqosOwnControllersTheFencedConsumerRunsNothing: on a provider running Liqo's real webhook and
// controller manager (tenant, quota and shadowpod controllers) and kube-controller-manager's garbage
// collector, a consumer laid out as Liqo makes it runs a pod of a ShadowPod its virtual kubelet created.
// It renews, then stops. The agent fences it: the Tenant Cordoned, so that Liqo's webhook refuses the
// consumer's new ShadowPods ("user is cordoned"), and its ShadowPod and pod deleted, after which Liqo makes
// no pod again (a cordon alone would not stop it: Liqo re-creates the pod of an existing ShadowPod).
func TestWithLiqosOwnControllersTheFencedConsumerRunsNothing(t *testing.T) {
	harness.Require(t) // skips in the unit lane
	g := NewWithT(t)
	ctx := t.Context()
	prov, err := harness.Start(harness.Options{ControllerManager: true})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(prov.Stop()).To(Succeed()) })
	g.Expect(prov.InstallLocalClusterID(ctx, liqoNamespace, providerID)).To(Succeed())
	_, err = prov.StartLiqoWebhook(ctx, liqoNamespace)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = prov.StartLiqoControllerManager(ctx, liqoNamespace)
	g.Expect(err).NotTo(HaveOccurred())
	ten, err := fixture.LayOutTenancy(ctx, prov.Client, fixture.TenancySpec{Consumer: "consumer-liqo", Provider: providerID, Namespaces: []string{"shop"}})
	g.Expect(err).NotTo(HaveOccurred())
	c := prov.Client
	g.Eventually(func() ([]string, error) {
		tn := &authv1beta1.Tenant{}
		err := c.Get(ctx, client.ObjectKeyFromObject(ten.Tenant), tn)
		return tn.Finalizers, err
	}).Should(ContainElement(fixture.TenantFinalizer), "Liqo's tenant controller has taken the Tenant")
	vk, err := prov.NewClient(func(cfg *rest.Config) { cfg.Impersonate = ten.Impersonation() })
	g.Expect(err).NotTo(HaveOccurred())
	ns := ten.RemoteNamespaces[0]
	sp, err := ten.OffloadPod(ctx, vk, ns, "web-0")
	g.Expect(err).NotTo(HaveOccurred())
	pod := &corev1.Pod{}
	g.Eventually(func() error { return c.Get(ctx, client.ObjectKeyFromObject(sp), pod) }).Should(Succeed(), "Liqo makes the ShadowPod's pod")

	optIn := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+liqojanitor.FenceAfterAnnotation+`":"`+fenceAfter.String()+`"}}}`))
	g.Expect(c.Patch(ctx, ten.Tenant, optIn)).To(Succeed(), "the provider's admin opts the consumer in")
	startFence(t, prov, nil)
	w := &world{ID: ten.Consumer, Namespace: ten.Namespace, Tenant: ten.Tenant}
	r := startRenewing(t, c, w, renewEvery, 0)
	g.Eventually(func() *time.Time { return state(t, c, w).ArmedAt }).ShouldNot(BeNil())
	r.Stop()
	f := awaitFence(t, c, w, time.Minute)
	g.Expect(f.ShadowPods).To(Equal(1))
	g.Expect(f.Tenant).To(Equal("cordoned"))

	g.Eventually(func() error {
		_, err := ten.OffloadPod(ctx, vk, ns, "web-1", client.DryRunAll)
		return err
	}).Should(MatchError(ContainSubstring("user is cordoned")), "Liqo's own webhook refuses the fenced consumer's new ShadowPods")
	_, err = ten.OffloadPod(ctx, vk, ns, "web-1")
	g.Expect(err).To(MatchError(ContainSubstring("user is cordoned")))
	g.Eventually(func() error { return c.Get(ctx, client.ObjectKeyFromObject(sp), sp) }).Should(Satisfy(apierrors.IsNotFound))
	g.Eventually(func() error { return c.Get(ctx, client.ObjectKeyFromObject(pod), pod) }).Should(Satisfy(apierrors.IsNotFound))
	g.Consistently(func() (types.UID, error) {
		p := &corev1.Pod{}
		err := c.Get(ctx, client.ObjectKeyFromObject(pod), p)
		return p.UID, client.IgnoreNotFound(err)
	}).WithTimeout(3*poll).Should(BeEmpty(), "and Liqo makes no pod again")
	g.Expect(state(t, c, w).Fence.StoppedAt).NotTo(BeNil())
}
