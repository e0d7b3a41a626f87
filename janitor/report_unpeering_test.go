package janitor_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// The unpeering (janitor rules 12 and 13), against each supported Liqo version's own CRDs and a real
// namespace controller: after the mark and the tenant namespace's deletion (what `liqoctl force unpeer`
// does), the janitor names what holds the namespace — the route and firewall finalizers Liqo's fabric
// owns, which it never touches — releases the legacy InternalFabric finalizer only where Liqo is older
// than v1.2.0 and only for the dead cluster, and says "unpeering complete" exactly once when nothing is
// left that Liqo re-creates the ForeignCluster from. The test plays Liqo's own parts (the VirtualNode
// deletion routine, the fabric's route and firewall clean-up, v1.2's internalfabric controller).

const (
	legacyFabricFinalizer = "internalfabric-controller.liqo.io/finalizer"
	routeFinalizer        = "routeconfiguration-controller.liqo.io/finalizer"
	firewallFinalizer     = "firewallconfigurations-controller.liqo.io/finalizer"
)

// networking creates, in p's tenant namespace, the networking objects Liqo's networking module makes
// for a peer, with the finalizers Liqo's fabric puts on them: an InternalFabric (the legacy finalizer),
// a RouteConfiguration and a FirewallConfiguration.
func networking(ctx context.Context, t *testing.T, c client.Client, p *fixture.Provider) (fabric, route, firewall *unstructured.Unstructured) {
	t.Helper()
	obj := func(kind, finalizer string, spec map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
		u.SetAPIVersion("networking.liqo.io/v1beta1")
		u.SetKind(kind)
		u.SetNamespace(p.TenantNS)
		u.SetName(p.ID + "-" + strings.ToLower(kind))
		u.SetLabels(map[string]string{liqojanitor.RemoteClusterIDLabel: p.ID})
		u.SetFinalizers([]string{finalizer})
		NewWithT(t).Expect(c.Create(ctx, u)).To(Succeed())
		return u
	}
	fabric = obj("InternalFabric", legacyFabricFinalizer, map[string]any{
		"mtu": int64(1340), "gatewayIP": "10.80.0.1",
		"interface": map[string]any{"node": map[string]any{"name": "liqo-tunnel"}, "gateway": map[string]any{"ip": "10.80.0.2"}},
	})
	route = obj("RouteConfiguration", routeFinalizer, map[string]any{"table": map[string]any{"name": p.ID, "rules": []any{map[string]any{"routes": []any{map[string]any{"dst": "10.0.0.0/16"}}}}}})
	firewall = obj("FirewallConfiguration", firewallFinalizer, map[string]any{"table": map[string]any{"name": p.ID, "family": "IPV4"}})
	return fabric, route, firewall
}

func unpeeringOf(ctx context.Context, c client.Client, p *fixture.Provider) func() liqojanitor.Unpeering {
	return func() liqojanitor.Unpeering {
		fc := p.ForeignCluster.DeepCopy()
		if err := c.Get(ctx, client.ObjectKeyFromObject(fc), fc); err != nil {
			return liqojanitor.Unpeering{}
		}
		u, _ := liqojanitor.UnpeeringOf(fc.Annotations)
		return u
	}
}

// dropFinalizer removes finalizer from obj as Liqo's own controller would.
func dropFinalizer(ctx context.Context, t *testing.T, c client.Client, obj client.Object, finalizer string) {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return client.IgnoreNotFound(err)
		}
		obj.SetFinalizers(slices.DeleteFunc(obj.GetFinalizers(), func(f string) bool { return f == finalizer }))
		return c.Update(ctx, obj)
	}).Should(Succeed())
}

func TestTheUnpeeringIsFollowedToItsEndOnEachLiqoVersion(t *testing.T) {
	harness.Require(t) // the real-API-server lane
	for _, version := range harness.SupportedLiqoVersions {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			unpeerOnLiqo(t, version)
		})
	}
}

