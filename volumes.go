package liqojanitor

import (
	"fmt"
	"strings"
)

// Volumes pinned to a dead provider (issue 38, design revision 5 "Stateful workloads"): a PVC of Liqo's
// virtual storage class that a provider's virtual kubelet provisioned is bound to a local placeholder PV
// whose node affinity names that provider; once the provider is dead the PVC's workload cannot be
// scheduled anywhere ("volume node affinity conflict"), and nothing in Liqo releases it. The janitor
// reports them (PinnedVolume, in the unpeering record and the plan); it never writes a PVC or a PV.

// Liqo's virtual storage: the provisioner name of its StorageClass (deployments/liqo/templates/
// liqo-storage-class.yaml, v1.0.3 to v1.2.0), and the shape of the placeholder PV a virtual kubelet creates
// for a claim bound on its node (pkg/virtualKubelet/reflection/storage/controller.go provisionClaimOperation:
// name "pvc-" + the claim's UID, annotation annDynamicallyProvisioned pv.kubernetes.io/provisioned-by set to
// the class's provisioner; pkg/liqo-controller-manager/offloading/storageprovisioner/remoteprovisioner.go
// ProvisionRemotePVC: hostPath /tmp/liqo-placeholder, nodeAffinity liqo.io/remote-cluster-id In
// [the cluster ID read from the selected Node's labels]; the same in v1.0.3, v1.1.0 and v1.2.0).
const (
	LiqoStorageProvisioner  = "liqo.io/storage"
	PlaceholderPath         = "/tmp/liqo-placeholder"
	ProvisionedByAnnotation = "pv.kubernetes.io/provisioned-by"
	PlaceholderPVPrefix     = "pvc-"
	// SelectedNodeAnnotation is where the scheduler records the node a WaitForFirstConsumer claim is
	// provisioned for (k8s.io/component-helpers storage/volume AnnSelectedNode); the virtual kubelet
	// provisions only the claims whose selected node is its own.
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
}

// Line is the volume in a line: "PVC ns/data-web-0 (uid …) on PV pvc-… (Delete), StatefulSet web, pods: web-0 (Pending)".
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
	return s + ", pods: " + pods
}

// PinnedVolumesLine says, for a person, how many volumes are pinned to clusterID: "3 volumes pinned to X:
// their workloads cannot run anywhere until released" ("" when none).
func PinnedVolumesLine(n int, clusterID string) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d volume%s pinned to %s: their workloads cannot run anywhere until released", n, plural(n), clusterID)
}
