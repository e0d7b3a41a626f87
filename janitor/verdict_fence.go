package janitor

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// The provider's fence (janitor rule 22, design revision 5 "At most once, with a deadline"): where a
// provider fences this consumer by itself (its agent, janitor/providerfence), the janitor's leader renews
// that provider's Lease and records, per provider cluster ID, its renewals and the provider's contract in
// the ConfigMap liqojanitor.FenceRenewalsConfigMap of the janitor's own namespace (the renewer's:
// liqojanitor.FenceRenewal). From it follows the deadline by which the provider has surely stopped this
// consumer's copies (FenceRenewal.Deadline: the last renewal that may have landed plus the contract's
// SafeAfter, on this consumer's clock). Before it the janitor releases nothing of that cluster ID —
// whoever set the mark, through the gate or past it (the policy fallback, Liqo v1.0's own tools) — so no
// workload runs here and there at once because of the janitor. The record is read live with the verdict,
// before a pass and before every batch of writes (assessLive), as the rest of rule 1's evidence is.

// fenceHold is what the provider's fence holds its cluster ID to (janitor rule 22). The zero value holds
// nothing: no provider-side fence (no record, no contract, or no renewal that may have landed — the
// provider's agent never armed for this consumer).
type fenceHold struct {
	// deadline is when the provider has surely fenced this consumer (FenceRenewal.Deadline).
	deadline time.Time
	// contract is the provider's contract the deadline was computed from.
	contract liqojanitor.FenceContract
	// unreadable says why the janitor's record of this provider's fence cannot be read: the cluster ID is
	// held until it can, since the provider's copies may run until a deadline nobody knows any more.
	unreadable string
	// overridden: the current mark carries the gate's stamped override of the deadline (fenceOverridden).
	overridden bool
}

// fenceHolds are the holds of the cluster IDs with a record, as read at once.
type fenceHolds map[string]fenceHold

// of is the hold of cluster ID id (none without a record).
func (f fenceHolds) of(id liqov1beta1.ClusterID) fenceHold { return f[string(id)] }

// holdFor is the hold of fc's cluster ID, lifted by the gate's stamped override of its current mark
// (fenceOverridden).
func (f fenceHolds) holdFor(fc *liqov1beta1.ForeignCluster) fenceHold {
	h := f.of(fc.Spec.ClusterID)
	h.overridden = fenceOverridden(fc)
	return h
}

// fenceOverridden says whether fc's current mark was set over the provider's fence deadline with the
// gate's stamped break-glass override (gate rule 31): the override names the cluster ID, and the gate's
// stamp of it parses, names the user of the mark's marked-by stamp and was made at the mark's marked-at
// (the gate writes the three in the one marking request). An override written past the gate carries no
// such pair — the policy fallback refuses a pre-written marked-by — and lifts nothing.
func fenceOverridden(fc *liqov1beta1.ForeignCluster) bool {
	o, ok := liqojanitor.ParseFenceDeadlineOverride(fc.Annotations[liqojanitor.FenceDeadlineOverriddenAnnotation])
	markedAt, stamped := liqojanitor.MarkedAt(fc)
	by := fc.Annotations[liqojanitor.MarkedByAnnotation]
	return ok && stamped && by != "" && o.By == by && o.At.Equal(markedAt) &&
		fc.Annotations[liqojanitor.OverrideFenceDeadlineAnnotation] == string(fc.Spec.ClusterID)
}

// fenceRecords reads the renewer's records (liqojanitor.FenceRenewalsConfigMap) live from the API server, in
// the janitor's namespace.
type fenceRecords struct {
	reader    client.Reader
	namespace string
}

// read reads every provider's fence hold. No ConfigMap is no record (no provider-side fence); a ConfigMap
// that cannot be read is an error (no verdict: nothing is released); a record that does not parse — or whose
// contract does not — holds its cluster ID (liqojanitor.ParseFenceRenewal), never counts as none.
func (f fenceRecords) read(ctx context.Context) (fenceHolds, error) {
	cm := &corev1.ConfigMap{}
	switch err := f.reader.Get(ctx, client.ObjectKey{Namespace: f.namespace, Name: liqojanitor.FenceRenewalsConfigMap}, cm); {
	case apierrors.IsNotFound(err):
		return fenceHolds{}, nil
	case err != nil:
		return nil, fmt.Errorf("reading the providers' fence records (ConfigMap %s/%s; nothing is released until they can be read): %w",
			f.namespace, liqojanitor.FenceRenewalsConfigMap, err)
	}
	return fenceHoldsIn(cm), nil
}

