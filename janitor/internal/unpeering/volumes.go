package unpeering

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// Volumes pinned to a dead cluster (issue 38): reported with the unpeering and in the plan, never
// written. A PVC is cluster X's when all of these hold:
//   - its StorageClass's provisioner is liqo.io/storage (Liqo's virtual storage class);
//   - its PV is the placeholder a virtual kubelet of X made for it (liqojanitor.PlaceholderPath and the
//     constants beside it): named pvc-<the PVC's UID>, hostPath /tmp/liqo-placeholder, annotated
//     provisioned-by liqo.io/storage, and its node affinity is exactly liqo.io/remote-cluster-id In [X];
//   - its volume.kubernetes.io/selected-node names a Node that is X's by the pod rule's tie (janitor rule
//     3, janitor/target_pods.go virtualNodesOf): a VirtualNode of that name with spec.clusterID X, and none of that name naming
//     another cluster — or a VirtualNode name the janitor kept at its first sight of the mark
//     (KeptRecord.VirtualNodes), since the unpeering deletes them. The PV's affinity alone is not enough:
//     the virtual kubelet reads X from the selected Node's labels, which a provider can write.
// Reading only, live: the janitor writes no PVC and no PV (janitor/internal/release holds every write).
// The survey reports them with the unpeering (Survey), the plan lists them (janitor's PlanCluster) and
// the plugin's release-volumes acts on them (through janitor.PlanVolumes).

// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims;persistentvolumes,verbs=list
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=list
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=list

// PinnedVolumes lists, live through r, the PVCs pinned to clusterID, sorted by namespace and name. kept is
// what the janitor recorded at first sight of the mark: the cluster's VirtualNode names and remote namespaces.
func PinnedVolumes(ctx context.Context, r client.Reader, clusterID string, kept liqojanitor.KeptRecord) ([]liqojanitor.PinnedVolume, error) {
	liqoClasses, err := liqoStorageClasses(ctx, r)
	if err != nil || len(liqoClasses) == 0 {
		return nil, err
	}
	nodes, err := ClusterNodes(ctx, r, clusterID, kept)
	if err != nil {
		return nil, err
	}
	return pinnedOn(ctx, r, clusterID, liqoClasses, nodes, kept)
}

// ClusterNodes are the names of clusterID's virtual nodes by the pod rule's tie (janitor rule 3): its
// VirtualNodes now (liqojanitor.VirtualNodeNames), and those kept at first sight of the mark (kept), which
// the unpeering deletes.
func ClusterNodes(ctx context.Context, r client.Reader, clusterID string, kept liqojanitor.KeptRecord) (map[string]bool, error) {
	nodes, err := virtualNodeNames(ctx, r, clusterID)
	if err != nil {
		return nil, err
	}
	for _, n := range kept.VirtualNodes {
		nodes[n] = true
	}
	return nodes, nil
}

