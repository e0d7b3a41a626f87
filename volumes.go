package liqojanitor

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	corev1 "k8s.io/api/core/v1"
)

// Volumes pinned to a dead provider (issue 38, design revision 5 "Stateful workloads"): a PVC of Liqo's
// virtual storage class that a provider's virtual kubelet provisioned is bound to a local placeholder PV
// whose node affinity names that provider; once the provider is dead the PVC's workload cannot be
// scheduled anywhere (kube-scheduler: "node(s) didn't match PersistentVolume's node affinity", "node(s)
// had volume node affinity conflict" before kubernetes/kubernetes#129887), and nothing in Liqo releases
// it. The janitor reports them (PinnedVolume, in the unpeering record and the plan); it never writes a PVC
// or a PV.

// Liqo's virtual storage: the provisioner name of its StorageClass (deployments/liqo/templates/
// liqo-storage-class.yaml, v1.0.3 to v1.2.0: no reclaimPolicy, so the API server's default, Delete), and the
// shape of the placeholder PV a virtual kubelet creates for a claim it provisions on its provider
// (pkg/virtualKubelet/reflection/storage/controller.go provisionClaimOperation: name "pvc-" + the claim's
// UID, claimRef the claim's with its UID, annotation annDynamicallyProvisioned pv.kubernetes.io/provisioned-by
// set to the class's provisioner, no finalizer; persistentvolumeclaim.go Handle then sets the claim's
// volumeName; pkg/liqo-controller-manager/offloading/storageprovisioner/remoteprovisioner.go
// ProvisionRemotePVC: hostPath /tmp/liqo-placeholder, nodeAffinity liqo.io/remote-cluster-id In [the cluster
// ID read from the selected Node's labels], reclaim policy the class's; the same in v1.0.3, v1.1.0 and
// v1.2.0). Deleting the claim releases the PV, and Liqo's controller manager deletes it when its storage is
// on (--enable-storage, the chart's default): the Delete of its provisioner (storageprovisioner/delete.go)
// finds no real claim for a placeholder and returns nil, so sig-storage-lib-external-provisioner deletes the
// PV object (test/harness TestLiqoDeletesThePlaceholderOfAReleasedClaim, with Liqo v1.2.0's binary).
// docs/volumes.md has the facts with their citations.
const (
	LiqoStorageProvisioner  = "liqo.io/storage"
	PlaceholderPath         = "/tmp/liqo-placeholder"
	ProvisionedByAnnotation = "pv.kubernetes.io/provisioned-by"
	PlaceholderPVPrefix     = "pvc-"
	// SelectedNodeAnnotation is where the scheduler records the node a WaitForFirstConsumer claim is
	// provisioned for (k8s.io/component-helpers storage/volume AnnSelectedNode); a virtual kubelet provisions
	// only the claims whose selected node is one of its provider's (the Node's liqo.io/remote-cluster-id
	// label, persistentvolumeclaim.go Handle).
	SelectedNodeAnnotation = "volume.kubernetes.io/selected-node"
)

// The states of a pod using a pinned volume.
const (
	// VolumePodTerminating: the pod is being deleted on one of the dead cluster's virtual nodes.
	VolumePodTerminating = "Terminating"
	// VolumePodPending: the pod is not bound to a node (it cannot be: the volume's affinity names the dead
	// cluster).
	VolumePodPending = "Pending"
)

// MaxPinnedVolumes caps how many pinned volumes a record names (an annotation is small); PinnedVolumes
// counts them all.
const MaxPinnedVolumes = 20

// PinnedVolume is one PVC of Liqo's virtual storage class pinned to a dead cluster.
type PinnedVolume struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	// PV is the placeholder PersistentVolume it is bound to, and ReclaimPolicy that PV's.
	PV            string `json:"pv"`
	ReclaimPolicy string `json:"reclaimPolicy,omitempty"`
	// Pods are the pods that use it, each "name (state)": Terminating on the dead cluster's node, Pending,
	// or the node it is bound to; none when empty.
	Pods []string `json:"pods,omitempty"`
	// StatefulSet is the StatefulSet whose volumeClaimTemplates generate it ("" when none does).
	StatefulSet string `json:"statefulSet,omitempty"`
	// RemoteNamespace is the namespace on the dead cluster holding its data (a PVC of the same name), as
	// the janitor recorded it at first sight of the mark ("" when unknown; DataOn).
	RemoteNamespace string `json:"remoteNamespace,omitempty"`
}

