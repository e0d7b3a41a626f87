package harness_test

import (
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/liqotech/liqo/pkg/consts"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// provider starts an API server of the test's own, a provider's (with kube-controller-manager's garbage
// collector), with Liqo's cluster-ID ConfigMap, Liqo's real webhook and Liqo's real controller manager, and
// lays out a consumer's side on it.
func provider(t *testing.T) (*harness.Env, *harness.LiqoControllerManager, *fixture.Tenancy) {
	t.Helper()
	harness.Require(t) // skips in the unit lane
	g := NewWithT(t)
	ctx := t.Context()
	prov, err := harness.Start(harness.Options{ControllerManager: true})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := prov.Stop(); err != nil {
			t.Errorf("stopping the provider: %v", err)
		}
	})
	const liqoNS = "liqo"
	g.Expect(prov.InstallLocalClusterID(ctx, liqoNS, "provider")).To(Succeed())
	w, err := prov.StartLiqoWebhook(ctx, liqoNS)
	g.Expect(err).NotTo(HaveOccurred())
	cm, err := prov.StartLiqoControllerManager(ctx, liqoNS)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { // before Stop
		if t.Failed() {
			prov.KeepFiles()
			t.Logf("logs kept: Liqo's controller manager %s, Liqo's webhook %s, kube-controller-manager %s",
				cm.Log, w.Log, prov.ControllerManagerLog())
		}
	})
	tenancy, err := fixture.LayOutTenancy(ctx, prov.Client, fixture.TenancySpec{Consumer: "consumer", Provider: "provider",
		Namespaces: []string{"shop"}})
	g.Expect(err).NotTo(HaveOccurred())
	return prov, cm, tenancy
}

