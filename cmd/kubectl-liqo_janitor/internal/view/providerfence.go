package view

import (
	"fmt"
	"io"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// The provider fence as `plan`, `status` and `mark` show it (issue 37): the janitor's record of its
// renewals of the provider's fence Lease (liqojanitor.FenceRenewal, in ConfigMap
// liqojanitor.FenceRenewalsConfigMap of its namespace), the contract the provider published, the deadline
// by which the provider has surely fenced this consumer — before which the gate refuses the mark (gate rule
// 31) — and what the provider recorded of its fence.

// ProviderFence is what the plugin knows of a provider's fence of this consumer.
type ProviderFence struct {
	// None: the janitor keeps no renewal record for the provider: no provider-side fence, its copies of
	// this consumer's workloads may still run there after the mark.
	None bool `json:"none,omitempty"`
	// Unread says why the janitor's renewal record could not be read: by the plugin (its ConfigMap), or at all
	// (the record is there but unreadable: the gate then refuses the mark).
	Unread string `json:"unread,omitempty"`
	// Contract is the provider's published contract as the janitor last read it.
	Contract *liqojanitor.FenceContract `json:"contract,omitempty"`
	// LastAck is the arrival of the last acknowledged renewal; LastLanded the latest moment a renewal may
	// have reached the provider (both the janitor's clock).
	LastAck    *metav1.Time `json:"lastAck,omitempty"`
	LastLanded *metav1.Time `json:"lastLanded,omitempty"`
	// StoppedForMark is the marked-at of the mark that stopped the renewals; "" while they go on.
	StoppedForMark string `json:"stoppedForMark,omitempty"`
	// Deadline is when the provider has surely fenced this consumer (LastLanded plus the contract's
	// SafeAfter); nil when nothing is to be waited for.
	Deadline *metav1.Time `json:"deadline,omitempty"`
	// ProviderFenced says what the provider's own record of its fence says, once it fenced this consumer.
	ProviderFenced string `json:"providerFenced,omitempty"`
}

// ProviderFenceOf is fc's provider's fence as the janitor's renewal record in v says (v.renewals; when
// v.Unread is set it may be missing because it could not be read).
func ProviderFenceOf(v *Janitor, fc *liqov1beta1.ForeignCluster) *ProviderFence {
	r, found, err := liqojanitor.ReadFenceRenewal(v.renewals, string(fc.Spec.ClusterID))
	switch {
	case err != nil:
		return &ProviderFence{Unread: output.Printable(err.Error()) + "; the gate refuses a mark until it can read it (gate rule 31)"}
	case !found && v.renewalsUnread != "":
		return &ProviderFence{Unread: v.renewalsUnread}
	case !found:
		return &ProviderFence{None: true}
	}
	s := &ProviderFence{StoppedForMark: output.Printable(r.StoppedForMark)}
	if c, err := liqojanitor.ParseFenceContract(r.Contract); err == nil {
		c.ProviderClusterID, c.Version = output.Printable(c.ProviderClusterID), output.Printable(c.Version)
		s.Contract = &c
	}
	if r.LastAck != nil {
		s.LastAck = &metav1.Time{Time: r.LastAck.UTC()}
	}
	if r.LastLanded != nil {
		s.LastLanded = &metav1.Time{Time: r.LastLanded.UTC()}
	}
	if d, _, ok := r.Deadline(); ok {
		s.Deadline = &metav1.Time{Time: d.UTC()}
	}
	if r.ProviderFenced != "" {
		if f, err := liqojanitor.ParseProviderFence(r.ProviderFenced); err == nil {
			s.ProviderFenced = output.Printable(f.Describe())
		} else {
			s.ProviderFenced = output.Printable("unreadable: " + err.Error())
		}
	}
	return s
}

// pending reports whether the deadline is still ahead at now: the gate refuses a mark until it.
func (s *ProviderFence) pending(now time.Time) bool {
	return s != nil && s.Deadline != nil && s.Deadline.After(now)
}

// lines says it for a person, at now.
func (s *ProviderFence) lines(now time.Time) []string {
	switch {
	case s == nil:
		return nil
	case s.Unread != "":
		return []string{"provider fence: unknown: " + s.Unread}
	case s.None:
		return []string{"provider fence: none (no renewal record): no provider-side fence: its copies may still run"}
	}
	var out []string
	if s.Contract != nil {
		out = append(out, "provider fence: contract "+s.Contract.Summary())
	} else {
		out = append(out, "provider fence: no readable contract recorded")
	}
	switch {
	case s.LastAck != nil:
		out = append(out, fmt.Sprintf("  last acknowledged renewal at %s (%s ago)", s.LastAck.UTC().Format(time.RFC3339),
			max(now.Sub(s.LastAck.Time), 0).Round(time.Second))) // renewed after this command read its clock: just now
	default:
		out = append(out, "  no acknowledged renewal yet")
	}
	if s.StoppedForMark != "" {
		out = append(out, "  renewals stopped for the mark of "+s.StoppedForMark)
	} else {
		out = append(out, "  renewals not stopped (no mark seen)")
	}
	switch {
	case s.Deadline == nil:
		out = append(out, "  no renewal may have landed: the provider's agent never armed for this consumer, nothing to wait for")
	case s.Deadline.After(now):
		out = append(out, fmt.Sprintf("  the provider's fence completes by %s (in %s)", s.Deadline.UTC().Format(time.RFC3339),
			s.Deadline.Sub(now).Round(time.Second)))
	default:
		out = append(out, fmt.Sprintf("  the provider's fence completed: its deadline passed at %s (%s ago)", s.Deadline.UTC().Format(time.RFC3339),
			now.Sub(s.Deadline.Time).Round(time.Second)))
	}
	if s.ProviderFenced != "" {
		out = append(out, "  "+s.ProviderFenced)
	}
	return out
}

// PrintProviderFence prints s's lines, each after indent; for a cluster not marked yet, what the gate does
// with a mark before the deadline.
func PrintProviderFence(out io.Writer, indent string, s *ProviderFence, marked bool, now time.Time) {
	for _, l := range s.lines(now) {
		fmt.Fprintln(out, indent+l)
	}
	if !marked && s.pending(now) {
		fmt.Fprintf(out, "%s  a mark is refused until then (gate rule 31: Liqo ≥ v1.1 force-deletes on the mark); wait, or "+
			"override it in the marking request (needs verb %s): %s=<cluster ID>\n", indent, liqojanitor.MarkVerb,
			liqojanitor.OverrideFenceDeadlineAnnotation)
	}
}