// Line is the volume in a line: "PVC ns/data-web-0 (uid …) on PV pvc-… (Delete), StatefulSet web, pods:
// web-0 (Pending), data there: remote-ns/data-web-0" (its data on the dead cluster, DataOn).
func (v PinnedVolume) Line() string {
	s := fmt.Sprintf("PVC %s/%s (uid %s) on PV %s", v.Namespace, v.Name, v.UID, v.PV)
	if v.ReclaimPolicy != "" {
		s += " (" + v.ReclaimPolicy + ")"
	}
	if v.StatefulSet != "" {
		s += ", StatefulSet " + v.StatefulSet
	}
	pods := "none"
	if len(v.Pods) > 0 {
		pods = strings.Join(v.Pods, ", ")
	}
	data := "remote namespace unknown"
	if v.RemoteNamespace != "" {
		data = v.RemoteNamespace + "/" + v.Name
	}
	return s + ", pods: " + pods + ", data there: " + data
}

// PinnedVolumesLine says, for a person, how many volumes are pinned to clusterID: "3 volumes pinned to X:
// their workloads cannot run anywhere until released" ("" when none).
func PinnedVolumesLine(n int, clusterID string) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d volume%s pinned to %s: their workloads cannot run anywhere until released", n, plural(n), clusterID)
}

// Where a pinned volume's data is: the virtual kubelet reflects a PVC into the remote namespace its
// namespace is offloaded to, under the same name (storageprovisioner/remoteprovisioner.go
// remotePersistentVolumeClaim, applied by ProvisionRemotePVC, v1.0.3 to v1.2.0);
// the remote namespace is the NamespaceMap's status.currentMapping[local namespace].remoteNamespace (or the
// NamespaceOffloading's status.remoteNamespaceName), which the janitor records at its first sight of the
// mark (KeptRecord.RemoteNamespaces) since the unpeering deletes both.

// DataOn says where v's data is on cluster clusterID: "on X in <remote namespace>/<name>", or "on X (remote
// namespace unknown)" when the janitor did not see the mapping before the unpeering removed it.
func (v PinnedVolume) DataOn(clusterID string) string {
	if v.RemoteNamespace == "" {
		return "on " + clusterID + " (remote namespace unknown)"
	}
	return "on " + clusterID + " in " + v.RemoteNamespace + "/" + v.Name
}

// Released volumes (gate rule 32): `kubectl liqo-janitor release-volumes` deletes a pinned PVC only with the
// operator's typed data-loss confirmation, and records on the ForeignCluster which remote PVCs' data it
// abandoned, in VolumesReleasedAnnotation. Only the mutating webhook writes its time and user; the gate
// refuses it on an unmarked cluster, without the break-glass verb, or when it forgets a volume it listed;
// unmarking drops it with a warning. The janitor keeps a copy by cluster ID in ReleasedVolumesConfigMap in
// its namespace (the ForeignCluster may be deleted), from which the gate warns when the cluster is peered
// again: the new virtual kubelet for that provider deletes each remote PVC it reflected (labels
// offloading.liqo.io/origin and destination) that has no local claim of its name, once its namespace is
// offloaded there again (pkg/virtualKubelet/reflection/storage/persistentvolumeclaim.go Handle, v1.0.3 to
// v1.2.0).
const (
	VolumesReleasedAnnotation = AnnotationPrefix + "volumes-released"
	ReleasedVolumesConfigMap  = "liqo-janitor-released-volumes"
)

// ReleasedVolume is one PVC released by the operator: the local claim (namespace/name, UID) and the remote
// claim on the provider holding its data (namespace/name; "" when unknown).
type ReleasedVolume struct {
	PVC    string `json:"pvc"`
	UID    string `json:"uid"`
	Remote string `json:"remote,omitempty"`
}

// VolumesReleased is the record in VolumesReleasedAnnotation (JSON): the volumes released under the current
// mark, the last release's time (RFC 3339, UTC) and user as the mutating webhook stamped them.
type VolumesReleased struct {
	At      string           `json:"at"`
	By      string           `json:"by"`
	Volumes []ReleasedVolume `json:"volumes"`
}

