package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
)

// Liqo's fabric finalizers on a tenant namespace's RouteConfigurations and FirewallConfigurations
// (pkg/route/finalizer.go, pkg/firewall/finalizer.go, the same strings in v1.0.3 to v1.2.0): they guard
// routes and firewall rules in the nodes' kernels, and liqo-janitor never releases them, it names them.
const (
	routeFinalizer    = "routeconfiguration-controller.liqo.io/finalizer"
	firewallFinalizer = "firewallconfigurations-controller.liqo.io/finalizer"
)

// fabric is what Liqo's networking leaves in one provider's tenant namespace: a RouteConfiguration and a
// FirewallConfiguration, each with the finalizer Liqo's fabric puts on it.
type fabric struct {
	route, firewall *unstructured.Unstructured
}

func (f fabric) objects() []client.Object { return []client.Object{f.route, f.firewall} }

// layoutNetworking creates the networking objects of each provider's tenant namespace, named as Liqo's
// networking names them (external-network/route GenerateRouteConfigurationName "<configuration>-gw-ext",
// configuration-controller generateFirewallConfigurationName "<configuration>-masquerade-bypass", the
// Configuration named after the cluster ID) and labelled with the cluster ID.
func (d *demo) layoutNetworking(ctx context.Context) error {
	d.fabrics = map[string]fabric{}
	for _, p := range d.cons.Providers {
		route, err := d.networkingObject(ctx, p, "RouteConfiguration", p.ID+"-gw-ext", routeFinalizer,
			map[string]any{"table": map[string]any{"name": p.ID, "rules": []any{
				map[string]any{"routes": []any{map[string]any{"dst": "10.0.0.0/16"}}}}}})
		if err != nil {
			return err
		}
		firewall, err := d.networkingObject(ctx, p, "FirewallConfiguration", p.ID+"-masquerade-bypass", firewallFinalizer,
			map[string]any{"table": map[string]any{"name": p.ID, "family": "IPV4"}})
		if err != nil {
			return err
		}
		d.fabrics[p.ID] = fabric{route: route, firewall: firewall}
	}
	return nil
}

func (d *demo) networkingObject(ctx context.Context, p *fixture.Provider, kind, name, finalizer string, spec map[string]any) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion("networking.liqo.io/v1beta1")
	u.SetKind(kind)
	u.SetNamespace(p.TenantNS)
	u.SetName(name)
	u.SetLabels(map[string]string{liqojanitor.RemoteClusterIDLabel: p.ID})
	u.SetFinalizers([]string{finalizer})
	if err := d.env.Client.Create(ctx, u); err != nil {
		return nil, fmt.Errorf("creating %s %s/%s: %w", kind, p.TenantNS, name, err)
	}
	return u, nil
}

// unpeer is the chapter after the janitor's part: the operator deletes the tenant namespace as
// `liqoctl force unpeer` does, the janitor's record names what holds it, Liqo's own controllers (played
// here) release their finalizers, and the namespace controller deletes the namespace: unpeering complete.
func (d *demo) unpeer(ctx context.Context) error {
	for _, step := range []func(context.Context) error{
		d.deleteTenantNamespace, d.awaitHolders, d.playLiqo, d.awaitComplete, d.checkUnpeered,
	} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (d *demo) deleteTenantNamespace(ctx context.Context) error {
	p := d.dead()
	d.out.note(fmt.Sprintf("liqo-janitor released what it may, but the peering is not gone: the tenant namespace %s is still there, with "+
		"the VirtualNode, the identity Secret and what Liqo's networking left (a RouteConfiguration and a "+
		"FirewallConfiguration, under the fabric's finalizers).", p.TenantNS))
	d.out.note(fmt.Sprintf("On Liqo v1.1+ the operator now runs `liqoctl force unpeer %s`: after the mark it deletes "+
		"the tenant namespace and waits for it to go. On Liqo v1.0 (no force unpeer) the operator deletes the tenant "+
		"namespace with kubectl, as here:", p.ID))
	d.out.command(fmt.Sprintf("kubectl delete namespace %s --wait=false", p.TenantNS))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.TenantNS}}
	if err := d.env.Client.Delete(ctx, ns); err != nil {
		return fmt.Errorf("deleting the tenant namespace %s: %w", p.TenantNS, err)
	}
	d.tenantDeleted = time.Now()
	d.out.done(fmt.Sprintf("namespace %s is Terminating: kube-controller-manager's namespace controller deletes "+
		"what is in it, and what carries a finalizer stays until that finalizer goes", p.TenantNS))
	return nil
}

