package providerfence_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
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

var worlds atomic.Int64

// world is a consumer's side on the provider, as Liqo lays it out (liqo-facts.md §12): its tenant
// namespace and Tenant, two remote namespaces made by its NamespaceMap with a ShadowPod and its pod in
// each, and in them what the fence must keep (a PVC, a Service, a ConfigMap, a Secret).
type world struct {
	id, tenantNS string
	tenant       *authv1beta1.Tenant
	// mine are its ShadowPods and pods; kept what the fence never touches, keptBefore their versions.
	mine, kept []client.Object
	keptBefore map[string]string
	remoteNS   []string
}

// layOut lays out a fresh consumer; fenceAfter "" leaves its Tenant without the opt-in. Its Tenant is
// deleted at the end of the test, so that later tests' agents do not look at it.
func layOut(t *testing.T, c client.Client, fenceAfter string) *world {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	n := worlds.Add(1)
	w := &world{id: fmt.Sprintf("consumer-%d", n)}
	w.tenantNS = "liqo-tenant-" + w.id
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.tenantNS, Labels: map[string]string{
		liqojanitor.RemoteClusterIDLabel: w.id, liqojanitor.TenantNamespaceLabel: "true"}}})).To(Succeed())
	w.tenant = &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: w.id, Namespace: w.tenantNS},
		Spec: authv1beta1.TenantSpec{ClusterID: liqov1beta1.ClusterID(w.id), TenantCondition: authv1beta1.TenantConditionActive}}
	if fenceAfter != "" {
		w.tenant.Annotations = map[string]string{liqojanitor.FenceAfterAnnotation: fenceAfter}
	}
	g.Expect(c.Create(ctx, w.tenant)).To(Succeed())
	t.Cleanup(func() { _ = c.Delete(context.Background(), w.tenant) })
	for _, app := range []string{"shop", "db"} {
		ns := fmt.Sprintf("%s-%s", app, w.id)
		w.remoteNS = append(w.remoteNS, ns)
		remote := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
			Labels:      map[string]string{liqojanitor.RemoteClusterIDLabel: w.id},
			Annotations: map[string]string{liqojanitor.ManagedByNamespaceMapAnnotation: w.tenantNS + "/" + w.id + "-nm"}}}
		g.Expect(c.Create(ctx, remote)).To(Succeed())
		objs, err := fixture.ShadowPod(ctx, c, ns, app+"-0", w.id, providerID)
		g.Expect(err).NotTo(HaveOccurred())
		w.mine = append(w.mine, objs...)
		w.kept = append(append(w.kept, remote), keep(t, c, ns)...)
	}
	w.kept = append(w.kept, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.tenantNS}})
	var err error
	w.keptBefore, err = fixture.ResourceVersions(ctx, c, w.kept...)
	g.Expect(err).NotTo(HaveOccurred())
	return w
}

// keep creates in ns what a fence must never touch.
func keep(t *testing.T, c client.Client, ns string) []client.Object {
	t.Helper()
	objs := []client.Object{
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: corev1.ServiceSpec{
			Ports: []corev1.ServicePort{{Port: 80}}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns}, Data: map[string]string{"k": "v"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: ns}, StringData: map[string]string{"k": "v"}},
	}
	for _, o := range objs {
		NewWithT(t).Expect(c.Create(t.Context(), o)).To(Succeed())
	}
	return objs
}

// lookAlike lays out a namespace labelled with w's cluster ID but made by another tenant namespace's
// NamespaceMap, with a ShadowPod of w's origin: not w's, never fenced with w.
func lookAlike(t *testing.T, c client.Client, w *world) []client.Object {
	t.Helper()
	g := NewWithT(t)
	ns := "lookalike-" + w.id
	g.Expect(c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels:      map[string]string{liqojanitor.RemoteClusterIDLabel: w.id},
		Annotations: map[string]string{liqojanitor.ManagedByNamespaceMapAnnotation: "liqo-tenant-someone-else/nm"}}})).To(Succeed())
	objs, err := fixture.ShadowPod(t.Context(), c, ns, "app-0", w.id, providerID)
	g.Expect(err).NotTo(HaveOccurred())
	return objs
}

// renewal is one renewal as the consumer makes it (issue 37): renewTime, its identity and its renew
// interval, by an update at the resourceVersion it read.
func renewal(ctx context.Context, c client.Client, ns, holder string, every time.Duration, renewTime time.Time) error {
	for {
		l := &coordinationv1.Lease{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: liqojanitor.FenceLeaseName}, l); err != nil {
			return err
		}
		l.Spec.HolderIdentity = ptr.To(holder)
		l.Spec.LeaseDurationSeconds = ptr.To(int32(every / time.Second))
		l.Spec.RenewTime = &metav1.MicroTime{Time: renewTime}
		err := c.Update(ctx, l)
		if !apierrors.IsConflict(err) {
			return err
		}
	}
}

// renewer renews a consumer's Lease every interval until stopped.
type renewer struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	// last is when the last renewal that succeeded was sent (sent) and answered (answered), the test's clock.
	sent, answered time.Time
	count          int
}

// startRenewing renews w's Lease every interval, once the agent has created it, with renewTime now+skew.
func startRenewing(t *testing.T, c client.Client, w *world, every, skew time.Duration) *renewer {
	t.Helper()
	awaitLease(t, c, w)
	r := &renewer{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			sent := time.Now()
			if err := renewal(context.Background(), c, w.tenantNS, w.id, every, sent.Add(skew)); err == nil {
				r.mu.Lock()
				r.sent, r.answered, r.count = sent, time.Now(), r.count+1
				r.mu.Unlock()
			}
			select {
			case <-r.stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { r.Stop() })
	return r
}

// Stop stops the renewals and returns the last one's times.
func (r *renewer) Stop() (sent, answered time.Time) {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sent, r.answered
}

// Count is how many renewals succeeded.
func (r *renewer) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count
}

// awaitLease waits until the agent created w's Lease and returns it.
func awaitLease(t *testing.T, c client.Client, w *world) *coordinationv1.Lease {
	t.Helper()
	l := &coordinationv1.Lease{}
	NewWithT(t).Eventually(func() error {
		return c.Get(t.Context(), client.ObjectKey{Namespace: w.tenantNS, Name: liqojanitor.FenceLeaseName}, l)
	}).WithTimeout(time.Minute).Should(Succeed())
	return l
}

// state is the agent's record of w (empty while it has none).
func state(t *testing.T, c client.Client, w *world) liqojanitor.FenceState {
	t.Helper()
	l := &coordinationv1.Lease{}
	err := c.Get(t.Context(), client.ObjectKey{Namespace: w.tenantNS, Name: liqojanitor.FenceStateLeaseName}, l)
	if apierrors.IsNotFound(err) {
		return liqojanitor.FenceState{}
	}
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	s, err := liqojanitor.ParseFenceState(l.Annotations[liqojanitor.FenceStateAnnotation])
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
	NewWithT(t).Expect(c.Get(t.Context(), client.ObjectKeyFromObject(w.tenant), tn)).To(Succeed())
	return tn.Spec.TenantCondition
}

// env is the package's control plane.
func env(t *testing.T) *harness.Env { t.Helper(); return harness.Require(t) }
