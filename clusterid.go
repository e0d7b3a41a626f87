package liqojanitor

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LocalClusterID reads this cluster's Liqo cluster ID: CLUSTER_ID of the ConfigMap in Liqo's namespace
// labelled as Liqo labels it (app.kubernetes.io/name=clusterid-configmap), selected by label as Liqo does
// (pkg/utils/cluster_info.go GetClusterIDWithControllerClient, v1.0.3 to v1.2.0). Several that disagree, or none, are an error that
// names what was looked for.
func LocalClusterID(ctx context.Context, reader client.Reader, liqoNamespace string) (string, error) {
	var cms corev1.ConfigMapList
	if err := reader.List(ctx, &cms, client.InNamespace(liqoNamespace),
		client.MatchingLabels{ClusterIDConfigMapNameLabel: ClusterIDConfigMapNameValue}); err != nil {
		return "", fmt.Errorf("listing ConfigMaps in namespace %q: %w", liqoNamespace, err)
	}
	ids := map[string]bool{}
	for i := range cms.Items {
		if id := cms.Items[i].Data[ClusterIDConfigMapKey]; id != "" {
			ids[id] = true
		}
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("no ConfigMap labelled %s=%s with a %s key in namespace %q",
			ClusterIDConfigMapNameLabel, ClusterIDConfigMapNameValue, ClusterIDConfigMapKey, liqoNamespace)
	case 1:
		for id := range ids {
			return id, nil
		}
	}
	return "", fmt.Errorf("several cluster-ID ConfigMaps in namespace %q disagree: %s", liqoNamespace,
		strings.Join(slices.Sorted(maps.Keys(ids)), ", "))
}