// awaitHolders waits until the janitor's record names what holds the terminating tenant namespace, then
// shows it with `status`.
func (d *demo) awaitHolders(ctx context.Context) error {
	w := d.out.waiter("waiting for the janitor's record to name what holds the namespace")
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		w.tick()
		u, err := d.unpeering(ctx)
		return err == nil && d.namesHolders(u), err
	})
	if err != nil {
		u, _ := d.unpeering(ctx)
		return fmt.Errorf("within a minute of the tenant namespace's deletion, the janitor's unpeering record did not name "+
			"the terminating namespace, its FirewallConfiguration and RouteConfiguration (held by the fabric's finalizers, not "+
			"releasable) and its VirtualNode; it says: %s: %w", u.Summary(), err)
	}
	d.out.done(fmt.Sprintf("the janitor's record names them %.1fs after the deletion (liqo-janitor.io/unpeering, "+
		"an UnpeeringInProgress event on each change)", time.Since(d.tenantDeleted).Seconds()))
	d.out.note("What the operator sees now:")
	out, err := d.plugin(ctx, "", "status", d.dead().ID)
	if err != nil {
		return err
	}
	d.out.shown(out)
	return nil
}

// namesHolders reports whether the unpeering record is in progress and names the terminating tenant
// namespace (with the namespace controller's report), the dead provider's FirewallConfiguration and
// RouteConfiguration held by the fabric's finalizers and not released by liqo-janitor, and its VirtualNode.
func (d *demo) namesHolders(u liqojanitor.Unpeering) bool {
	p, f := d.dead(), d.fabrics[d.dead().ID]
	if u.Phase != liqojanitor.UnpeeringInProgress || u.TenantNamespace != p.TenantNS {
		return false
	}
	names := func(kind, name, heldBy string) bool {
		return slices.ContainsFunc(u.Left, func(o liqojanitor.LeftObject) bool {
			return o.Kind == kind && o.Name == name && strings.HasPrefix(o.HeldBy, heldBy) && !o.Releasable
		})
	}
	return names("Namespace", p.TenantNS, "Terminating: ") &&
		names("FirewallConfiguration", f.firewall.GetName(), "finalizer "+firewallFinalizer) &&
		names("RouteConfiguration", f.route.GetName(), "finalizer "+routeFinalizer) &&
		names("VirtualNode", p.VirtualNode.Name, "finalizer "+fixture.VirtualNodeFinalizer)
}

// unpeering reads the janitor's unpeering record on the dead provider's ForeignCluster.
func (d *demo) unpeering(ctx context.Context) (liqojanitor.Unpeering, error) {
	fc := d.dead().ForeignCluster.DeepCopy()
	if err := d.env.Client.Get(ctx, client.ObjectKeyFromObject(fc), fc); err != nil {
		return liqojanitor.Unpeering{}, err
	}
	u, _ := liqojanitor.UnpeeringOf(fc.Annotations)
	return u, nil
}

