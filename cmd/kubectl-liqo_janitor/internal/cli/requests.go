package cli

import (
	"context"
	"encoding/json"
	"fmt"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Resolve is a client of the consumer and the ForeignCluster an argument names.
func (f *Factory) Resolve(ctx context.Context, arg string) (client.Client, *liqov1beta1.ForeignCluster, error) {
	c, err := f.Client()
	if err != nil {
		return nil, nil, err
	}
	fc, err := ForeignCluster(ctx, c, arg)
	return c, fc, err
}

// ForeignCluster finds the ForeignCluster an argument names: its name, or its spec.clusterID.
func ForeignCluster(ctx context.Context, c client.Client, arg string) (*liqov1beta1.ForeignCluster, error) {
	var fcs liqov1beta1.ForeignClusterList
	if err := c.List(ctx, &fcs); err != nil {
		return nil, fmt.Errorf("listing ForeignClusters: %w", err)
	}
	var byID []*liqov1beta1.ForeignCluster
	for i := range fcs.Items {
		fc := &fcs.Items[i]
		if fc.Name == arg {
			return fc, nil
		}
		if string(fc.Spec.ClusterID) == arg {
			byID = append(byID, fc)
		}
	}
	switch len(byID) {
	case 1:
		return byID[0], nil
	case 0:
		return nil, fmt.Errorf("no ForeignCluster is named %q or has that cluster ID: list them with kubectl get foreignclusters", arg)
	}
	return nil, fmt.Errorf("%d ForeignClusters have cluster ID %q: name one of them (kubectl get foreignclusters)", len(byID), arg)
}

// WhoAmI is the user the API server takes the plugin's requests to come from, impersonation (--as)
// included: the user the gate stamps as marked-by. A SelfSubjectReview needs no RBAC.
func WhoAmI(ctx context.Context, c client.Client) (string, error) {
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, review); err != nil {
		return "", fmt.Errorf("asking the API server who you are (SelfSubjectReview): %w", err)
	}
	return review.Status.UserInfo.Username, nil
}

// AnnotationsPatch is a merge patch that sets and removes annotations.
func AnnotationsPatch(set map[string]string, remove []string) client.Patch {
	annotations := map[string]any{}
	for k, v := range set {
		annotations[k] = v
	}
	for _, k := range remove {
		annotations[k] = nil
	}
	data, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	return client.RawPatch(types.MergePatchType, data)
}
