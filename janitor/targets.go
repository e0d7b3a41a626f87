package janitor

import (
	"context"
	"fmt"
	"slices"
	"sync"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/liqotech/liqo/pkg/consts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// scope is what one pass over a dead cluster knows.
type scope struct {
	// fc is the dead cluster's ForeignCluster, as read live from the API server.
	fc *liqov1beta1.ForeignCluster
	// clusterID is fc's spec.clusterID.
	clusterID string
	// dryRun reports instead of writing.
	dryRun bool
	// plan: the cluster is in its grace period, and the pass computes what it would release once that
	// ends, writing nothing (janitor rule 9).
	plan bool
	// drain holds the pods that may be force-deleted though not terminating: those Liqo's own drain selects
	// on the Node of a VirtualNode of the cluster that is itself being deleted. Filled by listPods before
	// any release, read-only afterwards.
	drain map[types.UID]bool
	// undrained holds, for the other pods that are not terminating on such a Node, why the janitor leaves
	// them alone (one of the fixed notDrainedBy reasons). Filled by listPods like drain.
	undrained map[types.UID]string
	// listed is where each pod listPods returned was, and at which resourceVersion (leftPods).
	listed map[types.UID]podAt
	// recheck is the pass's live re-check (the reconciler's stillDead: errStopped once the cluster is no
	// longer dead; it refreshes the dead set through setDead), set by release for the targets that must
	// re-check before a retried write (releaseOffloading).
	recheck func(context.Context) error

	mu sync.Mutex
	// dead says, for every cluster ID with a ForeignCluster, whether it is dead (others count as live), as
	// of the last live re-check (setDead); read it through deadSet only.
	dead map[string]bool
	// waits says, for each NamespaceOffloading that waits for Liqo, what it waits for.
	waits map[types.UID]offloadingWait
}

// podAt is a listed pod's node and resourceVersion.
type podAt struct {
	node, resourceVersion string
}

// leftPods is what the pass leaves on each node for the pod watches (podWatcher.resume): the pods it
// listed that are still there by its own account (blocked, waiting, failed), as it listed them.
func (s *scope) leftPods(t *tally) leftPods {
	t.mu.Lock()
	defer t.mu.Unlock()
	left := leftPods{}
	for _, uid := range t.byKind[podKind].outstanding {
		at, ok := s.listed[uid]
		if !ok {
			continue
		}
		if left[at.node] == nil {
			left[at.node] = map[types.UID]string{}
		}
		left[at.node][uid] = at.resourceVersion
	}
	return left
}

// offloadingWait is what one NamespaceOffloading waits for.
type offloadingWait struct {
	namespace, why string
}

// newScope starts a pass over fc, given which cluster IDs are dead.
func newScope(fc *liqov1beta1.ForeignCluster, dead map[string]bool, dryRun bool) *scope {
	return &scope{fc: fc, clusterID: string(fc.Spec.ClusterID), dryRun: dryRun, dead: dead,
		drain: map[types.UID]bool{}, undrained: map[types.UID]string{}, listed: map[types.UID]podAt{}, waits: map[types.UID]offloadingWait{}}
}

// setDead replaces the dead set with one computed from a fresh live read of the ForeignClusters (janitor
// rule 1): the reconciler's live re-check calls it before every batch of writes, so every decision that
// depends on another cluster being dead (a NamespaceOffloading spanning several) is taken on the world as
// it was at the last re-check, not as it was when the pass began. Releases read it concurrently. It takes
// dead over: the caller must not change it afterwards.
func (s *scope) setDead(dead map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dead = dead
}

// deadSet returns the current dead set; the caller must not modify it (setDead replaces it, never
// changes it in place).
func (s *scope) deadSet() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dead
}

// reportOnly says whether the pass only reports what it would do: a dry run, or a plan.
func (s *scope) reportOnly() bool { return s.dryRun || s.plan }

