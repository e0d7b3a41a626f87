package janitor

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor/internal/release"
)

// listIdentitySecrets returns the dead cluster's terminating control-plane identity Secrets (opt-in,
// --release-identity-secrets; read metadata-only through a cache narrowed to identity Secrets).
func (src *sources) listIdentitySecrets(ctx context.Context, s *scope) ([]client.Object, error) {
	secrets, err := listMetadata(ctx, src.client, secretGVK, client.MatchingLabels{
		liqojanitor.RemoteClusterIDLabel: s.clusterID, liqojanitor.IdentityTypeLabel: liqojanitor.ControlPlaneIdentity,
	})
	return terminating(secrets), err
}

// releaseIdentitySecret removes crdreplicator.liqo.io/operator once no object the crdReplicator replicates
// (ResourceSlice, NamespaceMap, Renew selected by liqoLocalReplicas) is left in the Secret's namespace —
// checked live, as the crdReplicator itself checks before stopping its reflector (Reflector.Stop,
// internal/crdReplicator/reflection/reflector.go, Liqo v1.0 to v1.2).
func (src *sources) releaseIdentitySecret(ctx context.Context, s *scope, secret client.Object) (release.Outcome, error) {
	for _, gvk := range liqojanitor.ReplicatedGVKs {
		left, err := listMetadata(ctx, src.apiReader, gvk, client.InNamespace(secret.GetNamespace()), liqoLocalReplicas())
		if err != nil {
			return 0, err
		}
		if len(left) > 0 {
			return release.Waiting, nil
		}
	}
	return release.RemoveFinalizer(ctx, src.client, src.apiReader, secret, liqojanitor.ReplicatorOperatorFinalizer, s.reportOnly())
}
