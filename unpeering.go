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
// is left (Liqo would re-create it unmarked).
const (
	// UnpeeringAnnotation is the janitor's record of the unpeering of a dead cluster: an Unpeering as JSON.
	UnpeeringAnnotation = AnnotationPrefix + "unpeering"

	// AllowDeleteAnnotation is the operator's break-glass override of the gate's deletion rule: a marked
	// ForeignCluster whose unpeering still runs may be deleted when it carries this key equal to its
	// spec.clusterID and the requester holds the break-glass verb.
	AllowDeleteAnnotation = AnnotationPrefix + "allow-delete-while-unpeering"
)

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
	// are pinned to it (volumes.go), the first MaxPinnedVolumes of them in Volumes. The janitor writes none
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
