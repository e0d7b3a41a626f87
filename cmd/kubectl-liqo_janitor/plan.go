package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
	"github.com/liqo-janitor/liqo-janitor/janitor"
)

// gateCheck is what the gate would say to a mark now, and whether the user holds the break-glass verb.
type gateCheck struct {
	// MayMark: a SelfSubjectAccessReview for verb mark-unreachable on this ForeignCluster.
	MayMark bool `json:"mayMark"`
	// Accepted: a server-side dry run of the mark `mark` would send passed the API server.
	Accepted bool `json:"accepted"`
	// Answered: the gate answered that dry run (its stamps, naming you, are in the result). Accepted but not
	// Answered means nothing checked the mark: `mark` refuses it unless --without-gate.
	Answered bool `json:"answered"`
	// Refusal is the API server's (the gate's) answer when it would refuse, or why the gate did not answer.
	Refusal string `json:"refusal,omitempty"`
}

// planReport is `plan -o json|yaml`, kind PlanReport.
type planReport struct {
	metav1.TypeMeta `json:",inline"`
	Plan            *janitor.Plan `json:"plan"`
	// Grace is the janitor's recorded grace window (marked clusters only).
	Grace *graceWindow `json:"grace,omitempty"`
	// NoReachabilityEvidence: Liqo keeps no APIServerStatus for the ForeignCluster, and marking it needs the
	// cluster ID typed a second time.
	NoReachabilityEvidence bool      `json:"noReachabilityEvidence,omitempty"`
	Gate                   gateCheck `json:"gate"`
	// Probe is where the janitor's return probe looks (or, unmarked, would look) for the provider; unmarked,
	// the gate probes the same before it accepts a mark (gate rule 4).
	Probe *probeStatus `json:"probe,omitempty"`
	// Evidence is what the verdict "unreachable" rests on for this cluster: Liqo's APIServerStatus and
	// NetworkConnectionStatus, and the storm count now.
	Evidence *evidence `json:"evidence,omitempty"`
	// Janitor is where the plugin read liqo-janitor's records (its namespace, and nowhere else), and the
	// look-alikes of the same name it ignored in other namespaces.
	Janitor *janitorView `json:"janitor,omitempty"`
	// ProviderFence is the provider's fence of this consumer as the janitor's renewal record says, with the
	// deadline before which the gate refuses a mark (gate rule 31); none: no provider-side fence.
	ProviderFence *providerFenceStatus `json:"providerFence,omitempty"`
}

// DeepCopyObject makes planReport a runtime.Object, for cli-runtime's printers.
func (r *planReport) DeepCopyObject() runtime.Object { return output.DeepCopyJSON(r) }

func (e *env) planCommand() *cobra.Command {
	var format *output.Flag
	var janitorNS string
	cmd := &cobra.Command{
		Use:   "plan <cluster-id|foreigncluster>",
		Short: "Show what marking the provider dead would release, and whether the gate would accept the mark now",
		Long: `plan writes nothing. It runs the janitor's own selection for the ForeignCluster as if its grace period
had ended, and asks the gate, with a server-side dry run, whether it would accept the mark now. For a marked
ForeignCluster it shows the grace window the janitor recorded.`,
		Example: `  # by cluster ID or by ForeignCluster name
  kubectl liqo-janitor plan 0f8a2d7c-provider
  kubectl liqo-janitor plan provider-a

  # the same, for a script
  kubectl liqo-janitor plan provider-a -o json | jq '.plan.kinds'`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: e.completeClusters(nil),
		RunE: func(cmd *cobra.Command, args []string) error {
			report, err := e.planReport(cmd.Context(), args[0], janitorNS)
			if err != nil {
				return err
			}
			return printReport(e.Out, format, report)
		},
	}
	format = output.AddFlag(cmd)
	cli.AddJanitorNamespaceFlag(cmd, &janitorNS)
	return cmd
}

func (e *env) planReport(ctx context.Context, arg, janitorNS string) (*planReport, error) {
	c, fc, err := e.Resolve(ctx, arg)
	if err != nil {
		return nil, err
	}
	ns, err := cli.FindJanitorNamespace(ctx, c, janitorNS)
	if err != nil {
		return nil, err
	}
	plan, err := e.plan(ctx, c, fc, ns)
	if err != nil {
		return nil, err
	}
	r := &planReport{TypeMeta: output.TypeMeta("PlanReport"), Plan: plan, NoReachabilityEvidence: !hasEvidence(fc)}
	fcs, listErr := listForeignClusters(ctx, c)
	r.Evidence = evidenceOf(fc, fcs, listErr)
	if plan.Wait != janitor.WaitReturned {
		r.Janitor = readJanitorView(ctx, c, ns, liqojanitor.RecordsConfigMap, liqojanitor.FenceRenewalsConfigMap)
		r.Probe = probeStatusOf(ctx, c, fc, r.Janitor.records, r.Janitor.Unread)
	} else {
		r.Janitor = readJanitorView(ctx, c, ns, liqojanitor.FenceRenewalsConfigMap)
	}
	r.ProviderFence = providerFenceOf(r.Janitor, fc)
	if liqojanitor.IsMarked(fc.Annotations) {
		g := graceOf(fc, time.Now()) // the plan's Wait already takes the janitor's recorded window (PlanCluster)
		r.Grace = &g
	}
	r.Gate, err = e.checkGate(ctx, c, fc)
	return r, err
}