func unpeerOnLiqo(t *testing.T, version string) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	env, err := harness.Start(harness.Options{LiqoVersion: version, ControllerManager: true})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(env.Stop()).To(Succeed()) })
	c := env.Client
	older := version != "v1.2.0"

	cons, err := fixture.Build(ctx, c, fixture.Spec{Prefix: "u", Providers: 2, PodsPerProvider: 2})
	g.Expect(err).NotTo(HaveOccurred())
	dead, live := cons.Providers[0], cons.Providers[1]
	deadFabric, deadRoute, deadFirewall := networking(ctx, t, c, dead)
	liveFabric, liveRoute, liveFirewall := networking(ctx, t, c, live)

	// A StatefulSet's volume on the dead cluster (Liqo's virtual storage): it does not hold the unpeering,
	// and once the unpeering is complete the record and the event say it is pinned there (issue 38).
	g.Expect(fixture.StorageClasses(ctx, c)).To(Succeed())
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: objectMeta("u-app")})).To(Succeed())
	pvc, _, err := fixture.Bind(ctx, c, fixture.Claim{Namespace: "u-app", Name: "data-db-0", Class: fixture.LiqoStorageClass,
		Node: dead.Node.Name, Cluster: dead.ID, Placeholder: true})
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(fixture.Kill(ctx, c, dead)).To(Succeed())
	const settle = 20 * time.Second // Liqo's fabric's turn first
	stop, err := env.StartJanitor(janitor.Options{Namespace: env.OwnNamespace(t), FabricSettle: settle, ReleaseIdentitySecrets: true})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(stop()).To(Succeed()) })
	g.Expect(fixture.Mark(ctx, c, dead)).To(Succeed())
	// What `liqoctl force unpeer` does after the mark (and an operator tidying up a live peering).
	for _, p := range []*fixture.Provider{dead, live} {
		g.Expect(c.Delete(ctx, &corev1.Namespace{ObjectMeta: objectMeta(p.TenantNS)})).To(Succeed())
	}
	g.Eventually(func() bool {
		fresh := deadFabric.DeepCopy()
		return c.Get(ctx, client.ObjectKeyFromObject(deadFabric), fresh) == nil && !fresh.GetDeletionTimestamp().IsZero()
	}).WithTimeout(time.Minute).Should(BeTrue(), "the namespace controller deletes the InternalFabric")
	g.Consistently(func() []string { return finalizersOf(ctx, c, deadFabric) }).WithTimeout(3*time.Second).
		Should(ContainElement(legacyFabricFinalizer), "before the settle time Liqo's fabric has its turn, on every version")

	// The record names the fabric's finalizers, which the janitor never releases, and the version.
	g.Eventually(unpeeringOf(ctx, c, dead)).WithTimeout(time.Minute).Should(SatisfyAll(
		HaveField("Phase", liqojanitor.UnpeeringInProgress),
		HaveField("LiqoVersion", version[:len("v1.x")]+".x"),
		HaveField("TenantNamespace", dead.TenantNS),
		HaveField("Left", ContainElement(And(HaveField("Kind", "FirewallConfiguration"), HaveField("Namespace", dead.TenantNS),
			HaveField("Name", deadFirewall.GetName()), HaveField("HeldBy", "finalizer "+firewallFinalizer),
			HaveField("Releasable", false), HaveField("Next", ContainSubstring("guards firewall rules in the nodes' kernels"))))),
		HaveField("Left", ContainElement(HaveField("Name", deadRoute.GetName()))),
	), "the record names what holds the tenant namespace, with the fabric's finalizers as not releasable")
	g.Eventually(unpeeringOf(ctx, c, dead)).Should(HaveField("Notes", ContainElement(ContainSubstring("keeps its reflector"))),
		"after releasing the identity Secret the record says Liqo's crd-replicator leaks its reflector")

	// Liqo's VirtualNode deletion routine ends once the janitor's drain emptied the node.
	g.Eventually(func() int { return podsLeftIn(ctx, c, dead) }).WithTimeout(time.Minute).Should(BeZero())
	dropFinalizer(ctx, t, c, dead.VirtualNode, fixture.VirtualNodeFinalizer)
	g.Expect(client.IgnoreNotFound(c.Delete(ctx, dead.Node))).To(Succeed())

	if older {
		g.Eventually(gonein(ctx, c, deadFabric)).WithTimeout(time.Minute).Should(BeTrue(),
			"on Liqo %s the janitor releases the legacy InternalFabric finalizer, as v1.2.0 does by itself", version)
	} else {
		g.Consistently(func() []string { return finalizersOf(ctx, c, deadFabric) }).WithTimeout(3*time.Second).
			Should(ContainElement(legacyFabricFinalizer), "on Liqo v1.2 it is Liqo's own controller's to release")
		dropFinalizer(ctx, t, c, deadFabric, legacyFabricFinalizer) // v1.2.0's internalfabric controller
	}
	// The namespace controller marks the live cluster's objects deleting (a write of its own, whenever it gets
	// there): from then on nobody but the janitor could write them.
	for _, obj := range []client.Object{liveFabric, liveRoute, liveFirewall} {
		g.Eventually(func() bool {
			fresh := obj.DeepCopyObject().(client.Object)
			return c.Get(ctx, client.ObjectKeyFromObject(obj), fresh) == nil && !fresh.GetDeletionTimestamp().IsZero()
		}).WithTimeout(time.Minute).Should(BeTrue(), "the namespace controller deletes %s", obj.GetName())
	}
	liveRVs := fixture.ResourceVersionsOf(t, c, liveFabric, liveRoute, liveFirewall)
	g.Expect(finalizersOf(ctx, c, deadRoute)).To(ContainElement(routeFinalizer), "the janitor never strips the fabric's finalizers")
	g.Expect(finalizersOf(ctx, c, deadFirewall)).To(ContainElement(firewallFinalizer))
	dropFinalizer(ctx, t, c, deadRoute, routeFinalizer) // Liqo's fabric, once its routes are gone
	dropFinalizer(ctx, t, c, deadFirewall, firewallFinalizer)

	g.Eventually(unpeeringOf(ctx, c, dead)).WithTimeout(2*time.Minute).Should(HaveField("Phase", liqojanitor.UnpeeringComplete),
		"with the VirtualNode and its Node gone, nothing is left that Liqo re-creates the ForeignCluster from: complete")
	g.Eventually(gonein(ctx, c, &corev1.Namespace{ObjectMeta: objectMeta(dead.TenantNS)})).WithTimeout(time.Minute).Should(BeTrue(),
		"the namespace controller deletes the tenant namespace")
	g.Eventually(unpeeringOf(ctx, c, dead)).Should(And(HaveField("Phase", liqojanitor.UnpeeringComplete), HaveField("Notes", Not(ContainElement(ContainSubstring("tenant namespace "+dead.TenantNS))))),
		"the note of a tenant namespace still there goes with it")
	completeEvents := func() int { return reasonCount(ctx, t, c, dead, "UnpeeringComplete") }
	// The event follows the write of the phase (the events library sends it in the background): await it,
	// then see that it stays one.
	g.Eventually(completeEvents).WithTimeout(30*time.Second).Should(Equal(1), "UnpeeringComplete is sent")
	g.Consistently(completeEvents).WithTimeout(3*time.Second).Should(Equal(1), "UnpeeringComplete is sent exactly once")
	pinned := "1 volume pinned to " + dead.ID + ": their workloads cannot run anywhere until released"
	g.Expect(unpeeringOf(ctx, c, dead)()).To(And(HaveField("PinnedVolumes", 1),
		HaveField("Volumes", ConsistOf(And(HaveField("Name", pvc.Name), HaveField("UID", string(pvc.UID)))))),
		"the volume is still the dead cluster's, by the VirtualNode kept at first sight, now that the VirtualNode is gone")
	g.Expect(noteOf(ctx, t, c, dead, "UnpeeringComplete")).To(And(HavePrefix("Unpeering complete: "), HaveSuffix("\n"+pinned)),
		"unpeering complete stays, and a second line says the volume is pinned")
	g.Expect(fixture.ResourceVersionsOf(t, c, liveFabric, liveRoute, liveFirewall)).To(Equal(liveRVs),
		"a live cluster's networking objects are never written, its InternalFabric's legacy finalizer included")
	g.Expect(finalizersOf(ctx, c, liveFabric)).To(ContainElement(legacyFabricFinalizer))
}

