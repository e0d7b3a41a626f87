package liqojanitor

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// The unpeering (issue 24, design revision 4 "Done means the unpeering"): for a dead cluster the janitor
// follows the consumer's side of the peering to its end — the tenant namespace, its VirtualNodes and
// their Nodes, the identity and networking objects — and keeps one record of it on the ForeignCluster,
// UnpeeringAnnotation, which only its identity writes (gate rule 14). CleanupDone is the janitor's own
// part (what it may release is released); UnpeeringComplete is the operator's outcome (the consumer's
// side of the peering is gone: nothing is left that Liqo re-creates the ForeignCluster from, PeeringKinds).
// The gate refuses to delete a marked ForeignCluster whose record is not complete, or while such an object
// is left (Liqo would re-create it unmarked). AllowDeleteAnnotation (keys.go) is the operator's override.

// UnpeeringPhase is where an unpeering stands.
type UnpeeringPhase string

const (
	// UnpeeringInProgress means something of the consumer's side of the peering is still there.
	UnpeeringInProgress UnpeeringPhase = "InProgress"
	// UnpeeringComplete means the consumer's side of the peering is gone: no object of PeeringKinds
	// carries the cluster ID (its VirtualNodes, virtual Nodes, Tenant, Identities, networking
	// Configuration, Connection and gateways: what Liqo re-creates the ForeignCluster from) and no
	// VirtualNode names it in spec.clusterID. A tenant namespace left with none of them in it does not hold
	// it (a note says it is there).
	UnpeeringComplete UnpeeringPhase = "Complete"
)

// Unpeering is the janitor's record of the consumer side of a dead cluster's unpeering.
type Unpeering struct {
	// Phase is InProgress or Complete.
	Phase UnpeeringPhase `json:"phase"`
	// Since is when the record last changed phase (RFC 3339, UTC): when it was first written, or when the
	// unpeering completed.
	Since string `json:"since,omitempty"`
	// LiqoVersion is the Liqo version the janitor found installed ("" when it could not tell), and
	// LiqoVersionFrom where it read it (the controller-manager's image, or the CRDs).
	LiqoVersion     string `json:"liqoVersion,omitempty"`
	LiqoVersionFrom string `json:"liqoVersionFrom,omitempty"`
	// TenantNamespace is the consumer's tenant namespace of the cluster, while it exists.
	TenantNamespace string `json:"tenantNamespace,omitempty"`
	// Left are the objects of the peering still there, most blocking first, at most MaxUnpeeringLeft of
	// them; More counts the others.
	Left []LeftObject `json:"left,omitempty"`
	More int          `json:"more,omitempty"`
	// Notes say what the operator must know beyond the objects (e.g. a reflector Liqo leaks).
	Notes []string `json:"notes,omitempty"`
	// ClusterID is the dead cluster's ID, and PinnedVolumes how many PVCs of Liqo's virtual storage class
	// are pinned to it (PinnedVolume, below), the first MaxPinnedVolumes of them in Volumes. The janitor writes none
	// of them: releasing one abandons its data, the operator's decision.
	ClusterID     string         `json:"clusterID,omitempty"`
	PinnedVolumes int            `json:"pinnedVolumes,omitempty"`
	Volumes       []PinnedVolume `json:"volumes,omitempty"`
}

// UnpeeringCompleteWhat says, for a person, what a complete unpeering has none of.
const UnpeeringCompleteWhat = "nothing of the cluster left that Liqo re-creates the ForeignCluster from " +
	"(no VirtualNode, virtual Node, Tenant, Identity, networking Configuration, Connection or gateway labelled with its cluster ID)"

// MaxUnpeeringLeft caps how many objects the record names (an annotation is small).
const MaxUnpeeringLeft = 20

// LeftObject is one object of the peering still there, what holds it, and what to do.
type LeftObject struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// HeldBy is what keeps it: "finalizer <name>", "not being deleted", "Terminating: <the namespace
	// controller's condition>".
	HeldBy string `json:"heldBy"`
	// Releasable: liqo-janitor releases it (it is in the janitor's target table); otherwise it is
	// another controller's, or the operator's next step.
	Releasable bool `json:"releasable"`
	// Next is the next step, for a person at a terminal.
	Next string `json:"next,omitempty"`
}

