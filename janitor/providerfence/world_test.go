package providerfence_test

import (
	"context"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// The provider's own Liqo: its namespace and cluster ID (TestMain installs them).
const (
	liqoNamespace = "liqo"
	providerID    = "provider-p"
)

// world is a fresh consumer's side on the provider (fixture.Tenant).
type world = fixture.Tenant

// layOut lays out a fresh consumer; fenceAfter "" leaves its Tenant without the opt-in. Its Tenant is
// deleted at the end of the test, so that later tests' agents do not look at it.
func layOut(t *testing.T, c client.Client, fenceAfter string) *world {
	t.Helper()
	w, err := fixture.LayOutTenant(t.Context(), c, fixture.TenantSpec{
		ID: fixture.Prefix("consumer-"), Provider: providerID, FenceAfter: fenceAfter})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = c.Delete(context.Background(), w.Tenant) })
	return w
}

// lookAlike lays out a namespace labelled with w's cluster ID but made by another tenant namespace's
// NamespaceMap, with a ShadowPod of w's origin: not w's, never fenced with w.
func lookAlike(t *testing.T, c client.Client, w *world) []client.Object {
	t.Helper()
	g := NewWithT(t)
	ns := "lookalike-" + w.ID
	g.Expect(c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels:      map[string]string{liqojanitor.RemoteClusterIDLabel: w.ID},
		Annotations: map[string]string{liqojanitor.ManagedByNamespaceMapAnnotation: "liqo-tenant-someone-else/nm"}}})).To(Succeed())
	objs, err := fixture.ShadowPod(t.Context(), c, ns, "app-0", w.ID, providerID)
	g.Expect(err).NotTo(HaveOccurred())
	return objs
}

// startRenewing renews w's Lease every interval, once the agent has created it, with renewTime now+skew,
// until stopped or the end of the test.
func startRenewing(t *testing.T, c client.Client, w *world, every, skew time.Duration) *fixture.Renewer {
	t.Helper()
	awaitLease(t, c, w)
	r := fixture.StartRenewing(c, w, every, skew)
	t.Cleanup(func() { r.Stop() })
	return r
}

// awaitLease waits until the agent created w's Lease and returns it.
func awaitLease(t *testing.T, c client.Client, w *world) *coordinationv1.Lease {
	t.Helper()
	l := &coordinationv1.Lease{}
	NewWithT(t).Eventually(func() error {
		return c.Get(t.Context(), client.ObjectKey{Namespace: w.Namespace, Name: liqojanitor.FenceLeaseName}, l)
	}).WithTimeout(time.Minute).Should(Succeed())
	return l
}

// state is the agent's record of w (empty while it has none).
func state(t *testing.T, c client.Client, w *world) liqojanitor.FenceState {
	t.Helper()
	s, err := fixture.FenceState(t.Context(), c, w.Namespace)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return s
}

// awaitFence waits until the agent's record of w says the fence issued every deletion, and returns it.
func awaitFence(t *testing.T, c client.Client, w *world, within time.Duration) liqojanitor.ProviderFence {
	t.Helper()
	var f liqojanitor.ProviderFence
	NewWithT(t).Eventually(func() bool {
		s := state(t, c, w)
		if s.Fence == nil || s.Fence.FencedAt == nil {
			return false
		}
		f = *s.Fence
		return true
	}).WithTimeout(within).WithPolling(100 * time.Millisecond).Should(BeTrue())
	return f
}

// tenantCondition is w's Tenant's condition now.
func tenantCondition(t *testing.T, c client.Client, w *world) authv1beta1.TenantCondition {
	t.Helper()
	tn := &authv1beta1.Tenant{}
	NewWithT(t).Expect(c.Get(t.Context(), client.ObjectKeyFromObject(w.Tenant), tn)).To(Succeed())
	return tn.Spec.TenantCondition
}

// env is the package's control plane.
func env(t *testing.T) *harness.Env { t.Helper(); return harness.Require(t) }
