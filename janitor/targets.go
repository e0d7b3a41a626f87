package janitor

import (
	"context"
	"fmt"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/liqo-janitor/liqo-janitor/janitor/liqoapi"
)

// scope is what one pass over a dead cluster knows.
type scope struct {
	// fc is the dead cluster's ForeignCluster, as read live from the API server.
	fc *liqov1beta1.ForeignCluster
	// clusterID is fc's spec.clusterID.
	clusterID string
	// dead says, for every cluster ID with a ForeignCluster, whether it is dead (others count as live).
	dead map[string]bool
	// dryRun reports instead of writing.
	dryRun bool
}

// target is one kind of object a dead cluster leaves stuck: how to find the terminating objects tied to
// the cluster, and how to release one of them. The janitor walks a table of targets.
type target struct {
	kind    string
	stage   int
	list    func(ctx context.Context, s *scope) ([]client.Object, error)
	release func(ctx context.Context, s *scope, obj client.Object) (outcome, error)
}

// podKind is the target kind of pods on dead virtual nodes.
const podKind = "Pod"

// Kinds of the GVKs the janitor reads metadata-only.
var (
	resourceSliceGVK = authv1beta1.GroupVersion.WithKind("ResourceSlice")
	renewGVK         = authv1beta1.GroupVersion.WithKind("Renew")
	namespaceMapGVK  = offloadingv1beta1.SchemeGroupVersion.WithKind("NamespaceMap")
	nodeGVK          = corev1.SchemeGroupVersion.WithKind("Node")
	secretGVK        = corev1.SchemeGroupVersion.WithKind("Secret")
)

// Stages order a clean-up: first the objects nothing else waits for — pods (what a VirtualNode drain
// waits on) and the replicated objects — released together; then NamespaceOffloadings, decided on the
// NamespaceMaps the first stage may have released; last the identity Secret, which waits for every
// replicated object of its namespace to be gone.
const (
	stageFirst = iota
	stageOffloading
	stageIdentity
	stages
)

// targets returns the table.
func (r *Reconciler) targets() []target {
	ts := []target{
		{kind: podKind, stage: stageFirst, list: r.listPods, release: r.releasePod},
		r.replicated(resourceSliceGVK),
		r.replicated(namespaceMapGVK),
		r.replicated(renewGVK),
		{kind: "NamespaceOffloading", stage: stageOffloading, list: r.listOffloadings, release: r.releaseOffloading},
	}
	if r.Options.ReleaseIdentitySecrets {
		ts = append(ts, target{kind: "Secret", stage: stageIdentity, list: r.listIdentitySecrets, release: r.releaseIdentitySecret})
	}
	return ts
}

// listPods returns the terminating pods bound to the cluster's virtual nodes.
func (r *Reconciler) listPods(ctx context.Context, s *scope) ([]client.Object, error) {
	nodes, err := r.listMetadata(ctx, nodeGVK, client.MatchingLabels{
		liqoapi.NodeTypeLabel: liqoapi.VirtualNodeType, liqoapi.RemoteClusterIDLabel: s.clusterID,
	})
	if err != nil {
		return nil, err
	}
	keep := map[string]bool{}
	var pods []client.Object
	for _, node := range nodes {
		keep[node.GetName()] = true
		onNode, err := r.pods.pods(ctx, s.fc.Name, node.GetName())
		if err != nil {
			return nil, err
		}
		pods = append(pods, terminating(onNode)...)
	}
	r.pods.retain(s.fc.Name, keep)
	return pods, nil
}

func (r *Reconciler) releasePod(ctx context.Context, s *scope, pod client.Object) (outcome, error) {
	return forceDeletePod(ctx, r.Client, pod, s.dryRun)
}

// replicated is the target for one of the crdReplicator's kinds (ResourceSlice, NamespaceMap, Renew):
// only our own copies (liqo.io/replication=true) of the dead cluster, only when terminating, and only the
// crdreplicator.liqo.io/resource finalizer.
func (r *Reconciler) replicated(gvk schema.GroupVersionKind) target {
	return target{
		kind:  gvk.Kind,
		stage: stageFirst,
		list: func(ctx context.Context, s *scope) ([]client.Object, error) {
			objs, err := r.listMetadata(ctx, gvk, ownCopiesOf(s.clusterID))
			return terminating(objs), err
		},
		release: func(ctx context.Context, s *scope, obj client.Object) (outcome, error) {
			return removeFinalizer(ctx, r.Client, r.APIReader, obj, liqoapi.ReplicatorFinalizer, s.dryRun)
		},
	}
}

func ownCopiesOf(clusterID string) client.MatchingLabels {
	return client.MatchingLabels{liqoapi.RemoteClusterIDLabel: clusterID, liqoapi.ReplicationLabel: "true"}
}

// listMetadata lists objects of gvk from the metadata-only cache.
func (r *Reconciler) listMetadata(ctx context.Context, gvk schema.GroupVersionKind, opts ...client.ListOption) ([]client.Object, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := r.Client.List(ctx, list, opts...); err != nil {
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