// fenceHoldsIn reads the holds out of the renewer's ConfigMap cm.
func fenceHoldsIn(cm *corev1.ConfigMap) fenceHolds {
	holds := fenceHolds{}
	unreadable := func(id string, err error) fenceHold {
		return fenceHold{unreadable: fmt.Sprintf("key %s of ConfigMap %s/%s: %v", id, cm.Namespace, cm.Name, err)}
	}
	for id := range cm.BinaryData {
		holds[id] = unreadable(id, fmt.Errorf("binary data, not a record"))
	}
	for id, v := range cm.Data {
		r, err := liqojanitor.ParseFenceRenewal(v)
		switch {
		case err != nil:
			holds[id] = unreadable(id, err)
		default:
			if deadline, c, ok := r.Deadline(); ok {
				holds[id] = fenceHold{deadline: deadline, contract: c}
			}
		}
	}
	return holds
}

// awaitFence holds l — a cluster otherwise dead or in its grace period — until its provider has surely fenced
// itself (janitor rule 22): while the fence's deadline is ahead and later than the grace period's end, the
// cluster waits for it (WaitFenceDeadline); while the record of the fence cannot be read, it waits until it
// can (WaitFenceUnreadable). The grace period and the deadline both hold, the later one wins; the grace
// window's own fields stay (its records are written as in the grace period).
func awaitFence(l liveness, f fenceHold, now time.Time) liveness {
	l.Fence = f
	if f.overridden {
		return l // the operator's stamped break-glass override (gate rule 31): nothing to wait for
	}
	switch {
	case f.unreadable != "":
		l.Wait, l.dead = WaitFenceUnreadable, false
	case f.deadline.After(now) && f.deadline.After(l.GraceEnds):
		l.Wait, l.dead, l.FenceLeft = WaitFenceDeadline, false, f.deadline.Sub(now)
	}
	return l
}

// releasableSince is when a dead cluster's hold ended: the later of its grace period's end and its
// provider's fence deadline (janitor rule 22).
func (l liveness) releasableSince() time.Time {
	if l.Fence.deadline.After(l.GraceEnds) {
		return l.Fence.deadline
	}
	return l.GraceEnds
}

// fenceRecheck is how long a cluster held by an unreadable fence record waits at most before it is assessed
// again; a change of the record wakes it sooner (watchFences).
const fenceRecheck = 30 * time.Second

// contractText is a provider's contract for a person: its bounds, and the time after this consumer's last
// renewal that may have reached it by which it has surely fenced this consumer (SafeAfter).
func contractText(c liqojanitor.FenceContract) string {
	d := func(v liqojanitor.Duration) time.Duration { return time.Duration(v).Round(100 * time.Millisecond) }
	return fmt.Sprintf("provider %s fences after %s without a renewal, poll %s, failover %s, stop %s; surely fenced %s after "+
		"this consumer's last renewal that may have reached it", c.ProviderClusterID, d(c.FenceAfter), d(c.Poll), d(c.Failover),
		d(c.Stop), c.SafeAfter().Round(time.Second))
}

// fenceWait says what the janitor waits for while the provider's fence holds a cluster (janitor rule 22).
func fenceWait(l liveness) string {
	if l.Wait == WaitFenceUnreadable {
		return fmt.Sprintf("waiting for the provider's fence, whose record is unreadable (%s)", truncate(l.Fence.unreadable, maxReasonLen))
	}
	return fmt.Sprintf("waiting for the provider's fence until %s (the provider's contract: %s)",
		l.Fence.deadline.UTC().Format(time.RFC3339), contractText(l.Fence.contract))
}

// fenceCache watches the renewer's ConfigMap alone (its namespace, its name), so that a record that appears,
// changes or goes wakes the marked clusters of its provider (watchFences).
func fenceCache(mgr ctrl.Manager, namespace string) (cache.Cache, error) {
	return ownCache(mgr, "the providers' fence records", cache.Options{
		DefaultNamespaces:    map[string]cache.Config{namespace: {}},
		DefaultFieldSelector: fields.OneTermEqualSelector("metadata.name", liqojanitor.FenceRenewalsConfigMap),
	})
}

// fenceChanges enqueues, on a change of the renewer's ConfigMap, the marked ForeignClusters whose provider's
// record changed (appeared, moved, went, or became readable): the deadline of a held cluster is requeued
// for, but a record that appears during a clean-up stops it at its next batch and only this brings the
// cluster back, and a record fixed by hand releases a held cluster without waiting for its recheck. The
// renewer rewrites the records of the providers it renews every renew interval; those are not marked, and
// enqueue nothing.
func (r *reconciler) fenceChanges() handler.EventHandler {
	enqueue := func(ctx context.Context, before, after client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		old, updated := configMapData(before), configMapData(after)
		for _, req := range r.clusters(ctx, func(fc *liqov1beta1.ForeignCluster) bool {
			id := string(fc.Spec.ClusterID)
			return liqojanitor.IsMarked(fc.Annotations) && old[id] != updated[id]
		}) {
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, nil, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.ObjectOld, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, nil, q)
		},
	}
}

// configMapData is a ConfigMap's data, binary data as text (nil for no ConfigMap).
func configMapData(obj client.Object) map[string]string {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.BinaryData {
		out[k] = string(v)
	}
	for k, v := range cm.Data {
		out[k] = v
	}
	return out
}