// Complete reports whether the record says the consumer's side of the peering is gone.
func (u Unpeering) Complete() bool { return u.Phase == UnpeeringComplete }

// String is the annotation's value: the record as compact JSON.
func (u Unpeering) String() string {
	b, err := json.Marshal(u)
	if err != nil { // cannot happen: plain strings, ints and bools
		return fmt.Sprintf(`{"phase":%q}`, u.Phase)
	}
	return string(b)
}

// ParseUnpeering reads an UnpeeringAnnotation value; ok is false when there is none or it is not a record.
func ParseUnpeering(v string) (u Unpeering, ok bool) {
	if v == "" || json.Unmarshal([]byte(v), &u) != nil {
		return Unpeering{}, false
	}
	switch u.Phase {
	case UnpeeringInProgress, UnpeeringComplete:
		return u, true
	}
	return Unpeering{}, false
}

// UnpeeringOf reads the unpeering record in a ForeignCluster's annotations.
func UnpeeringOf(annotations map[string]string) (Unpeering, bool) {
	return ParseUnpeering(annotations[UnpeeringAnnotation])
}

// Summary is the record in one line for events and `status`: "unpeering complete: nothing left that …"
// or "unpeering in progress: 3 objects left: tenant namespace liqo-tenant-x (Terminating: …), …".
//
// With volumes pinned to the cluster, a second line says how many (PinnedVolumesLine).
func (u Unpeering) Summary() string {
	if line := PinnedVolumesLine(u.PinnedVolumes, u.ClusterID); line != "" {
		return u.summary() + "\n" + line
	}
	return u.summary()
}

func (u Unpeering) summary() string {
	if u.Complete() {
		return "unpeering complete: " + UnpeeringCompleteWhat
	}
	n := len(u.Left) + u.More
	parts := make([]string, 0, len(u.Left))
	for _, o := range u.Left {
		parts = append(parts, o.Line())
	}
	s := fmt.Sprintf("unpeering in progress: %d object%s left", n, plural(n))
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, "; ")
	}
	if u.More > 0 {
		s += fmt.Sprintf("; and %d more", u.More)
	}
	return s
}

// Line is one object in a line: "FirewallConfiguration liqo-tenant-x/y held by finalizer f (not released
// by liqo-janitor): <next step>", or "Namespace liqo-tenant-x: not being deleted (…): <next step>".
func (o LeftObject) Line() string {
	name := o.Name
	if o.Namespace != "" {
		name = o.Namespace + "/" + o.Name
	}
	who := "not released by liqo-janitor"
	if o.Releasable {
		who = "liqo-janitor releases it"
	}
	state := ": " + o.HeldBy
	if strings.HasPrefix(o.HeldBy, "finalizer ") {
		state = " held by " + o.HeldBy
	}
	s := fmt.Sprintf("%s %s%s (%s)", o.Kind, name, state, who)
	if o.Next != "" {
		s += ": " + o.Next
	}
	return s
}

// SinceTime is Since as a time (zero when absent or malformed).
func (u Unpeering) SinceTime() time.Time {
	t, _ := time.Parse(time.RFC3339, u.Since)
	return t
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Volumes pinned to a dead provider (issue 38, design revision 5 "Stateful workloads"): a PVC of Liqo's
// virtual storage class that a provider's virtual kubelet provisioned is bound to a local placeholder PV
// whose node affinity names that provider; once the provider is dead the PVC's workload cannot be
// scheduled anywhere (kube-scheduler: "node(s) didn't match PersistentVolume's node affinity", "node(s)
// had volume node affinity conflict" before kubernetes/kubernetes#129887), and nothing in Liqo releases
// it. The janitor reports them (PinnedVolume, in the unpeering record and the plan); it never writes a PVC
// or a PV. Liqo's virtual storage, as the janitor reads it, is in
// liqo.go.

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