// playLiqo plays what Liqo's own controllers do next (none runs in the demo): each releases only its own
// finalizer, once its own work is done.
func (d *demo) playLiqo(ctx context.Context) error {
	p, f := d.dead(), d.fabrics[d.dead().ID]
	d.out.note("Now Liqo's own parts, which no Liqo controller plays here, so the demo does, each releasing only its " +
		"own finalizer once its work is done:")
	guarded := p.Pods[0]
	if err := d.dropFinalizer(ctx, guarded, fixture.ForeignFinalizer); err != nil {
		return err
	}
	if err := d.awaitGone(ctx, guarded); err != nil {
		return err
	}
	d.out.done(fmt.Sprintf("first someone else: the owner of %s lets pod %s go (liqo-janitor never strips it); the "+
		"virtual node is empty", fixture.ForeignFinalizer, guarded.Name))
	if err := client.IgnoreNotFound(d.env.Client.Delete(ctx, p.Node)); err != nil {
		return fmt.Errorf("deleting Node %s: %w", p.Node.Name, err)
	}
	if err := d.dropFinalizer(ctx, p.VirtualNode, fixture.VirtualNodeFinalizer); err != nil {
		return err
	}
	d.out.done(fmt.Sprintf("Liqo's VirtualNode deletion routine: its drain finds the node empty, it deletes the Node %s "+
		"(and the virtual-kubelet Deployment, none here) and removes %s", p.Node.Name, fixture.VirtualNodeFinalizer))
	if err := d.dropFinalizer(ctx, p.IdentitySecret, liqojanitor.ReplicatorOperatorFinalizer); err != nil {
		return err
	}
	d.out.done(fmt.Sprintf("Liqo's crd-replicator (v1.1+: the mark honoured, no replicated object left) stops the "+
		"cluster's reflector and removes %s from Secret %s (on v1.0, liqo-janitor's opt-in --release-identity-secrets does)",
		liqojanitor.ReplicatorOperatorFinalizer, p.IdentitySecret.Name))
	if err := d.dropFinalizer(ctx, f.route, routeFinalizer); err != nil {
		return err
	}
	if err := d.dropFinalizer(ctx, f.firewall, firewallFinalizer); err != nil {
		return err
	}
	d.out.done(fmt.Sprintf("Liqo's fabric, once the nodes' routes and firewall rules for the peer are gone, removes %s "+
		"from RouteConfiguration %s and %s from FirewallConfiguration %s", routeFinalizer, f.route.GetName(),
		firewallFinalizer, f.firewall.GetName()))
	return nil
}