// waitFor records what a NamespaceOffloading waits for (releases run concurrently).
func (s *scope) waitFor(obj client.Object, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waits[obj.GetUID()] = offloadingWait{namespace: obj.GetNamespace(), why: why}
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
	namespaceGVK     = corev1.SchemeGroupVersion.WithKind("Namespace")
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

// allKinds are the kinds of every target, opt-in ones included (the kind label of the metrics).
var allKinds = []string{podKind, resourceSliceGVK.Kind, namespaceMapGVK.Kind, renewGVK.Kind, offloadingKind, secretGVK.Kind}

// offloadingKind is the target kind of NamespaceOffloadings.
const offloadingKind = "NamespaceOffloading"

// targets returns the table.
func (r *releaser) targets() []target {
	ts := []target{
		{kind: podKind, stage: stageFirst, list: r.listPods, release: r.releasePod},
		r.replicated(resourceSliceGVK),
		r.replicated(namespaceMapGVK),
		r.replicated(renewGVK),
		{kind: offloadingKind, stage: stageOffloading, list: r.listOffloadings, release: r.releaseOffloading},
	}
	if r.options.ReleaseIdentitySecrets {
		ts = append(ts, target{kind: "Secret", stage: stageIdentity, list: r.listIdentitySecrets, release: r.releaseIdentitySecret})
	}
	return ts
}

// listPods (janitor rules 4 and 6) returns the pods the janitor may force-delete on the cluster's
// virtual nodes: the terminating ones, and on a virtual node whose VirtualNode is itself being deleted,
// exactly the pods Liqo's own drain selects, terminating or not — what Liqo ≥ v1.1's drain does for a dead
// cluster. That drain (pkg/liqo-controller-manager/offloading/virtualnode-controller/drain.go: drainNode,
// which in v1.1.0 and v1.2.0 calls forcePodsDeletion when foreigncluster.IsDead, and evicts in v1.0.3)
// deletes what getPodsForDeletion lists: the pods bound to the node (spec.nodeName) labelled
// liqo.io/shadowPod=true (consts.LocalPodLabelKey/LocalPodLabelValue, the same selector in v1.0.3, v1.1.0
// and v1.2.0), and since v1.2.0 not those owned by a DaemonSet or mirror pods (isDaemonSetPod,
// isMirrorPod); the janitor takes the narrowest of the three, v1.2.0's. Every other pod on that Node that
// is not terminating is returned too, to be left alone and counted as blocked with its reason
// (s.undrained, notDrainedBy): nobody but Liqo's drain decides to delete a running pod, and such pods go
// with the Node. On Liqo v1.0 that drain evicts instead, and a PodDisruptionBudget can refuse every
// eviction forever.
func (r *releaser) listPods(ctx context.Context, s *scope) ([]client.Object, error) {
	nodes, err := r.virtualNodesOf(ctx, s.clusterID)
	if err != nil {
		return nil, err
	}
	keep := map[string]bool{}
	var pods []client.Object
	for node, draining := range nodes {
		keep[node] = true
		onNode, err := r.pods.pods(ctx, s.fc.Name, node, draining)
		if err != nil {
			return nil, err
		}
		for _, pod := range onNode {
			if draining || !pod.GetDeletionTimestamp().IsZero() {
				s.listed[pod.GetUID()] = podAt{node: node, resourceVersion: pod.GetResourceVersion()}
			}
			switch why := notDrainedBy(pod); {
			case !pod.GetDeletionTimestamp().IsZero():
				pods = append(pods, pod)
			case !draining: // not terminating, and its VirtualNode is not being deleted: never written
			case why != "":
				s.undrained[pod.GetUID()] = why
				pods = append(pods, pod)
			default:
				s.drain[pod.GetUID()] = true
				pods = append(pods, pod)
			}
		}
	}
	r.pods.retain(s.fc.Name, keep)
	return pods, nil
}

// Why a pod that is not terminating on the Node of a VirtualNode being deleted is left alone: Liqo's
// drain does not select it (listPods). A small fixed set: the reason is logged with the pod.
const (
	notShadowPod = "not labelled " + liqojanitor.ShadowPodLabel + "=" + consts.LocalPodLabelValue +
		": not an offloaded pod, Liqo's drain does not delete it"
	daemonSetPod = "owned by a DaemonSet: Liqo's drain does not delete it, it goes with the Node"
	mirrorPod    = "a mirror pod: Liqo's drain does not delete it, it goes with the Node"
)

// notDrainedBy says why Liqo's drain does not select pod (getPodsForDeletion, isDaemonSetPod, isMirrorPod
// in drain.go, Liqo v1.2.0), or "" when it does.
func notDrainedBy(pod client.Object) string {
	switch {
	case pod.GetLabels()[liqojanitor.ShadowPodLabel] != consts.LocalPodLabelValue:
		return notShadowPod
	case slices.ContainsFunc(pod.GetOwnerReferences(), func(o metav1.OwnerReference) bool { return o.Kind == "DaemonSet" }):
		return daemonSetPod
	}
	if _, ok := pod.GetAnnotations()[corev1.MirrorPodAnnotationKey]; ok {
		return mirrorPod
	}
	return ""
}

// virtualNodesOf (janitor rule 3) returns the Nodes that belong to the cluster, and for each whether its
// VirtualNode is being deleted. A Node belongs to clusterID only when its labels say so (liqo.io/type=virtual-node,
// liqo.io/remote-cluster-id) and a VirtualNode of the same name has spec.clusterID clusterID — the pair
// Liqo's own GetNodeFromVirtualNode (pkg/utils/getters/k8sGetters.go) uses. The labels alone are not
// enough: Liqo merges the provider's ResourceSlice status.nodeLabels over them
// (pkg/liqo-controller-manager/offloading/forge/virtualnode.go MutateVirtualNode), so a provider can name
// any cluster there; spec.clusterID is the consumer's own. A VirtualNode of that name naming another
// cluster makes the Node nobody's.
func (r *releaser) virtualNodesOf(ctx context.Context, clusterID string) (map[string]bool, error) {
	nodes, err := listMetadata(ctx, r.client, nodeGVK, client.MatchingLabels{
		liqojanitor.NodeTypeLabel: liqojanitor.VirtualNodeType, liqojanitor.RemoteClusterIDLabel: clusterID,
	})
	if err != nil || len(nodes) == 0 {
		return nil, err
	}
	var vns offloadingv1beta1.VirtualNodeList
	if err := r.client.List(ctx, &vns); err != nil {
		return nil, fmt.Errorf("listing VirtualNodes: %w", err)
	}
	byName := map[string][]*offloadingv1beta1.VirtualNode{}
	for i := range vns.Items {
		byName[vns.Items[i].Name] = append(byName[vns.Items[i].Name], &vns.Items[i])
	}
	out := map[string]bool{}
	for _, node := range nodes {
		named := byName[node.GetName()]
		if len(named) == 0 || slices.ContainsFunc(named, func(vn *offloadingv1beta1.VirtualNode) bool {
			return string(vn.Spec.ClusterID) != clusterID
		}) {
			continue
		}
		draining := false
		for _, vn := range named {
			if vn.DeletionTimestamp.IsZero() || draining {
				continue
			}
			if draining, err = r.stillDeleting(ctx, vn); err != nil {
				return nil, err
			}
		}
		out[node.GetName()] = draining
	}
	return out, nil
}

// stillDeleting re-reads a VirtualNode live before pods that are not terminating are force-deleted on its
// account: it must still be the same object, of the same cluster, and being deleted.
func (r *releaser) stillDeleting(ctx context.Context, cached *offloadingv1beta1.VirtualNode) (bool, error) {
	vn := &offloadingv1beta1.VirtualNode{}
	if err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(cached), vn); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("re-reading VirtualNode %s: %w", client.ObjectKeyFromObject(cached), err)
	}
	return vn.UID == cached.UID && vn.Spec.ClusterID == cached.Spec.ClusterID && !vn.DeletionTimestamp.IsZero(), nil
}