// pinnedOn is PinnedVolumes once Liqo's classes and the cluster's nodes are known.
func pinnedOn(ctx context.Context, r client.Reader, clusterID string, liqoClasses, nodes map[string]bool,
	kept liqojanitor.KeptRecord) ([]liqojanitor.PinnedVolume, error) {
	placeholders, err := placeholdersOf(ctx, r, clusterID)
	if err != nil || len(placeholders) == 0 {
		return nil, err
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := r.List(ctx, &pvcs); err != nil {
		return nil, fmt.Errorf("listing PersistentVolumeClaims: %w", err)
	}
	users := &volumeUsers{reader: r, nodes: nodes, pods: map[string][]corev1.Pod{}, sets: map[string][]appsv1.StatefulSet{}}
	var out []liqojanitor.PinnedVolume
	for i := range pvcs.Items {
		pvc := &pvcs.Items[i]
		pv := placeholders[pvc.Spec.VolumeName]
		if !pinnedClaim(pvc, pv, liqoClasses, nodes) {
			continue
		}
		v := liqojanitor.PinnedVolume{Namespace: pvc.Namespace, Name: pvc.Name, UID: string(pvc.UID), PV: pv.Name,
			ReclaimPolicy: string(pv.Spec.PersistentVolumeReclaimPolicy), RemoteNamespace: kept.RemoteNamespaces[pvc.Namespace]}
		if err := users.describe(ctx, pvc, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b liqojanitor.PinnedVolume) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}

// pinnedClaim reports whether pvc, bound to the placeholder pv of the cluster (nil when it is bound to none),
// is of one of Liqo's classes, is the claim pv was made for (pvc-<its UID>, and pv's claimRef when it names a
// UID) and was selected for one of the cluster's virtual nodes.
func pinnedClaim(pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume, liqoClasses, nodes map[string]bool) bool {
	if pv == nil || !liqoClasses[ptrString(pvc.Spec.StorageClassName)] || pv.Name != liqojanitor.PlaceholderPVPrefix+string(pvc.UID) ||
		!nodes[pvc.Annotations[liqojanitor.SelectedNodeAnnotation]] {
		return false
	}
	ref := pv.Spec.ClaimRef
	return ref == nil || ref.UID == "" || ref.UID == pvc.UID
}

// liqoStorageClasses are the names of the StorageClasses whose provisioner is Liqo's virtual storage.
func liqoStorageClasses(ctx context.Context, r client.Reader) (map[string]bool, error) {
	var classes storagev1.StorageClassList
	if err := r.List(ctx, &classes); err != nil {
		return nil, fmt.Errorf("listing StorageClasses: %w", err)
	}
	out := map[string]bool{}
	for _, c := range classes.Items {
		if c.Provisioner == liqojanitor.LiqoStorageProvisioner {
			out[c.Name] = true
		}
	}
	return out, nil
}

// placeholdersOf are the Liqo placeholder PVs pinned to clusterID, by name.
func placeholdersOf(ctx context.Context, r client.Reader, clusterID string) (map[string]*corev1.PersistentVolume, error) {
	var pvs corev1.PersistentVolumeList
	if err := r.List(ctx, &pvs); err != nil {
		return nil, fmt.Errorf("listing PersistentVolumes: %w", err)
	}
	out := map[string]*corev1.PersistentVolume{}
	for i := range pvs.Items {
		if pv := &pvs.Items[i]; placeholderOf(pv) == clusterID {
			out[pv.Name] = pv
		}
	}
	return out, nil
}

// virtualNodeNames are the names of clusterID's VirtualNodes, listed through r (liqojanitor.VirtualNodeNames).
func virtualNodeNames(ctx context.Context, r client.Reader, clusterID string) (map[string]bool, error) {
	var vns offloadingv1beta1.VirtualNodeList
	if err := r.List(ctx, &vns); err != nil {
		return nil, fmt.Errorf("listing VirtualNodes: %w", err)
	}
	return liqojanitor.VirtualNodeNames(vns.Items, clusterID), nil
}

// placeholderOf is the cluster ID a Liqo placeholder PV is pinned to (its shape, as the virtual kubelet
// makes it: see the top of this file), or "" when pv is not such a placeholder or names more than one
// cluster.
func placeholderOf(pv *corev1.PersistentVolume) string {
	if !strings.HasPrefix(pv.Name, liqojanitor.PlaceholderPVPrefix) ||
		pv.Annotations[liqojanitor.ProvisionedByAnnotation] != liqojanitor.LiqoStorageProvisioner ||
		pv.Spec.HostPath == nil || pv.Spec.HostPath.Path != liqojanitor.PlaceholderPath ||
		pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return ""
	}
	terms := pv.Spec.NodeAffinity.Required.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchFields) != 0 || len(terms[0].MatchExpressions) != 1 {
		return ""
	}
	e := terms[0].MatchExpressions[0]
	if e.Key != liqojanitor.RemoteClusterIDLabel || e.Operator != corev1.NodeSelectorOpIn || len(e.Values) != 1 {
		return ""
	}
	return e.Values[0]
}

// volumeUsers finds the pods using a PVC and the StatefulSet that owns it, listing each namespace once.
type volumeUsers struct {
	reader client.Reader
	nodes  map[string]bool
	pods   map[string][]corev1.Pod
	sets   map[string][]appsv1.StatefulSet
}