// dropFinalizer removes finalizer from obj, as the controller that owns it would: a patch with optimistic
// lock, re-read and retried on a conflict.
func (d *demo) dropFinalizer(ctx context.Context, obj client.Object, finalizer string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fresh := obj.DeepCopyObject().(client.Object)
		if err := d.env.Client.Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
			return err
		}
		if !slices.Contains(fresh.GetFinalizers(), finalizer) {
			return nil
		}
		base := fresh.DeepCopyObject().(client.Object)
		fresh.SetFinalizers(slices.DeleteFunc(fresh.GetFinalizers(), func(f string) bool { return f == finalizer }))
		return d.env.Client.Patch(ctx, fresh, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	})
	if err := client.IgnoreNotFound(err); err != nil {
		return fmt.Errorf("removing %s from %T %s: %w", finalizer, obj, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}

// awaitGone waits until obj no longer exists.
func (d *demo) awaitGone(ctx context.Context, obj client.Object) error {
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := d.env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err != nil {
		return fmt.Errorf("%T %s is still there 30s after its last finalizer went: %w", obj, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}

// awaitComplete waits until the namespace controller has deleted the tenant namespace and the janitor's
// record says the unpeering is complete.
func (d *demo) awaitComplete(ctx context.Context) error {
	p := d.dead()
	t0 := time.Now()
	w := d.out.waiter("waiting for the namespace controller (it retries about every 8s while content remains)")
	var nsGone time.Time
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		w.tick()
		if nsGone.IsZero() {
			err := d.env.Client.Get(ctx, client.ObjectKey{Name: p.TenantNS}, &corev1.Namespace{})
			if !apierrors.IsNotFound(err) {
				return false, client.IgnoreNotFound(err)
			}
			nsGone = time.Now()
			w.what = "waiting for the janitor's record to say complete"
		}
		u, err := d.unpeering(ctx)
		return err == nil && u.Complete(), err
	})
	if err != nil {
		u, _ := d.unpeering(ctx)
		if nsGone.IsZero() {
			return fmt.Errorf("within 2 minutes of Liqo's finalizers going, the namespace controller did not delete the tenant "+
				"namespace %s (see kube-controller-manager's log); the janitor's record says: %s: %w", p.TenantNS, u.Summary(), err)
		}
		return fmt.Errorf("the tenant namespace %s is gone, but the janitor's record does not say complete within 2 minutes "+
			"of Liqo's finalizers going; it says: %s: %w", p.TenantNS, u.Summary(), err)
	}
	d.out.done(fmt.Sprintf("unpeering complete: tenant namespace %s deleted by the namespace controller %.1fs after the "+
		"operator deleted it (%.1fs after Liqo's last finalizer went); the janitor's record says complete %.1fs later",
		p.TenantNS, nsGone.Sub(d.tenantDeleted).Seconds(), nsGone.Sub(t0).Seconds(), time.Since(nsGone).Seconds()))
	return nil
}

// checkUnpeered checks and shows the end: one UnpeeringComplete event, the live providers untouched, and
// the status afterwards.
func (d *demo) checkUnpeered(ctx context.Context) error {
	var ev *eventsv1.Event
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := d.unpeeringCompleteEvents(ctx)
		if err != nil || len(evs) == 0 {
			return false, err
		}
		ev = &evs[0]
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the unpeering record says complete, but no UnpeeringComplete event came within 30s: %w", err)
	}
	if err := d.unpeeringCompleteOnce(ctx); err != nil {
		return err
	}
	d.out.done(fmt.Sprintf("event UnpeeringComplete, sent once: %s", ev.Note))
	after, err := fixture.ResourceVersions(ctx, d.env.Client, d.liveObjects()...)
	if err != nil {
		return err
	}
	if n := fixture.Changed(d.before, after); n > 0 {
		return fmt.Errorf("%d objects of the live providers were changed", n)
	}
	d.out.done(fmt.Sprintf("live providers: %d/%d objects untouched (resourceVersions unchanged), their tenant "+
		"namespaces and networking objects included", len(d.before), len(d.before)))
	d.out.note("And the status afterwards:")
	out, err := d.plugin(ctx, "", "status", d.dead().ID)
	if err != nil {
		return err
	}
	d.out.shown(out)
	return nil
}

// unpeeringCompleteEvents are the UnpeeringComplete events about the dead provider's ForeignCluster.
func (d *demo) unpeeringCompleteEvents(ctx context.Context) ([]eventsv1.Event, error) {
	fc := d.dead().ForeignCluster
	var list eventsv1.EventList
	if err := d.env.Client.List(ctx, &list); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(list.Items, func(e eventsv1.Event) bool {
		return e.Reason != "UnpeeringComplete" || e.Regarding.Kind != "ForeignCluster" || e.Regarding.UID != fc.UID
	}), nil
}

// unpeeringCompleteOnce fails unless UnpeeringComplete was sent exactly once (one event, not a series).
func (d *demo) unpeeringCompleteOnce(ctx context.Context) error {
	evs, err := d.unpeeringCompleteEvents(ctx)
	if err != nil {
		return err
	}
	sent := 0
	for _, e := range evs {
		sent++
		if e.Series != nil {
			sent += int(e.Series.Count) - 1
		}
	}
	if sent != 1 {
		return fmt.Errorf("UnpeeringComplete was sent %d times, want exactly once", sent)
	}
	return nil
}

// checkUnpeeringOnce checks, at the end of the story, that the janitor's later passes (the provider's
// return, the fence) sent no second UnpeeringComplete.
func (d *demo) checkUnpeeringOnce(ctx context.Context) error {
	if err := d.unpeeringCompleteOnce(ctx); err != nil {
		return fmt.Errorf("after the provider's return and the fence: %w", err)
	}
	d.out.done("UnpeeringComplete: still sent exactly once")
	return nil
}