// ParseVolumesReleased reads a VolumesReleasedAnnotation value; ok only for a record naming a volume.
func ParseVolumesReleased(v string) (VolumesReleased, bool) {
	var r VolumesReleased
	if json.Unmarshal([]byte(v), &r) != nil || len(r.Volumes) == 0 {
		return VolumesReleased{}, false
	}
	return r, true
}

// String is the record as the annotation holds it.
func (r VolumesReleased) String() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// Remote are the remote PVCs whose data was released, as "namespace/name" (the local claim's when the
// remote one is unknown).
func (r VolumesReleased) Remote() []string {
	out := make([]string, 0, len(r.Volumes))
	for _, v := range r.Volumes {
		out = append(out, cmp.Or(v.Remote, v.PVC+" (remote namespace unknown)"))
	}
	return out
}

// RepeerWarning is the gate's warning on unmarking, or peering again, a cluster with released volumes.
func (r VolumesReleased) RepeerWarning(clusterID string) string {
	n := len(r.Volumes)
	return fmt.Sprintf("re-peering lets %s's virtual kubelet delete %d remote PVC%s whose data you released (%s)",
		clusterID, n, plural(n), strings.Join(r.Remote(), ", "))
}

// StampedAt is the record's time, ok when it carries a readable time (RFC 3339) and a user: the form the
// mutating webhook writes (gate rule 32).
func (r VolumesReleased) StampedAt() (time.Time, bool) {
	at, err := time.Parse(time.RFC3339, r.At)
	return at, err == nil && r.By != ""
}

// Dropped are the volumes of old that r no longer lists, by UID: what a change of the record would forget
// (gate rule 32 refuses it).
func (r VolumesReleased) Dropped(old VolumesReleased) []ReleasedVolume {
	kept := make(map[string]bool, len(r.Volumes))
	for _, v := range r.Volumes {
		kept[v.UID] = true
	}
	var out []ReleasedVolume
	for _, v := range old.Volumes {
		if !kept[v.UID] {
			out = append(out, v)
		}
	}
	return out
}

// Merge is r with every volume of in it lacks (by UID) appended, never dropping one, and in's time and user
// when it added any; added says whether it did.
func (r VolumesReleased) Merge(in VolumesReleased) (merged VolumesReleased, added bool) {
	merged = VolumesReleased{At: r.At, By: r.By, Volumes: slices.Clone(r.Volumes)}
	for _, v := range in.Volumes {
		if !slices.ContainsFunc(merged.Volumes, func(m ReleasedVolume) bool { return m.UID == v.UID }) {
			merged.Volumes, added = append(merged.Volumes, v), true
		}
	}
	if added {
		merged.At, merged.By = in.At, in.By
	}
	return merged, added
}

// The janitor's copy of the records (gate rule 32, janitor rule 23): ConfigMap ReleasedVolumesConfigMap in
// its namespace, one key per cluster ID, each a VolumesReleased as JSON listing every volume released under
// any mark of that cluster (the janitor merges and never deletes an entry). The janitor writes it; the gate
// reads it to warn when the cluster is peered again — in the janitor's namespace only.

// ReleasedVolumesOf is the record cm keeps for clusterID, if one parses.
func ReleasedVolumesOf(cm *corev1.ConfigMap, clusterID string) (VolumesReleased, bool) {
	return ParseVolumesReleased(cm.Data[clusterID])
}

// ReleasedVolumesRecords reads every record of the ConfigMap, by cluster ID; a value that does not parse is
// left out.
func ReleasedVolumesRecords(cm *corev1.ConfigMap) map[string]VolumesReleased {
	out := map[string]VolumesReleased{}
	for id, value := range cm.Data {
		if r, ok := ParseVolumesReleased(value); ok {
			out[id] = r
		}
	}
	return out
}

// VirtualNodeNames are the names of clusterID's VirtualNodes among vns (spec.clusterID, the consumer's own
// field), without a name another cluster's VirtualNode also carries (janitor rule 3's tie of a Node to a
// cluster makes that Node nobody's): the nodes a volume pinned to the cluster may have been selected for.
// The janitor and `release-volumes` read them alike.
func VirtualNodeNames(vns []offloadingv1beta1.VirtualNode, clusterID string) map[string]bool {
	out, other := map[string]bool{}, map[string]bool{}
	for _, vn := range vns {
		if string(vn.Spec.ClusterID) == clusterID {
			out[vn.Name] = true
		} else {
			other[vn.Name] = true
		}
	}
	for name := range other {
		delete(out, name)
	}
	return out
}