// describe fills in v's pods and StatefulSet.
func (u *volumeUsers) describe(ctx context.Context, pvc *corev1.PersistentVolumeClaim, v *liqojanitor.PinnedVolume) error {
	pods, ok := u.pods[pvc.Namespace]
	if !ok {
		var list corev1.PodList
		if err := u.reader.List(ctx, &list, client.InNamespace(pvc.Namespace)); err != nil {
			return fmt.Errorf("listing the pods of namespace %s: %w", pvc.Namespace, err)
		}
		pods, u.pods[pvc.Namespace] = list.Items, list.Items
	}
	for i := range pods {
		pod := &pods[i]
		if !slices.ContainsFunc(pod.Spec.Volumes, func(vol corev1.Volume) bool {
			return vol.PersistentVolumeClaim != nil && vol.PersistentVolumeClaim.ClaimName == pvc.Name
		}) {
			continue
		}
		v.Pods = append(v.Pods, fmt.Sprintf("%s (%s)", pod.Name, u.podState(pod)))
		if v.StatefulSet == "" {
			if owner := controllerOf(pod, "StatefulSet"); owner != "" {
				v.StatefulSet = owner
			}
		}
	}
	if v.StatefulSet != "" {
		return nil
	}
	sets, ok := u.sets[pvc.Namespace]
	if !ok {
		var list appsv1.StatefulSetList
		if err := u.reader.List(ctx, &list, client.InNamespace(pvc.Namespace)); err != nil {
			return fmt.Errorf("listing the StatefulSets of namespace %s: %w", pvc.Namespace, err)
		}
		sets, u.sets[pvc.Namespace] = list.Items, list.Items
	}
	v.StatefulSet = generatedBy(pvc.Name, sets)
	return nil
}

// podState is how a pod using a pinned volume stands: Terminating on one of the cluster's virtual nodes,
// Pending (bound to no node), or the node it is bound to.
func (u *volumeUsers) podState(pod *corev1.Pod) string {
	switch {
	case pod.Spec.NodeName == "":
		return liqojanitor.VolumePodPending
	case !pod.DeletionTimestamp.IsZero() && u.nodes[pod.Spec.NodeName]:
		return liqojanitor.VolumePodTerminating + " on " + pod.Spec.NodeName
	case !pod.DeletionTimestamp.IsZero():
		return liqojanitor.VolumePodTerminating + " on node " + pod.Spec.NodeName
	}
	return "on node " + pod.Spec.NodeName
}

// controllerOf is the name of obj's controller of that kind, if any.
func controllerOf(obj client.Object, kind string) string {
	for _, o := range obj.GetOwnerReferences() {
		if o.Kind == kind && o.Controller != nil && *o.Controller {
			return o.Name
		}
	}
	return ""
}

// generatedBy is the StatefulSet whose volumeClaimTemplates generate a PVC of that name
// (<template>-<statefulset>-<ordinal>, the StatefulSet controller's getPersistentVolumeClaimName), or "".
func generatedBy(name string, sets []appsv1.StatefulSet) string {
	for _, sts := range sets {
		for _, t := range sts.Spec.VolumeClaimTemplates {
			rest, ok := strings.CutPrefix(name, t.Name+"-"+sts.Name+"-")
			if !ok {
				continue
			}
			if n, err := strconv.Atoi(rest); err == nil && n >= 0 && strconv.Itoa(n) == rest {
				return sts.Name
			}
		}
	}
	return ""
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// PinnedVolumesOn lists, live through r, the PVCs pinned to clusterID (the rule above), whose virtual nodes
// are nodes (ClusterNodes) and whose first-sight record is kept (the janitor's, for the current mark).
// `kubectl liqo-janitor release-volumes` acts on this list.
func PinnedVolumesOn(ctx context.Context, r client.Reader, clusterID string, nodes map[string]bool, kept liqojanitor.KeptRecord) ([]liqojanitor.PinnedVolume, error) {
	liqoClasses, err := liqoStorageClasses(ctx, r)
	if err != nil || len(liqoClasses) == 0 {
		return nil, err
	}
	return pinnedOn(ctx, r, clusterID, liqoClasses, nodes, kept)
}