// TestLiqosCordonRefusesTheConsumersNewShadowPodsButNotTheirPods runs Liqo's own controller manager and
// webhook on a provider, with a consumer's side laid out as Liqo makes it, and shows what a fence can rely
// on: the consumer's virtual kubelet creates a ShadowPod, Liqo's webhook stamps its user and Liqo's
// shadowpod controller makes its pod, and makes it again when it is deleted; once the Tenant is Cordoned,
// Liqo's tenant and quotacreator controllers cordon the consumer's Quota and Liqo's webhook refuses the
// consumer's new ShadowPods ("user is cordoned"), but the cordon stops nothing that runs: the pod of an
// existing ShadowPod is still made again when deleted. Only deleting the ShadowPod stops it: the garbage
// collector deletes its pod, and Liqo makes no other.
func TestLiqosCordonRefusesTheConsumersNewShadowPodsButNotTheirPods(t *testing.T) {
	prov, cm, ten := provider(t)
	g := NewWithT(t)
	ctx := t.Context()
	vk, err := prov.NewClient(func(cfg *rest.Config) { cfg.Impersonate = ten.Impersonation() })
	g.Expect(err).NotTo(HaveOccurred())
	ns := ten.RemoteNamespaces[0]

	tenant := &authv1beta1.Tenant{}
	g.Eventually(func() ([]string, error) {
		err := prov.Client.Get(ctx, client.ObjectKeyFromObject(ten.Tenant), tenant)
		return tenant.Finalizers, err
	}).Should(ContainElement(fixture.TenantFinalizer), "Liqo's tenant controller has taken the Tenant")

	sp, err := ten.OffloadPod(ctx, vk, ns, "web-0")
	g.Expect(err).NotTo(HaveOccurred(), "the consumer's virtual kubelet may create ShadowPods: Liqo's RBAC, Quota and webhook")
	g.Expect(sp.Labels).To(HaveKeyWithValue(fixture.CreatorLabel, ten.User), "Liqo's webhook stamped the creator")
	first := awaitPod(t, prov, sp)
	g.Expect(first.Labels).To(HaveKeyWithValue(consts.ManagedByLabelKey, consts.ManagedByShadowPodValue))
	g.Expect(first.Labels).To(HaveKeyWithValue(fixture.OriginLabel, ten.Consumer))
	g.Expect(first.Labels).To(HaveKeyWithValue(fixture.DestinationLabel, ten.Provider))
	second := deleteAndAwaitAnother(t, prov, sp, first)

	g.Expect(ten.SetTenantCondition(ctx, prov.Client, authv1beta1.TenantConditionCordoned)).To(Succeed())
	g.Eventually(func() (map[string]string, error) {
		rs := &authv1beta1.ResourceSlice{}
		err := prov.Client.Get(ctx, client.ObjectKeyFromObject(ten.ResourceSlice), rs)
		return rs.Annotations, err
	}).Should(HaveKeyWithValue(fixture.CordonTenantAnnotation, "true"), "Liqo's tenant controller cordons the consumer's ResourceSlices")
	g.Eventually(func() ([]offloadingv1beta1.Quota, error) {
		quotas := &offloadingv1beta1.QuotaList{}
		err := prov.Client.List(ctx, quotas, client.InNamespace(ten.Namespace))
		return quotas.Items, err
	}).Should(ConsistOf(And(
		HaveField("Name", ten.User), HaveField("Spec.User", ten.User), HaveField("Spec.Cordoned", HaveValue(BeTrue())),
	)), "Liqo's quotacreator controller cordons the Quota it would have made (the fixture's: the same name)")
	g.Eventually(func() error {
		_, err := ten.OffloadPod(ctx, vk, ns, "web-1", client.DryRunAll)
		return err
	}).Should(MatchError(ContainSubstring("user is cordoned")), "Liqo's webhook learns of the cordon from its cache")
	_, err = ten.OffloadPod(ctx, vk, ns, "web-1")
	g.Expect(err).To(MatchError(ContainSubstring(`admission webhook "shadowpod.validate.liqo.io" denied the request: user is cordoned`)))
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "a denial by an admission webhook is 403 Forbidden")

	third := deleteAndAwaitAnother(t, prov, sp, second)
	g.Expect(prov.Client.Delete(ctx, sp, client.Preconditions{UID: &sp.UID})).To(Succeed(), "Liqo's webhook lets a cordoned consumer's ShadowPod go")
	reconciled := func() (float64, error) {
		return cm.Metric(ctx, "controller_runtime_reconcile_total", map[string]string{"controller": "shadowpod"})
	}
	before, err := reconciled()
	g.Expect(err).NotTo(HaveOccurred())
	pod := &corev1.Pod{}
	g.Eventually(func() error {
		return prov.Client.Get(ctx, client.ObjectKeyFromObject(third), pod)
	}).WithTimeout(30*time.Second).Should(Satisfy(apierrors.IsNotFound), "the garbage collector deletes the pod of the deleted ShadowPod")
	g.Eventually(reconciled).Should(BeNumerically(">", before), "Liqo's shadowpod controller saw the deletions")
	g.Consistently(func() error {
		return prov.Client.Get(ctx, client.ObjectKeyFromObject(third), pod)
	}).WithTimeout(3*time.Second).Should(Satisfy(apierrors.IsNotFound), "and Liqo makes no other pod")
}

// awaitPod waits for the pod Liqo's shadowpod controller makes of sp, controller-owned by it, and returns it.
func awaitPod(t *testing.T, prov *harness.Env, sp *offloadingv1beta1.ShadowPod) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	NewWithT(t).Eventually(func() (types.UID, error) {
		if err := prov.Client.Get(t.Context(), client.ObjectKeyFromObject(sp), pod); err != nil {
			return "", err
		}
		if owner := metav1.GetControllerOf(pod); owner != nil {
			return owner.UID, nil
		}
		return "", nil
	}).WithTimeout(30*time.Second).Should(Equal(sp.UID), "Liqo's shadowpod controller makes the ShadowPod's pod")
	return pod
}

// deleteAndAwaitAnother deletes pod, the pod of sp, and waits for Liqo's shadowpod controller to make another.
func deleteAndAwaitAnother(t *testing.T, prov *harness.Env, sp *offloadingv1beta1.ShadowPod, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	g := NewWithT(t)
	g.Expect(prov.Client.Delete(t.Context(), pod, client.Preconditions{UID: &pod.UID})).To(Succeed())
	next := &corev1.Pod{}
	g.Eventually(func() (types.UID, error) {
		err := prov.Client.Get(t.Context(), client.ObjectKeyFromObject(pod), next)
		return next.UID, client.IgnoreNotFound(err)
	}).WithTimeout(30*time.Second).Should(And(Not(BeEmpty()), Not(Equal(pod.UID))), "Liqo's shadowpod controller makes the pod again")
	return awaitPod(t, prov, sp)
}
