package webhook

import (
	"context"
	"fmt"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// Peering again a cluster whose volumes were released (rule 32): the provider's new virtual kubelet deletes
// the remote PVCs it finds with no local claim, the data the operator abandoned when releasing them. The
// janitor keeps a copy of every released-volumes record by cluster ID in its namespace
// (liqojanitor.ReleasedVolumesConfigMap: the ForeignCluster, and its record, may be gone), and a third
// validating webhook answers a CREATE of a ForeignCluster, or an UPDATE that sets or changes its
// spec.clusterID, with liqojanitor.VolumesReleased.RepeerWarning when that copy names the cluster ID. It
// only warns: its failurePolicy is Ignore, so peering never fails for the gate (rule 8), and its timeout is
// 2 s (its one read is bounded by 1 s), so a gate that hangs delays a peering by 2 s at most.

// PeeringPath is the path the peering warning is served on (rule 32).
const PeeringPath = "/warn-liqo-io-v1beta1-foreigncluster-peering"

//nolint:lll // markers are one line each
// +kubebuilder:webhook:path=/warn-liqo-io-v1beta1-foreigncluster-peering,mutating=false,failurePolicy=ignore,sideEffects=None,groups=core.liqo.io,resources=foreignclusters,verbs=create;update,versions=v1beta1,name=vforeigncluster-peering.liqo-janitor.io,admissionReviewVersions=v1,matchPolicy=Equivalent,timeoutSeconds=2,patch=`{"matchConditions":[{"name":"peerings","expression":"request.operation == 'CREATE' || (has(object.spec.clusterID) && !(has(oldObject.spec.clusterID) && oldObject.spec.clusterID == object.spec.clusterID))"}]}`

// releasedReadTimeout bounds the read of the janitor's copy of the records (rule 32).
const releasedReadTimeout = time.Second

// WarnPeering answers a request that peers a cluster ID (peers) with the warning of the volumes released
// from it (peeringWarnings); it never refuses.
func (g *gate) WarnPeering(ctx context.Context, req admission.Request) admission.Response {
	fc, old, err := g.decode(req)
	if err != nil || !peers(old, fc) {
		return admission.Allowed("")
	}
	rec, ok, err := g.releasedVolumes(ctx, string(fc.Spec.ClusterID))
	return admission.Allowed("").WithWarnings(peeringWarnings(fc, rec, ok, err)...)
}

// peers reports whether a request gives fc a cluster ID it did not have: a CREATE (old nil) or an UPDATE
// that sets or changes spec.clusterID.
func peers(old, fc *liqov1beta1.ForeignCluster) bool {
	return fc.Spec.ClusterID != "" && (old == nil || old.Spec.ClusterID != fc.Spec.ClusterID)
}

// peeringWarnings are the warnings on peering fc's cluster ID (rule 32): the volumes released from it when
// the janitor's copy names some, or why the gate cannot tell.
func peeringWarnings(fc *liqov1beta1.ForeignCluster, rec liqojanitor.VolumesReleased, ok bool, err error) []string {
	switch {
	case err != nil:
		return []string{warnReleasedUnknown(fc, err)}
	case ok:
		return []string{rec.RepeerWarning(string(fc.Spec.ClusterID))}
	}
	return nil
}

// releasedVolumes is the janitor's copy of the volumes released from clusterID (rule 32): read live from
// liqojanitor.ReleasedVolumesConfigMap in the janitor's own namespace (Options.Namespace) and nowhere else;
// none when the ConfigMap or the cluster's entry is not there.
func (g *gate) releasedVolumes(ctx context.Context, clusterID string) (liqojanitor.VolumesReleased, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, releasedReadTimeout)
	defer cancel()
	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: g.options.Namespace, Name: liqojanitor.ReleasedVolumesConfigMap}
	switch err := g.apiReader.Get(ctx, key, cm); {
	case apierrors.IsNotFound(err):
		return liqojanitor.VolumesReleased{}, false, nil
	case err != nil:
		return liqojanitor.VolumesReleased{}, false, fmt.Errorf("reading ConfigMap %s: %w", key, err)
	}
	rec, ok := liqojanitor.ReleasedVolumesOf(cm, clusterID)
	return rec, ok, nil
}