func objectMeta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

func podsLeftIn(ctx context.Context, c client.Client, p *fixture.Provider) int {
	left := 0
	for _, pod := range p.Pods {
		if !gonein(ctx, c, pod)() {
			left++
		}
	}
	return left
}

func gonein(ctx context.Context, c client.Client, obj client.Object) func() bool {
	return func() bool {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
		return err != nil && client.IgnoreNotFound(err) == nil
	}
}

func finalizersOf(ctx context.Context, c client.Client, obj client.Object) []string {
	fresh := obj.DeepCopyObject().(client.Object)
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
		return nil
	}
	return fresh.GetFinalizers()
}

// reasonCount counts the events of reason about p's ForeignCluster: each occurrence, those the events
// library merged into a series included.
// noteOf is the note of the (last) event with reason about p's ForeignCluster, "" when there is none.
func noteOf(ctx context.Context, t *testing.T, c client.Client, p *fixture.Provider, reason string) string {
	t.Helper()
	var evs eventsv1.EventList
	NewWithT(t).Expect(c.List(ctx, &evs)).To(Succeed())
	note := ""
	for _, e := range evs.Items {
		if e.Reason == reason && e.Regarding.UID == p.ForeignCluster.UID {
			note = e.Note
		}
	}
	return note
}

func reasonCount(ctx context.Context, t *testing.T, c client.Client, p *fixture.Provider, reason string) int {
	t.Helper()
	var evs eventsv1.EventList
	NewWithT(t).Expect(c.List(ctx, &evs)).To(Succeed())
	n := 0
	for _, e := range evs.Items {
		if e.Reason != reason || e.Regarding.Name != p.ForeignCluster.Name || e.Regarding.UID != p.ForeignCluster.UID {
			continue
		}
		n++
		if e.Series != nil {
			n += int(e.Series.Count) - 1
		}
	}
	return n
}

