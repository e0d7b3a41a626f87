package view

import (
	"context"
	"fmt"
	"io"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// Evidence is what the verdict "unreachable" rests on for one ForeignCluster, as plan and status show it
// (issue 28): Liqo's APIServerStatus, Liqo's NetworkConnectionStatus (the data plane) and the storm count
// now. The gate's and the janitor's own probe is the document's probe, beside it.
type Evidence struct {
	// APIServer is Liqo's APIServerStatus condition; nil when Liqo keeps none (then a mark needs the
	// no-reachability-evidence key: gate rule 12).
	APIServer *Condition `json:"apiServer,omitempty"`
	// Tunnel is Liqo's NetworkConnectionStatus condition (status.modules.networking); nil when Liqo keeps
	// none (its networking module off, or no Connection): not evidence either way. Established refuses a
	// mark (gate rule 20).
	Tunnel *Condition `json:"tunnel,omitempty"`
	// Storm is how many of this consumer's providers Liqo's evidence shows unreachable now (gate rule 21).
	Storm Storm `json:"storm"`
}

// Condition is one of Liqo's conditions on the ForeignCluster.
type Condition struct {
	// Status is Liqo's (Established, Pending, Error, …).
	Status string `json:"status"`
	// Since is its last transition; nil when Liqo wrote none.
	Since *metav1.Time `json:"since,omitempty"`
}

// Storm is the storm count now: the providers unreachable by Liqo's evidence, this one counted as
// unreachable as the gate and the janitor count it for its mark (liqojanitor.CountStorm).
type Storm struct {
	// Unreachable are their cluster IDs, sorted; Providers how many cluster IDs this consumer has
	// ForeignClusters for.
	Unreachable []string `json:"unreachable"`
	Providers   int      `json:"providers"`
	// InStorm: a storm by Guard, the default guard (the plugin cannot know the gate's and the janitor's
	// flags: they decide with their own).
	InStorm bool  `json:"inStorm"`
	Guard   Guard `json:"guard"`
	// Acknowledged is the count the mark carries in liqo-janitor.io/acknowledge-unreachable, if any.
	Acknowledged string `json:"acknowledged,omitempty"`
	// Unread says why the ForeignClusters could not be listed (then nothing else here is known).
	Unread string `json:"unread,omitempty"`
}

// Guard is a storm guard (liqojanitor.StormGuard), as the flags of the gate and the janitor name it.
type Guard struct {
	MinUnreachable             int `json:"minUnreachable"`
	MaxUnreachableSharePercent int `json:"maxUnreachableSharePercent"`
}

// defaultGuard is the guard the plugin counts with: the defaults of --storm-min-unreachable and
// --storm-max-unreachable-share.
var defaultGuard = liqojanitor.DefaultStormGuard

// GuardNote says which guard the plugin counts with, and who decides.
var GuardNote = fmt.Sprintf("by the default guard (%d, %d %%); the gate decides with its own flags",
	defaultGuard.MinUnreachable, defaultGuard.MaxSharePercent)

// NoEvidenceWhy is why a ForeignCluster without an APIServerStatus condition needs a second key.
const NoEvidenceWhy = "Liqo keeps no APIServerStatus for this ForeignCluster (it drops the condition when the cluster has\n" +
	"  no API server URL: its identity was deleted, authentication is off, or the object was made by hand), so nothing\n" +
	"  shows whether the provider still answers."

// HasEvidence reports whether Liqo keeps reachability evidence for fc: an APIServerStatus condition
// (Liqo deletes it when the ForeignCluster has no API server URL: identity deleted, authentication off,
// a hand-made object).
func HasEvidence(fc *liqov1beta1.ForeignCluster) bool {
	return liqojanitor.APIServerStatus(fc) != nil
}

// ListForeignClusters lists every ForeignCluster of this consumer, for the storm count.
func ListForeignClusters(ctx context.Context, c client.Client) ([]liqov1beta1.ForeignCluster, error) {
	var list liqov1beta1.ForeignClusterList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing ForeignClusters for the storm count: %w", err)
	}
	return list.Items, nil
}

