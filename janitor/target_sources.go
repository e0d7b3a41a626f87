package janitor

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/liqo-janitor/liqo-janitor/janitor/internal/podwatch"
)

// sources is what the targets read and write through: the manager's narrow caches and its client (c),
// the live reader for the last read before an irreversible step, and the pods of dead virtual nodes. The
// targets are its methods (target_pods.go, target_replicated.go, target_offloading.go, target_identity.go),
// not the worker pool's.
type sources struct {
	// client reads from the manager's narrow caches and writes (patches and deletes).
	client client.Client
	// apiReader reads live from the API server, right before irreversible steps.
	apiReader client.Reader
	// pods lists the pods of dead virtual nodes: from per-node watches in the controller (podwatch.Watcher),
	// live for a plan made outside it (podwatch.Live, PlanCluster).
	pods podSource
	// now is the janitor's clock, and settle Options.FabricSettle (target_fabric.go).
	now    func() time.Time
	settle time.Duration
}

// podSource lists the pods bound to a virtual node of a cluster, and forgets the nodes of a cluster not
// in keep.
type podSource interface {
	Pods(ctx context.Context, cluster, node string, draining bool) ([]client.Object, error)
	WatchOnly(cluster string, keep map[string]bool)
	// Pause stops the cluster's pod watches while a pass writes; Resume restarts them, given what the
	// pass left on each node (see package podwatch).
	Pause(cluster string)
	Resume(cluster string, left podwatch.Left)
}

// listMetadata lists objects of gvk metadata-only through reader: the manager's metadata-only cache, or
// the API server itself.
func listMetadata(ctx context.Context, reader client.Reader, gvk schema.GroupVersionKind, opts ...client.ListOption) ([]client.Object, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := reader.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("listing %s: %w", gvk.Kind, err)
	}
	out := make([]client.Object, 0, len(list.Items))
	for i := range list.Items {
		obj := list.Items[i].DeepCopy()
		obj.SetGroupVersionKind(gvk)
		out = append(out, obj)
	}
	return out, nil
}

func terminating(objs []client.Object) []client.Object {
	out := objs[:0]
	for _, o := range objs {
		if !o.GetDeletionTimestamp().IsZero() {
			out = append(out, o)
		}
	}
	return out
}
