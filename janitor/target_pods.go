package janitor

import (
	"context"
	"fmt"
	"slices"

	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor/internal/liqoversion"
	"github.com/liqo-janitor/liqo-janitor/janitor/internal/release"
)

// listPods (janitor rules 4 and 6) returns the pods the janitor may force-delete on the cluster's
// virtual nodes: the terminating ones, and on a virtual node whose VirtualNode is itself being deleted,
// exactly the pods Liqo's own drain selects, terminating or not — what Liqo ≥ v1.1's drain does for a dead
// cluster. That drain (pkg/liqo-controller-manager/offloading/virtualnode-controller/drain.go: drainNode,
// which in v1.1.0 and v1.2.0 calls forcePodsDeletion when foreigncluster.IsDead, and evicts in v1.0.3)
// deletes what getPodsForDeletion lists: the pods bound to the node (spec.nodeName) labelled
// liqo.io/shadowPod=true (consts.LocalPodLabelKey/LocalPodLabelValue, the same selector in v1.0.3, v1.1.0
// and v1.2.0), and since v1.2.0 not those owned by a DaemonSet or mirror pods (isDaemonSetPod,
// isMirrorPod). The janitor selects as the installed Liqo's own dead drain does (janitor rule 12): on
// v1.0.x and v1.1.x as v1.1.0's (v1.0.3's drain lists the same pods, but evicts and waits), on v1.2 and on
// a Liqo whose version it cannot tell as v1.2.0's, the narrowest. Every other pod on that Node that
// is not terminating is returned too, to be left alone and counted as blocked with its reason
// (s.undrained, notDrainedBy): nobody but Liqo's drain decides to delete a running pod, and such pods go
// with the Node. On Liqo v1.0 that drain evicts instead, and a PodDisruptionBudget can refuse every
// eviction forever.
func (src *sources) listPods(ctx context.Context, s *scope) ([]client.Object, error) {
	nodes, err := src.virtualNodesOf(ctx, s.clusterID)
	if err != nil {
		return nil, err
	}
	keep := map[string]bool{}
	var pods []client.Object
	for node, draining := range nodes {
		keep[node] = true
		onNode, err := src.pods.Pods(ctx, s.fc.Name, node, draining)
		if err != nil {
			return nil, err
		}
		for _, pod := range onNode {
			switch why := notDrainedBy(pod, s.liqo); {
			case !pod.GetDeletionTimestamp().IsZero():
				s.listedPod(pod, node, false, "")
				pods = append(pods, pod)
			case !draining: // not terminating, and its VirtualNode is not being deleted: never written
			case why != "":
				s.listedPod(pod, node, false, why)
				pods = append(pods, pod)
			default:
				s.listedPod(pod, node, true, "")
				pods = append(pods, pod)
			}
		}
	}
	src.pods.WatchOnly(s.fc.Name, keep)
	return pods, nil
}

// Why a pod that is not terminating on the Node of a VirtualNode being deleted is left alone: Liqo's
// drain does not select it (listPods). A small fixed set: the reason is logged with the pod.
const (
	notShadowPod = "not labelled " + liqojanitor.ShadowPodLabel + "=" + liqojanitor.ShadowPodLabelValue +
		": not an offloaded pod, Liqo's drain does not delete it"
	daemonSetPod = "owned by a DaemonSet: Liqo's drain does not delete it, it goes with the Node"
	mirrorPod    = "a mirror pod: Liqo's drain does not delete it, it goes with the Node"
)

// notDrainedBy says why the drain of Liqo v does not select pod (getPodsForDeletion in drain.go; since
// v1.2.0 also isDaemonSetPod and isMirrorPod), or "" when it does.
func notDrainedBy(pod client.Object, v liqoversion.Version) string {
	switch {
	case pod.GetLabels()[liqojanitor.ShadowPodLabel] != liqojanitor.ShadowPodLabelValue:
		return notShadowPod
	case v.Older(2):
		return ""
	case slices.ContainsFunc(pod.GetOwnerReferences(), func(o metav1.OwnerReference) bool { return o.Kind == "DaemonSet" }):
		return daemonSetPod
	}
	if _, ok := pod.GetAnnotations()[corev1.MirrorPodAnnotationKey]; ok {
		return mirrorPod
	}
	return ""
}

// virtualNodesOf (janitor rule 3) returns the Nodes that belong to the cluster, and for each whether its
// VirtualNode is being deleted. A Node belongs to clusterID only when its labels say so
// (liqo.io/type=virtual-node, liqo.io/remote-cluster-id) and a VirtualNode of the same name has
// spec.clusterID clusterID — the pair Liqo's own GetNodeFromVirtualNode (pkg/utils/getters/k8sGetters.go)
// uses. The labels alone are not enough: Liqo merges the provider's ResourceSlice status.nodeLabels over them
// (pkg/liqo-controller-manager/offloading/forge/virtualnode.go MutateVirtualNode), so a provider can name any
// cluster there; spec.clusterID is the consumer's own. A VirtualNode of that name naming another cluster
// makes the Node nobody's.
func (src *sources) virtualNodesOf(ctx context.Context, clusterID string) (map[string]bool, error) {
	nodes, err := listMetadata(ctx, src.client, nodeGVK, client.MatchingLabels{
		liqojanitor.NodeTypeLabel: liqojanitor.VirtualNodeType, liqojanitor.RemoteClusterIDLabel: clusterID,
	})
	if err != nil || len(nodes) == 0 {
		return nil, err
	}
	var vns offloadingv1beta1.VirtualNodeList
	if err := src.client.List(ctx, &vns); err != nil {
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
			if draining, err = src.stillDeleting(ctx, vn); err != nil {
				return nil, err
			}
		}
		out[node.GetName()] = draining
	}
	return out, nil
}

// stillDeleting re-reads a VirtualNode live before pods that are not terminating are force-deleted on its
// account: it must still be the same object, of the same cluster, and being deleted.
func (src *sources) stillDeleting(ctx context.Context, cached *offloadingv1beta1.VirtualNode) (bool, error) {
	vn := &offloadingv1beta1.VirtualNode{}
	if err := src.apiReader.Get(ctx, client.ObjectKeyFromObject(cached), vn); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("re-reading VirtualNode %s: %w", client.ObjectKeyFromObject(cached), err)
	}
	return vn.UID == cached.UID && vn.Spec.ClusterID == cached.Spec.ClusterID && !vn.DeletionTimestamp.IsZero(), nil
}

// releasePod force-deletes a terminating pod or one Liqo's drain selects (listPods); a pod Liqo's drain
// does not select is left alone, blocked.
func (src *sources) releasePod(ctx context.Context, s *scope, pod client.Object) (release.Outcome, error) {
	if _, ok := s.undrained[pod.GetUID()]; ok {
		return release.Blocked, nil
	}
	return release.ForceDeletePod(ctx, src.client, pod, s.drain[pod.GetUID()], s.reportOnly())
}