// releasePod force-deletes a terminating pod or one Liqo's drain selects (listPods); a pod Liqo's drain
// does not select is left alone, blocked.
func (r *releaser) releasePod(ctx context.Context, s *scope, pod client.Object) (outcome, error) {
	if _, ok := s.undrained[pod.GetUID()]; ok {
		return blocked, nil
	}
	return forceDeletePod(ctx, r.client, pod, s.drain[pod.GetUID()], s.reportOnly())
}

// replicated is the target for one of the crdReplicator's kinds (ResourceSlice, NamespaceMap, Renew):
// only our own copies of the dead cluster (ownCopiesOf), only when terminating, and only the
// crdreplicator.liqo.io/resource finalizer.
func (r *releaser) replicated(gvk schema.GroupVersionKind) target {
	return target{
		kind:  gvk.Kind,
		stage: stageFirst,
		list: func(ctx context.Context, s *scope) ([]client.Object, error) {
			objs, err := listMetadata(ctx, r.client, gvk, ownCopiesOf(s.clusterID))
			return terminating(objs), err
		},
		release: func(ctx context.Context, s *scope, obj client.Object) (outcome, error) {
			return removeFinalizer(ctx, r.client, r.apiReader, obj, liqojanitor.ReplicatorFinalizer, s.reportOnly())
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