// plan is the janitor's own selection for fc, as if its grace period had ended, with the returns it kept
// in its namespace ns (a provider that answered again after the mark stops every release).
func (e *env) plan(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster, ns cli.JanitorNamespace) (*janitor.Plan, error) {
	mc, err := e.metadataClient()
	if err != nil {
		return nil, err
	}
	plan, err := janitor.PlanCluster(ctx, c, mc, fc.Name, janitor.Options{Namespace: ns.Name})
	if apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("%w (a plan reads what the janitor reads: get and list on ForeignClusters, ResourceSlices, "+
			"NamespaceMaps, Renews, NamespaceOffloadings, VirtualNodes, Nodes, Pods and Namespaces, and get on ConfigMap %s in "+
			"liqo-janitor's namespace %s; the cluster's view role and Liqo's read roles give them)", err, liqojanitor.RecordsConfigMap, ns.Name)
	}
	return plan, err
}

// checkGate asks the API server whether the user may mark fc, and the gate, with a server-side dry run of
// the mark `mark` would send, whether it would take it.
func (e *env) checkGate(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster) (gateCheck, error) {
	var g gateCheck
	g.MayMark, _ = mayMark(ctx, c, fc.Name)
	if liqojanitor.IsMarked(fc.Annotations) {
		g.Refusal = "already marked permanently unreachable (kubectl liqo-janitor status " + fc.Name + ")"
		return g, nil
	}
	user, err := cli.WhoAmI(ctx, c)
	if err != nil {
		return g, err
	}
	r, err := sendMark(ctx, c, fc, markPatch(fc, "", ""), user, true)
	if err != nil {
		g.Refusal = err.Error() // the gate's refusal is the answer plan shows, not a failure of plan
		return g, nil           //nolint:nilerr // see above
	}
	g.Accepted = true
	if missing := r.stampsMissing(); missing != "" {
		g.Refusal = "the dry run passed with " + missing + ": the gate did not answer"
		return g, nil
	}
	g.Answered = true
	return g, nil
}

func printReport(out io.Writer, format *output.Flag, r *planReport) error {
	if format.Document() {
		return format.Print(out, r.escaped())
	}
	printPlan(out, r.Plan, r.Grace)
	printNoEvidence(out, r.NoReachabilityEvidence)
	if r.Evidence != nil {
		fmt.Fprintln(out, "\nEvidence for this cluster (what \"unreachable\" rests on):")
		printEvidence(out, "  ", r.Evidence, r.probeLine(), time.Now())
	}
	if r.ProviderFence != nil {
		fmt.Fprintln(out)
		printProviderFence(out, "", r.ProviderFence, r.Plan.Wait != janitor.WaitNotMarked, time.Now())
	}
	r.Janitor.printIgnored(out)
	printGate(out, r.Gate)
	return nil
}

// escaped is r with its text from the cluster passed through output.Printable: JSON escapes C0 controls but
// neither C1 nor bidirectional ones, and YAML leaves some of each raw.
func (r *planReport) escaped() *planReport {
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

// printPlan prints a plan as a table per kind, with the janitor's grace window of a marked cluster.
func printPlan(out io.Writer, p *janitor.Plan, grace *graceWindow) {
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
func (r *planReport) probeLine() string {
	if r.Probe != nil && r.Plan.Wait == janitor.WaitNotMarked {
		return r.Probe.line() + "; the gate probes the same before it accepts a mark: an answer vetoes it (gate rule 4)"
	}
	return r.Probe.line()
}

// printNoEvidence says what marking a ForeignCluster without reachability evidence asks for.
func printNoEvidence(out io.Writer, none bool) {
	if none {
		fmt.Fprintln(out, "\nNo reachability evidence: "+noEvidenceWhy+"\n"+
			"  kubectl liqo-janitor mark asks you to type its cluster ID a second time, for "+liqojanitor.NoEvidenceAnnotation+".")
	}
}

func printGate(out io.Writer, g gateCheck) {
	fmt.Fprintln(out)
	switch {
	case g.Answered:
		fmt.Fprintln(out, "Gate: a mark would be accepted now (server-side dry run).")
	case g.Accepted:
		fmt.Fprintf(out, "Gate: NOT ANSWERING: %s.\n  kubectl liqo-janitor mark refuses such a mark unless --without-gate; check the gate with\n  %s\n",
			output.Printable(g.Refusal), checkGateCommand)
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
