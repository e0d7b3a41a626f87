package view

import (
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// StatusReport is `status -o json|yaml`, kind StatusReport: the status of the marked ForeignClusters (of
// the one named, marked or not), as status prints it for a person. Every text that comes from the
// cluster is escaped as the tables escape it (output.Printable).
type StatusReport struct {
	metav1.TypeMeta `json:",inline"`
	// Time is when the plugin read it: Grace.Left counts from it.
	Time metav1.Time `json:"time"`
	// Janitor is where the plugin read liqo-janitor's brake and records (its namespace, and nowhere else),
	// and the look-alikes of the same names it ignored in other namespaces.
	Janitor *Janitor `json:"janitor"`
	// Brakes is the janitor-wide brake when it is set (janitor rule 14): the ConfigMap liqo-janitor-brake
	// in liqo-janitor's namespace, and the operator's reason; at most one. While it is set, liqo-janitor
	// releases nothing.
	Brakes []Brake `json:"brakes,omitempty"`
	// Clusters are the marked ForeignClusters, by name; empty when none is marked.
	Clusters []ClusterStatus `json:"clusters"`
}

// Brake is one janitor-wide brake that is set.
type Brake struct {
	Namespace string `json:"namespace"`
	Reason    string `json:"reason,omitempty"`
}

// DeepCopyObject makes StatusReport a runtime.Object, for cli-runtime's printers.
func (r *StatusReport) DeepCopyObject() runtime.Object { return output.DeepCopyJSON(r) }

// ClusterStatus is one ForeignCluster's status.
type ClusterStatus struct {
	// ForeignCluster is its name, ClusterID its spec.clusterID.
	ForeignCluster string `json:"foreignCluster"`
	ClusterID      string `json:"clusterID"`
	// Marked: it carries the mark (liqo-janitor.io/permanently-unreachable); Confirmed: with the cluster ID
	// typed as the gate takes it; Paused: liqo-janitor.io/paused stops the janitor for it.
	Marked    bool `json:"marked"`
	Confirmed bool `json:"confirmed"`
	Paused    bool `json:"paused"`
	// MarkedBy and MarkedAt are the gate's stamps: who set the mark, and when.
	MarkedBy string       `json:"markedBy,omitempty"`
	MarkedAt *metav1.Time `json:"markedAt,omitempty"`
	// Reason is the operator's, as given to mark --reason.
	Reason string `json:"reason,omitempty"`
	// Grace is the janitor's recorded grace window for the mark (marked clusters only).
	Grace *GraceWindow `json:"grace,omitempty"`
	// Cleanup is the janitor's summary (liqo-janitor.io/cleanup): its plan in the grace window ("grace:
	// would release …", without the countdown it wrote with it, stale when read), its progress, what it
	// waits for, then what it released.
	Cleanup string `json:"cleanup,omitempty"`
	// Unpeering is the janitor's record of the consumer side of the unpeering of a dead cluster
	// (liqo-janitor.io/unpeering): the Liqo version it found, what is left, what holds it, whether
	// liqo-janitor releases it, the next step; complete once nothing Liqo re-creates the ForeignCluster from is left.
	Unpeering *liqojanitor.Unpeering `json:"unpeering,omitempty"`
	// Returned is the janitor's record that the provider answered again after the mark (liqojanitor.RecordedReturn).
	Returned *Return `json:"returned,omitempty"`
	// Probe is where the janitor's return probe looks for the provider (a marked cluster whose return is not
	// recorded): the targets it kept for the mark, or where Liqo says the provider is, or none at all.
	Probe *Probe `json:"probe,omitempty"`
	// Evidence is what the verdict "unreachable" rests on for this cluster: Liqo's APIServerStatus and
	// NetworkConnectionStatus, the storm count now, and the count the mark acknowledged.
	Evidence *Evidence `json:"evidence,omitempty"`
	// ProviderFence is the provider's fence of this consumer as the janitor's renewal record says: the
	// contract, the last acknowledged renewal, whether the mark stopped them, the deadline before which the
	// gate refuses a mark (gate rule 31), the provider's own record; none: no provider-side fence.
	ProviderFence *ProviderFence `json:"providerFence,omitempty"`
	// Events are the janitor's last events about this ForeignCluster (by its UID), oldest first.
	Events []Event `json:"events,omitempty"`
}

// Return is a return of the provider the janitor recorded, and the operator's fence of it.
type Return struct {
	// At is when the janitor saw the provider answer, How what showed it.
	At  metav1.Time `json:"at"`
	How string      `json:"how"`
	// Fenced is the fence's record ("by <user>: <counts>"), empty until kubectl liqo-janitor fence ran.
	Fenced string `json:"fenced,omitempty"`
}

// Event is one of the janitor's events.
type Event struct {
	Time   metav1.Time `json:"time"`
	Type   string      `json:"type"`
	Reason string      `json:"reason"`
	Note   string      `json:"note"`
}

// clusterStatusOf is fc's status at now, with the janitor's events about it.
func clusterStatusOf(fc *liqov1beta1.ForeignCluster, events []eventsv1.Event, now time.Time) ClusterStatus {
	a := fc.Annotations
	cs := ClusterStatus{
		ForeignCluster: output.Printable(fc.Name),
		ClusterID:      output.Printable(string(fc.Spec.ClusterID)),
		Marked:         liqojanitor.IsMarked(a),
		Confirmed:      liqojanitor.Confirmed(fc),
		Paused:         liqojanitor.Paused(fc),
		MarkedBy:       output.Printable(a[liqojanitor.MarkedByAnnotation]),
		Reason:         output.Printable(a[liqojanitor.ReasonAnnotation]),
		Cleanup:        output.Printable(withoutCountdown(a[liqojanitor.CleanupAnnotation])),
	}
	if at, ok := liqojanitor.MarkedAt(fc); ok {
		cs.MarkedAt = &metav1.Time{Time: at.UTC()}
	}
	if cs.Marked {
		g := GraceOf(fc, now)
		g.Ignored = output.Printable(g.Ignored)
		cs.Grace = &g
	}
	if u, ok := liqojanitor.UnpeeringOf(a); ok {
		cs.Unpeering = printableUnpeering(u)
	}
	if r, ok := liqojanitor.RecordedReturn(fc, now); ok {
		cs.Returned = &Return{At: metav1.NewTime(r.At.UTC()), How: output.Printable(r.How), Fenced: output.Printable(r.Fenced)}
	}
	for _, ev := range events {
		cs.Events = append(cs.Events, Event{Time: metav1.NewTime(eventTime(ev).UTC()), Type: output.Printable(ev.Type),
			Reason: output.Printable(ev.Reason), Note: output.Printable(ev.Note)})
	}
	return cs
}

// printableUnpeering is the janitor's unpeering record with every text escaped as the tables escape it.
func printableUnpeering(u liqojanitor.Unpeering) *liqojanitor.Unpeering {
	out := u
	out.Phase = liqojanitor.UnpeeringPhase(output.Printable(string(u.Phase)))
	out.Since, out.LiqoVersion, out.LiqoVersionFrom = output.Printable(u.Since), output.Printable(u.LiqoVersion), output.Printable(u.LiqoVersionFrom)
	out.TenantNamespace = output.Printable(u.TenantNamespace)
	out.Left = make([]liqojanitor.LeftObject, 0, len(u.Left))
	for _, o := range u.Left {
		out.Left = append(out.Left, liqojanitor.LeftObject{Kind: output.Printable(o.Kind), Namespace: output.Printable(o.Namespace),
			Name: output.Printable(o.Name), HeldBy: output.Printable(o.HeldBy), Releasable: o.Releasable, Next: output.Printable(o.Next)})
	}
	out.Notes = make([]string, 0, len(u.Notes))
	for _, n := range u.Notes {
		out.Notes = append(out.Notes, output.Printable(n))
	}
	out.ClusterID, out.Volumes = output.Printable(u.ClusterID), printableVolumes(u.Volumes)
	return &out
}

// printableVolumes are pinned volumes with every text escaped as the tables escape it.
func printableVolumes(vols []liqojanitor.PinnedVolume) []liqojanitor.PinnedVolume {
	if vols == nil {
		return nil
	}
	out := make([]liqojanitor.PinnedVolume, 0, len(vols))
	for _, v := range vols {
		p := liqojanitor.PinnedVolume{Namespace: output.Printable(v.Namespace), Name: output.Printable(v.Name), UID: output.Printable(v.UID),
			PV: output.Printable(v.PV), ReclaimPolicy: output.Printable(v.ReclaimPolicy), StatefulSet: output.Printable(v.StatefulSet),
			RemoteNamespace: output.Printable(v.RemoteNamespace)}
		for _, pod := range v.Pods {
			p.Pods = append(p.Pods, output.Printable(pod))
		}
		out = append(out, p)
	}
	return out
}

// withoutCountdown is a cleanup annotation without a grace-window plan's countdown (the janitor writes the
// time left once per change of the plan: read later, it is stale; the grace period line shows the
// window): "grace: would release …".
func withoutCountdown(cleanup string) string {
	if plan, ok := liqojanitor.ParseGracePlan(cleanup); ok {
		return "grace: " + plan.Plan
	}
	return cleanup
}
