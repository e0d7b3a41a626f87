package records

import (
	"context"
	"encoding/json"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PatchAnnotations merge-patches annotations (a nil value removes the key) onto the ForeignCluster name, at
// resourceVersion: the write lands only on the version the caller read (a conflict error otherwise), so two
// replicas never both make one transition. Only the janitor's own keys are written through it (gate rule 14
// lets only the janitor's identity write them).
func PatchAnnotations(ctx context.Context, c client.Writer, name, resourceVersion string, annotations map[string]any) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations, "resourceVersion": resourceVersion}})
	if err != nil {
		return err
	}
	fc := &liqov1beta1.ForeignCluster{}
	fc.Name = name
	return c.Patch(ctx, fc, client.RawPatch(types.MergePatchType, patch))
}