// EvidenceOf is the evidence for fc among fcs (every ForeignCluster of this consumer, or nil with the
// error that kept them unread), its text escaped.
func EvidenceOf(fc *liqov1beta1.ForeignCluster, fcs []liqov1beta1.ForeignCluster, listErr error) *Evidence {
	ev := &Evidence{APIServer: ConditionOf(liqojanitor.APIServerStatus(fc)), Tunnel: ConditionOf(liqojanitor.TunnelStatus(fc))}
	ev.Storm.Guard = Guard{MinUnreachable: defaultGuard.MinUnreachable, MaxUnreachableSharePercent: defaultGuard.MaxSharePercent}
	ev.Storm.Acknowledged = output.Printable(fc.Annotations[liqojanitor.AcknowledgeUnreachableAnnotation])
	if listErr != nil {
		ev.Storm.Unread = output.Printable(listErr.Error())
		return ev
	}
	s := liqojanitor.CountStorm(fcs, fc)
	ev.Storm.Providers, ev.Storm.InStorm = s.Providers, defaultGuard.In(s)
	ev.Storm.Unreachable = make([]string, 0, len(s.Unreachable))
	for _, id := range s.Unreachable {
		ev.Storm.Unreachable = append(ev.Storm.Unreachable, output.Printable(id))
	}
	return ev
}

// ConditionOf is one of Liqo's conditions as plan and status show it, its text escaped; nil for none.
func ConditionOf(c *liqov1beta1.Condition) *Condition {
	if c == nil {
		return nil
	}
	shown := &Condition{Status: output.Printable(string(c.Status))}
	if !c.LastTransitionTime.IsZero() {
		shown.Since = &metav1.Time{Time: c.LastTransitionTime.UTC()}
	}
	return shown
}

// Count is the count as the root package words it.
func (s *Storm) Count() liqojanitor.Storm {
	return liqojanitor.Storm{Unreachable: s.Unreachable, Providers: s.Providers}
}

// apiServerLine says what Liqo's APIServerStatus shows, at now.
func (ev *Evidence) apiServerLine(now time.Time) string {
	if ev.APIServer == nil {
		return "API server: no APIServerStatus: Liqo keeps no reachability evidence for it (a mark needs the cluster ID typed twice)"
	}
	return "API server: APIServerStatus " + ev.APIServer.Describe(now)
}

// tunnelLine says what Liqo's NetworkConnectionStatus shows, at now.
func (ev *Evidence) tunnelLine(now time.Time) string {
	switch {
	case ev.Tunnel == nil:
		return "tunnel: no networking condition: not evidence either way (Liqo's networking module is off, or keeps no Connection for it)"
	case ev.Tunnel.Status == string(liqov1beta1.ConditionStatusEstablished):
		return "tunnel: NetworkConnectionStatus " + ev.Tunnel.Describe(now) + ": Liqo's data plane to the provider is up, " +
			"its pods still run and reach this cluster; a mark is refused (gate rule 20)"
	}
	return "tunnel: NetworkConnectionStatus " + ev.Tunnel.Describe(now)
}

// stormLine says the storm count now.
func (ev *Evidence) stormLine() string {
	s := ev.Storm
	var line string
	switch {
	case s.Unread != "":
		line = "storm now: not counted (" + s.Unread + "); the gate counts itself"
	case s.InStorm:
		line = "storm now: " + s.Count().String() + ": A STORM " + GuardNote + "; a mark needs the count acknowledged (gate rule 21)"
	default:
		line = "storm now: " + s.Count().String() + ": no storm " + GuardNote
	}
	if s.Acknowledged != "" {
		line += "; the mark acknowledged " + s.Acknowledged + " unreachable"
	}
	return line
}

// Describe is "Error since 2026-12-05T22:40:00Z (10m0s ago)".
func (c *Condition) Describe(now time.Time) string {
	if c.Since == nil {
		return c.Status + " (no transition time)"
	}
	return fmt.Sprintf("%s since %s (%s ago)", c.Status, c.Since.UTC().Format(time.RFC3339), now.Sub(c.Since.Time).Round(time.Second))
}

// PrintEvidence prints the evidence, each line after indent, with the probe line where there is one.
func PrintEvidence(out io.Writer, indent string, ev *Evidence, probe string, now time.Time) {
	fmt.Fprintln(out, indent+ev.apiServerLine(now))
	fmt.Fprintln(out, indent+ev.tunnelLine(now))
	if probe != "" {
		fmt.Fprintln(out, indent+"return probe: "+probe)
	}
	fmt.Fprintln(out, indent+ev.stormLine())
}
