package janitor

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor/internal/release"
)

// replicated is the target for one of the crdReplicator's kinds (ResourceSlice, NamespaceMap, Renew):
// only our own copies of the dead cluster (ownCopiesOf), only when terminating, and only the
// crdreplicator.liqo.io/resource finalizer.
func (src *sources) replicated(gvk schema.GroupVersionKind) target {
	return target{
		kind:  gvk.Kind,
		stage: stageFirst,
		list: func(ctx context.Context, s *scope) ([]client.Object, error) {
			objs, err := listMetadata(ctx, src.client, gvk, ownCopiesOf(s.clusterID))
			return terminating(objs), err
		},
		release: func(ctx context.Context, s *scope, obj client.Object) (release.Outcome, error) {
			return release.RemoveFinalizer(ctx, src.client, src.apiReader, obj, liqojanitor.ReplicatorFinalizer, s.reportOnly())
		},
	}
}

// ownCopiesOf selects the consumer's own replicated copies routed to clusterID: liqo.io/replication=true
// (ours, not a peer's), liqo.io/remoteID=clusterID (where the crdReplicator sends them: it routes on this
// label alone, internal/crdReplicator/reflection LocalResourcesLabelSelector) and
// liqo.io/remote-cluster-id=clusterID. Liqo's forge sets all three (MutateResourceSlice in
// pkg/liqo-controller-manager/authentication/forge/resourceslice.go; ensureNamespaceMapPresence).
func ownCopiesOf(clusterID string) client.MatchingLabels {
	return client.MatchingLabels{
		liqojanitor.RemoteClusterIDLabel: clusterID, liqojanitor.RemoteIDLabel: clusterID, liqojanitor.ReplicationLabel: "true",
	}
}

// liqoLocalReplicas selects what the crdReplicator replicates from this cluster: liqo.io/replication=true
// and liqo.io/remoteID present (LocalResourcesLabelSelector, internal/crdReplicator/reflection/manager.go,
// Liqo v1.0 to v1.2). Liqo's NamespaceOffloading controller finds NamespaceMaps with it
// (getClusterIDMap, namespaceoffloading-controller/clusterselector.go), and the crdReplicator stops a
// reflector only when none of them is left in its namespace.
func liqoLocalReplicas() client.MatchingLabelsSelector {
	return client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(labels.Set{liqojanitor.ReplicationLabel: "true"}).
		Add(*must(labels.NewRequirement(liqojanitor.RemoteIDLabel, selection.Exists, nil)))}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
