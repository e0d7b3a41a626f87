package view

import (
	"fmt"
	"io"
	"time"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// How status prints one ForeignCluster's status for a person (its text already escaped by clusterStatusOf),
// and the janitor's records of the unpeering and of the volumes pinned to the dead cluster, which plan
// prints too.

// printOne prints one cluster's status for a person (its text already escaped by clusterStatusOf).
func printOne(out io.Writer, cs *ClusterStatus, now time.Time) {
	if cs.Returned != nil {
		fmt.Fprintln(out, returnedLine(cs))
	}
	fmt.Fprintf(out, "%s (cluster ID %s): %s\n", cs.ForeignCluster, cs.ClusterID, markState(cs))
	if cs.MarkedBy != "" {
		var at time.Time // zero if the gate's marked-at is missing or not a time
		if cs.MarkedAt != nil {
			at = cs.MarkedAt.Time
		}
		fmt.Fprintf(out, "  marked by %s at %s (%s ago)\n", cs.MarkedBy, at.UTC().Format(time.RFC3339), now.Sub(at).Round(time.Second))
	}
	if cs.Grace != nil {
		fmt.Fprintf(out, "  grace period: %s\n", cs.Grace)
	}
	if cs.Reason != "" {
		fmt.Fprintf(out, "  reason: \"%s\"\n", cs.Reason)
	}
	if cs.Evidence != nil {
		PrintEvidence(out, "  ", cs.Evidence, cs.Probe.line(), now)
	}
	PrintProviderFence(out, "  ", cs.ProviderFence, cs.Marked, now)
	if cs.Cleanup != "" {
		fmt.Fprintf(out, "  cleanup: %s\n", cs.Cleanup)
	}
	printUnpeering(out, cs.Unpeering)
	for _, ev := range cs.Events {
		fmt.Fprintf(out, "  %s  %s: %s\n", ev.Time.UTC().Format(time.TimeOnly), ev.Reason, ev.Note)
	}
}

// returnedLine is status's first line for a cluster whose provider answered again after the mark (the
// janitor's record): what happened, and the operator's next step.
func returnedLine(cs *ClusterStatus) string {
	r := cs.Returned
	head := fmt.Sprintf("PROVIDER RETURNED: %s (cluster ID %s) answered again at %s (%s)", cs.ForeignCluster,
		cs.ClusterID, r.At.UTC().Format(time.RFC3339), r.How)
	if r.Fenced != "" {
		return fmt.Sprintf("%s; fenced %s. Next: kubectl liqo-janitor unmark %s and re-peer, or delete the ForeignCluster",
			head, r.Fenced, cs.ForeignCluster)
	}
	return fmt.Sprintf("%s: the copies of the pods the consumer force-deleted may run there twice; nothing more is released. "+
		"Fence them: kubectl liqo-janitor fence %s --provider-kubeconfig <provider kubeconfig>", head, cs.ClusterID)
}

func markState(cs *ClusterStatus) string {
	if !cs.Marked {
		return "not marked"
	}
	state := "marked permanently unreachable"
	if !cs.Confirmed {
		state += ", NOT confirmed"
	}
	if cs.Paused {
		state += ", paused"
	}
	return state
}

// printUnpeering prints the janitor's unpeering record: the Liqo version, then complete, or each object
// left with what holds it, who releases it and the next step.
func printUnpeering(out io.Writer, u *liqojanitor.Unpeering) {
	if u == nil {
		return
	}
	fmt.Fprintf(out, "  liqo: %s", u.LiqoVersion)
	if u.LiqoVersionFrom != "" {
		fmt.Fprintf(out, " (from %s)", u.LiqoVersionFrom)
	}
	fmt.Fprintln(out)
	if u.Complete() {
		fmt.Fprintf(out, "  unpeering: complete since %s: %s; the ForeignCluster may be deleted (once a return of its provider, if any, is fenced)\n",
			u.Since, liqojanitor.UnpeeringCompleteWhat)
	} else {
		fmt.Fprintf(out, "  unpeering: in progress, %d object(s) left", len(u.Left)+u.More)
		if u.TenantNamespace != "" {
			fmt.Fprintf(out, " (tenant namespace %s)", u.TenantNamespace)
		}
		fmt.Fprintln(out)
		for _, o := range u.Left {
			fmt.Fprintf(out, "    - %s\n", o.Line())
		}
		if u.More > 0 {
			fmt.Fprintf(out, "    - and %d more\n", u.More)
		}
	}
	for _, n := range u.Notes {
		fmt.Fprintf(out, "  note: %s\n", n)
	}
	printPinnedVolumes(out, u.PinnedVolumes, u.Volumes, u.ClusterID)
}

// printPinnedVolumes prints the volumes pinned to the dead cluster clusterID (n of them, vols the first
// ones; issue 38): the line that says their workloads cannot run, each volume, and the command that
// releases them. vols are printable already.
func printPinnedVolumes(out io.Writer, n int, vols []liqojanitor.PinnedVolume, clusterID string) {
	if n == 0 {
		return
	}
	fmt.Fprintf(out, "  %s\n", liqojanitor.PinnedVolumesLine(n, clusterID))
	for _, v := range vols {
		fmt.Fprintf(out, "    - %s\n", v.Line())
	}
	if n > len(vols) {
		fmt.Fprintf(out, "    - and %d more\n", n-len(vols))
	}
	fmt.Fprintf(out, "  releasing one abandons its data on %s: kubectl liqo-janitor release-volumes shows the plan\n", clusterID)
}
