package view

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
	"github.com/liqo-janitor/liqo-janitor/janitor"
)

// CheckGateCommand is how an operator sees whether the gate is installed.
const CheckGateCommand = "kubectl get mutatingwebhookconfigurations,validatingwebhookconfigurations -l app.kubernetes.io/name=liqo-janitor"

// PrintPlanReport prints r: as the document -o asks for, or as tables for a person.
func PrintPlanReport(out io.Writer, format *output.Flag, r *PlanReport) error {
	if format.Document() {
		return format.Print(out, r.escaped())
	}
	PrintPlan(out, r.Plan, r.Grace)
	printNoEvidence(out, r.NoReachabilityEvidence)
	if r.Evidence != nil {
		fmt.Fprintln(out, "\nEvidence for this cluster (what \"unreachable\" rests on):")
		PrintEvidence(out, "  ", r.Evidence, r.probeLine(), time.Now())
	}
	if r.ProviderFence != nil {
		fmt.Fprintln(out)
		PrintProviderFence(out, "", r.ProviderFence, r.Plan.Wait != janitor.WaitNotMarked, time.Now())
	}
	r.Janitor.PrintIgnored(out)
	printGate(out, r.Gate)
	return nil
}

// escaped is r with its text from the cluster passed through output.Printable: JSON escapes C0 controls but
// neither C1 nor bidirectional ones, and YAML leaves some of each raw.
func (r *PlanReport) escaped() *PlanReport {
	out := *r
	p := *r.Plan
	p.ForeignCluster, p.ClusterID, p.Summary = output.Printable(p.ForeignCluster), output.Printable(p.ClusterID), output.Printable(p.Summary)
	p.Offloadings = slices.Clone(p.Offloadings)
	for i := range p.Offloadings {
		p.Offloadings[i].Namespace, p.Offloadings[i].Why = output.Printable(p.Offloadings[i].Namespace), output.Printable(p.Offloadings[i].Why)
	}
	p.Volumes, p.VolumesNotListed = printableVolumes(p.Volumes), output.Printable(p.VolumesNotListed)
	out.Plan = &p
	if r.Grace != nil {
		g := *r.Grace
		g.Ignored = output.Printable(g.Ignored)
		out.Grace = &g
	}
	out.Gate.Refusal = output.Printable(out.Gate.Refusal)
	return &out
}

// PrintPlan prints a plan as a table per kind, with the janitor's grace window of a marked cluster.
func PrintPlan(out io.Writer, p *janitor.Plan, grace *GraceWindow) {
	fmt.Fprintf(out, "ForeignCluster %s (cluster ID %s): %s\n", output.Printable(p.ForeignCluster), output.Printable(p.ClusterID), describeWait(p))
	if grace != nil {
		fmt.Fprintf(out, "Grace period: %s\n", grace)
	}
	fmt.Fprintln(out)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "KIND\tRELEASED\tBLOCKED (by others' finalizers)\tKEPT FOR LIQO (until it has done its part)")
	for _, k := range p.Kinds {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\n", k.Kind, k.Release, k.Blocked, k.ForLiqo)
	}
	if len(p.Kinds) == 0 {
		fmt.Fprintln(w, "(nothing to release)\t\t\t")
	}
	_ = w.Flush()
	for _, wt := range p.Offloadings {
		fmt.Fprintf(out, "  NamespaceOffloading %s/offloading would be kept for Liqo: %s\n", output.Printable(wt.Namespace), output.Printable(wt.Why))
	}
	printPinnedVolumes(out, p.PinnedVolumes, printableVolumes(p.Volumes), output.Printable(p.ClusterID))
	if p.VolumesNotListed != "" {
		fmt.Fprintf(out, "  volumes pinned to the cluster: not listed: %s\n", output.Printable(p.VolumesNotListed))
	}
	fmt.Fprintf(out, "\nIn the words of the cleanup annotation: %s\n", output.Printable(p.Summary))
}

// describeWait says what the janitor does with p, and when.
func describeWait(p *janitor.Plan) string {
	switch p.Wait {
	case janitor.WaitNotMarked:
		return "not marked; if it were marked dead, the janitor would do this once its grace period ends"
	case janitor.WaitGracePeriod:
		return "marked, in the janitor's grace period: the janitor will do this once it ends"
	case janitor.NotWaiting:
		return "marked and dead, the grace period over: the janitor does this now"
	case janitor.WaitReturned:
		return "marked, but its provider answered again after the mark: the janitor releases nothing more for this mark " +
			"(see kubectl liqo-janitor status; fence with kubectl liqo-janitor fence)"
	}
	return fmt.Sprintf("marked, but the janitor waits (%s): nothing is released while that holds", p.Wait)
}

// probeLine says where the probe looks; for an unmarked cluster, that the gate probes there too.
func (r *PlanReport) probeLine() string {
	if r.Probe != nil && r.Plan.Wait == janitor.WaitNotMarked {
		return r.Probe.line() + "; the gate probes the same before it accepts a mark: an answer vetoes it (gate rule 4)"
	}
	return r.Probe.line()
}

// printNoEvidence says what marking a ForeignCluster without reachability evidence asks for.
func printNoEvidence(out io.Writer, none bool) {
	if none {
		fmt.Fprintln(out, "\nNo reachability evidence: "+NoEvidenceWhy+"\n"+
			"  kubectl liqo-janitor mark asks you to type its cluster ID a second time, for "+liqojanitor.NoEvidenceAnnotation+".")
	}
}

// printGate says what the gate would say to a mark now, and whether you may mark.
func printGate(out io.Writer, g GateCheck) {
	fmt.Fprintln(out)
	switch {
	case g.Answered:
		fmt.Fprintln(out, "Gate: a mark would be accepted now (server-side dry run).")
	case g.Accepted:
		fmt.Fprintf(out, "Gate: NOT ANSWERING: %s.\n  kubectl liqo-janitor mark refuses such a mark unless --without-gate; check the gate with\n  %s\n",
			output.Printable(g.Refusal), CheckGateCommand)
	default:
		fmt.Fprintf(out, "Gate: a mark would be refused now:\n  %s\n", output.Printable(g.Refusal))
	}
	if g.MayMark {
		fmt.Fprintln(out, "Permission: you hold the break-glass verb mark-unreachable.")
	} else {
		fmt.Fprintf(out, "Permission: you do not hold the break-glass verb mark-unreachable; a cluster admin can grant it:\n"+
			"  kubectl create clusterrolebinding mark-unreachable-<you> --clusterrole=%s --user=<you>\n", liqojanitor.MarkRoleName)
	}
}
