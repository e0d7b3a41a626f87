package janitor

import (
	"context"
	"fmt"

	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/liqo-janitor/liqo-janitor/janitor/liqoapi"
)

// listOffloadings returns the terminating NamespaceOffloadings that still hold Liqo's finalizer and
// mention the dead cluster; releaseOffloading decides on each with the live set of NamespaceMaps.
func (r *Reconciler) listOffloadings(ctx context.Context, s *scope) ([]client.Object, error) {
	var nsos offloadingv1beta1.NamespaceOffloadingList
	if err := r.Client.List(ctx, &nsos); err != nil {
		return nil, fmt.Errorf("listing NamespaceOffloadings: %w", err)
	}
	maps, err := r.namespaceMaps(ctx)
	if err != nil {
		return nil, err
	}
	var out []client.Object
	for i := range nsos.Items {
		nso := &nsos.Items[i]
		if !nso.DeletionTimestamp.IsZero() && mentions(nso, s.clusterID, maps) {
			out = append(out, nso.DeepCopy())
		}
	}
	return out, nil
}

func (r *Reconciler) namespaceMaps(ctx context.Context) ([]offloadingv1beta1.NamespaceMap, error) {
	var nms offloadingv1beta1.NamespaceMapList
	if err := r.Client.List(ctx, &nms, client.MatchingLabels{liqoapi.ReplicationLabel: "true"}); err != nil {
		return nil, fmt.Errorf("listing NamespaceMaps: %w", err)
	}
	return nms.Items, nil
}

// releaseOffloading removes the NamespaceOffloading finalizer when offloadingReleasable holds on the live
// state of its NamespaceMaps: a NamespaceMap of a live cluster may have gained or kept an entry since the
// cache was read, so this decision is never taken on a cached view.
func (r *Reconciler) releaseOffloading(ctx context.Context, s *scope, obj client.Object) (outcome, error) {
	var nms offloadingv1beta1.NamespaceMapList
	if err := r.APIReader.List(ctx, &nms, client.MatchingLabels{liqoapi.ReplicationLabel: "true"}); err != nil {
		return 0, fmt.Errorf("listing NamespaceMaps: %w", err)
	}
	if !offloadingReleasable(obj.(*offloadingv1beta1.NamespaceOffloading), nms.Items, s.dead) {
		return waiting, nil
	}
	return removeFinalizer(ctx, r.Client, r.APIReader, obj, liqoapi.NamespaceOffloadingFinalizer, s.dryRun)
}

// clusterOf maps a remoteNamespacesConditions key (a NamespaceMap name) to the cluster ID of that
// NamespaceMap, through its liqo.io/remote-cluster-id label rather than assuming name == ID.
func clusterOf(key string, maps []offloadingv1beta1.NamespaceMap) (string, bool) {
	for i := range maps {
		if maps[i].Name == key {
			return maps[i].Labels[liqoapi.RemoteClusterIDLabel], true
		}
	}
	return "", false
}

// mentions reports whether a NamespaceOffloading is tied to cluster: one of its remaining remote
// namespace entries belongs to that cluster's NamespaceMap, or is named after it with no NamespaceMap left.
func mentions(nso *offloadingv1beta1.NamespaceOffloading, cluster string, maps []offloadingv1beta1.NamespaceMap) bool {
	for key := range nso.Status.RemoteNamespacesConditions {
		if id, ok := clusterOf(key, maps); (ok && id == cluster) || (!ok && key == cluster) {
			return true
		}
	}
	return false
}

// offloadingReleasable is the NamespaceOffloading rule: every remaining remoteNamespacesConditions entry
// maps to a dead cluster or to no NamespaceMap at all, and no live cluster's NamespaceMap still lists the
// namespace in spec.desiredMapping (Liqo's own deletion must have reached every live provider). A
// NamespaceMap whose cluster has no ForeignCluster counts as live.
func offloadingReleasable(nso *offloadingv1beta1.NamespaceOffloading, maps []offloadingv1beta1.NamespaceMap, dead map[string]bool) bool {
	for key := range nso.Status.RemoteNamespacesConditions {
		if id, ok := clusterOf(key, maps); ok && !dead[id] {
			return false
		}
	}
	for i := range maps {
		if _, listed := maps[i].Spec.DesiredMapping[nso.Namespace]; listed && !dead[maps[i].Labels[liqoapi.RemoteClusterIDLabel]] {
			return false
		}
	}
	return true
}