// TestTheUnpeeringCountsWhatLiqoReCreatesTheForeignClusterFrom (janitor rule 13): the unpeering is in
// progress while anything Liqo's foreigncluster controller re-creates the ForeignCluster from is left —
// a virtual Node, a Tenant labelled with the cluster ID, in any namespace — and complete once they are
// gone, however many namespaces still carry Liqo's tenant labels with nothing of Liqo in them (a decoy
// counts for nothing, and is named in a note).
func TestTheUnpeeringCountsWhatLiqoReCreatesTheForeignClusterFrom(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	c := env.Client
	ns := env.OwnNamespace(t)
	p := build(t, fixture.Spec{Providers: 1}).Providers[0]
	decoy := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.TenantNS + "-decoy", Labels: map[string]string{
		"liqo.io/tenant-namespace": "true", liqojanitor.RemoteClusterIDLabel: p.ID}}}
	g.Expect(c.Create(ctx, decoy)).To(Succeed())
	elsewhere := env.Namespace(t) // Liqo's watch sees a labelled Tenant in any namespace
	tenant := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: p.ID, Namespace: elsewhere,
		Labels: map[string]string{liqojanitor.RemoteClusterIDLabel: p.ID}}}
	g.Expect(c.Create(ctx, tenant)).To(Succeed())
	kill(t, p)
	startJanitor(t, janitor.Options{Namespace: ns})
	g.Expect(fixture.Mark(ctx, c, p)).To(Succeed())

	unpeering := unpeeringOf(ctx, c, p)
	left := func(kind, namespace, name string) types.GomegaMatcher {
		return HaveField("Left", ContainElement(And(HaveField("Kind", kind), HaveField("Namespace", namespace), HaveField("Name", name))))
	}
	g.Eventually(unpeering).WithTimeout(time.Minute).Should(SatisfyAll(HaveField("Phase", liqojanitor.UnpeeringInProgress),
		left("Node", "", p.Node.Name), left("Tenant", elsewhere, tenant.Name)), "the virtual Node and the Tenant hold it")

	// Liqo's VirtualNode deletion routine ends: the VirtualNode and its Node go; the Tenant is left.
	dropFinalizer(ctx, t, c, p.VirtualNode, fixture.VirtualNodeFinalizer)
	g.Expect(c.Delete(ctx, p.Node)).To(Succeed())
	g.Eventually(unpeering).WithTimeout(time.Minute).Should(SatisfyAll(HaveField("Phase", liqojanitor.UnpeeringInProgress),
		HaveField("Left", ConsistOf(
			HaveField("Kind", "Namespace"), // the fixture's tenant namespace, which nobody deleted: named, not holding
			HaveField("Kind", "Namespace"), // the decoy
			And(HaveField("Kind", "Tenant"), HaveField("HeldBy", "not being deleted"),
				HaveField("Next", ContainSubstring("Liqo re-creates the ForeignCluster, unmarked, from it"))))),
	), "a Tenant labelled with the cluster ID alone keeps the unpeering in progress")

	g.Expect(c.Delete(ctx, tenant)).To(Succeed())
	g.Eventually(unpeering).WithTimeout(2*time.Minute).Should(SatisfyAll(HaveField("Phase", liqojanitor.UnpeeringComplete),
		HaveField("Notes", ContainElement(ContainSubstring("tenant namespace "+decoy.Name+" is still there")))),
		"with nothing left that Liqo re-creates the ForeignCluster from, the unpeering is complete: the decoy holds nothing")
	g.Eventually(func() int { return reasonCount(ctx, t, c, p, "UnpeeringComplete") }).WithTimeout(30 * time.Second).Should(Equal(1))
}
