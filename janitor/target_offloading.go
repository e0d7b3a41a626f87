package janitor

import (
	"context"
	"fmt"
	"sort"

	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor/internal/release"
)

// NamespaceOffloadings follow Liqo's own deletion, never get ahead of it. Liqo's deletionLogic
// (pkg/liqo-controller-manager/offloading/namespaceoffloading-controller/lifecycle.go, the same in Liqo
// v1.0.3, v1.1.0 and v1.2.0) 1. removes the namespace's liqo.io/scheduling-enabled label
// (enforceSchedulingLabelAbsence), 2. removes the namespace from spec.desiredMapping of every local
// NamespaceMap (removeDesiredMappings over getClusterIDMap), 3. waits until
// status.remoteNamespacesConditions is empty, 4. removes its finalizer. For a dead provider step 3 never
// ends (its entry goes only with its NamespaceMap), and that is the one step the janitor takes over. If the
// finalizer went before steps 1–2, the NamespaceOffloading would be gone, Liqo would never remove the label,
// and Liqo's pod webhook (namespaceSelector on that label, failurePolicy Fail) would refuse every pod of
// the namespace.

// listOffloadings returns the terminating NamespaceOffloadings that mention the dead cluster (from the
// cache: a candidate list only); releaseOffloading decides on each with live reads.
func (src *sources) listOffloadings(ctx context.Context, s *scope) ([]client.Object, error) {
	var nsos offloadingv1beta1.NamespaceOffloadingList
	if err := src.client.List(ctx, &nsos); err != nil {
		return nil, fmt.Errorf("listing NamespaceOffloadings: %w", err)
	}
	maps, err := namespaceMaps(ctx, src.client)
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

// namespaceMaps lists the NamespaceMaps Liqo's NamespaceOffloading controller works with (liqoLocalReplicas).
func namespaceMaps(ctx context.Context, c client.Reader) ([]offloadingv1beta1.NamespaceMap, error) {
	var nms offloadingv1beta1.NamespaceMapList
	if err := c.List(ctx, &nms, liqoLocalReplicas()); err != nil {
		return nil, fmt.Errorf("listing NamespaceMaps: %w", err)
	}
	return nms.Items, nil
}

// releaseOffloading removes the NamespaceOffloading finalizer when Liqo has done its local part and only
// dead clusters are left (offloadingWaitsFor). The decision is taken on a fresh world on every attempt,
// conflict retries included (removeFinalizerIf): the NamespaceOffloading re-read live, the namespace and
// the NamespaceMaps read live (the cache may lag behind Liqo's last step), and the current dead set —
// refreshed by the pass's live re-check before every batch, and again before every retry (s.stillDead: a
// write that lost a race was raced by a changing world, and another cluster of the NamespaceOffloading
// may have been unmarked meanwhile). While it waits it records what for.
func (src *sources) releaseOffloading(ctx context.Context, s *scope, obj client.Object) (release.Outcome, error) {
	nso := &offloadingv1beta1.NamespaceOffloading{}
	if err := src.apiReader.Get(ctx, client.ObjectKeyFromObject(obj), nso); err != nil {
		if apierrors.IsNotFound(err) {
			return release.Gone, nil
		}
		return 0, fmt.Errorf("re-reading NamespaceOffloading %s: %w", client.ObjectKeyFromObject(obj), err)
	}
	if nso.UID != obj.GetUID() {
		return release.Gone, nil // re-created under the same name: not the one listed
	}
	decide := func(ctx context.Context, live client.Object, attempt int) (bool, release.Outcome, error) {
		if attempt > 0 {
			if dead, err := s.stillDead(ctx); !dead {
				return false, release.Waiting, err // no longer dead: the pass stops; not released
			}
		}
		labelled, err := src.schedulingEnabled(ctx, live.GetNamespace())
		if err != nil {
			return false, 0, err
		}
		maps, err := namespaceMaps(ctx, src.apiReader)
		if err != nil {
			return false, 0, err
		}
		if why := offloadingWaitsFor(live.(*offloadingv1beta1.NamespaceOffloading), labelled, maps, s.deadSet()); why != "" {
			s.waitFor(live, why)
			return false, release.Waiting, nil
		}
		return true, 0, nil
	}
	return release.RemoveFinalizerIf(ctx, src.client, src.apiReader, nso, liqojanitor.NamespaceOffloadingFinalizer, s.reportOnly(), decide)
}

// schedulingEnabled reads, live and metadata-only, whether the namespace still carries Liqo's scheduling
// label. A namespace that is gone carries none.
func (src *sources) schedulingEnabled(ctx context.Context, namespace string) (bool, error) {
	ns := metadataOnly(namespaceGVK)
	if err := src.apiReader.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading namespace %s: %w", namespace, err)
	}
	_, ok := ns.Labels[liqojanitor.SchedulingLabel]
	return ok, nil
}

// clusterOf maps a remoteNamespacesConditions key (a NamespaceMap name) to the cluster ID of that
// NamespaceMap, through its liqo.io/remote-cluster-id label rather than assuming name == ID.
func clusterOf(key string, maps []offloadingv1beta1.NamespaceMap) (string, bool) {
	for i := range maps {
		if maps[i].Name == key {
			return maps[i].Labels[liqojanitor.RemoteClusterIDLabel], true
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

// offloadingWaitsFor is the NamespaceOffloading rule (janitor rule 4). It returns what the
// NamespaceOffloading still waits for, or "" when the finalizer may go: Liqo has removed the namespace's
// scheduling label (labelled is false) and every NamespaceMap's desiredMapping entry for the namespace —
// dead clusters' NamespaceMaps included, since Liqo's step 2 patches those too — and every remaining
// remoteNamespacesConditions entry maps to a dead cluster or to no NamespaceMap at all. A NamespaceMap
// whose cluster has no ForeignCluster counts as live.
func offloadingWaitsFor(nso *offloadingv1beta1.NamespaceOffloading, labelled bool, maps []offloadingv1beta1.NamespaceMap, dead map[string]bool) string {
	if labelled {
		return fmt.Sprintf("namespace %s still carries %s: Liqo has not started deleting its offloading (is liqo-controller-manager running?)",
			nso.Namespace, liqojanitor.SchedulingLabel)
	}
	for i := range maps {
		if _, listed := maps[i].Spec.DesiredMapping[nso.Namespace]; listed {
			return fmt.Sprintf("NamespaceMap %s/%s (cluster %s) still lists namespace %s in spec.desiredMapping: Liqo has not removed it yet",
				maps[i].Namespace, maps[i].Name, maps[i].Labels[liqojanitor.RemoteClusterIDLabel], nso.Namespace)
		}
	}
	var live []string
	for key := range nso.Status.RemoteNamespacesConditions {
		if id, ok := clusterOf(key, maps); ok && !dead[id] {
			live = append(live, id)
		}
	}
	if len(live) > 0 {
		sort.Strings(live)
		return fmt.Sprintf("the remote namespace of %s on live cluster %s is not gone yet: Liqo finishes once that provider reports it deleted",
			nso.Namespace, live[0])
	}
	return ""
}
