package janitor

import (
	"context"
	"slices"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor/internal/release"
)

// +kubebuilder:rbac:groups=networking.liqo.io,resources=internalfabrics,verbs=get;list;patch

// DefaultFabricSettle is how long an InternalFabric of a dead cluster must have been deleting before the
// janitor removes the legacy finalizer Liqo's fabric still holds (janitor rule 12): the fabric removes it
// itself within seconds when it can, after its own local step (the node's geneve interface); one still
// there after this long is one no fabric pod will release (the namespace stays Terminating, Liqo PR #3268).
const DefaultFabricSettle = 2 * time.Minute

// listInternalFabrics (janitor rule 12) returns the InternalFabrics of the dead cluster whose legacy
// finalizer the janitor may remove: on a Liqo older than v1.2.0, or one whose version it cannot tell (v1.2.0
// does the same by itself for any InternalFabric being deleted), those being deleted that carry the
// finalizer in a tenant namespace of the cluster that is itself being deleted (the unpeering), labelled
// liqo.io/remote-cluster-id with the cluster's ID (the GatewayServer and GatewayClient controllers create
// them so, server-controller and client-controller, v1.0.3 to v1.2.0). On a Liqo known to be v1.2 or
// newer it returns nothing: Liqo releases them itself.
func (src *sources) listInternalFabrics(ctx context.Context, s *scope) ([]client.Object, error) {
	if !s.liqo.Before(2) {
		return nil, nil
	}
	namespaces, err := liqojanitor.TenantNamespaces(ctx, src.apiReader, s.clusterID)
	if err != nil {
		return nil, err
	}
	var out []client.Object
	for _, ns := range namespaces.Items {
		if ns.DeletionTimestamp.IsZero() {
			continue
		}
		fabrics, err := listMetadata(ctx, src.apiReader, liqojanitor.InternalFabricGVK, client.InNamespace(ns.Name),
			client.MatchingLabels{liqojanitor.RemoteClusterIDLabel: s.clusterID})
		if err != nil {
			return nil, err
		}
		for _, f := range terminating(fabrics) {
			if slices.Contains(f.GetFinalizers(), liqojanitor.LegacyFabricFinalizer) {
				out = append(out, f)
			}
		}
	}
	return out, nil
}

// releaseInternalFabric removes the legacy finalizer from an InternalFabric listInternalFabrics returned,
// once it has been deleting for the settle time (Options.FabricSettle); before that it waits, and the
// pass comes back when the time is up.
func (src *sources) releaseInternalFabric(ctx context.Context, s *scope, obj client.Object) (release.Outcome, error) {
	settled := func(_ context.Context, o client.Object, _ int) (bool, release.Outcome, error) {
		if left := src.settle - src.now().Sub(o.GetDeletionTimestamp().Time); left > 0 {
			s.wakeIn(left)
			return false, release.Waiting, nil
		}
		return true, 0, nil
	}
	return release.RemoveFinalizerIf(ctx, src.client, src.apiReader, obj, liqojanitor.LegacyFabricFinalizer, s.reportOnly(), settled)
}
