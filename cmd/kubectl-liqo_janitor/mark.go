package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/view"
)

type markOptions struct {
	reason, dryRun, noEvidence string
	yes, withoutGate           bool
	// janitorNS is --janitor-namespace: where the plan reads the janitor's records.
	janitorNS string
	// acknowledge is --acknowledge-unreachable, 0 when not given (the count is never 0: it counts the
	// cluster being marked).
	acknowledge int
}

func (e *env) markCommand() *cobra.Command {
	var o markOptions
	cmd := &cobra.Command{
		Use:   "mark <cluster-id|foreigncluster> --reason \"…\"",
		Short: "Declare the provider permanently unreachable: shows the plan, then asks you to type the cluster ID",
		Long: `mark shows the plan, sends the mark to the gate as a server-side dry run, asks you to type the cluster ID,
and then sends it for real. It refuses when the gate does not answer (its marked-by and marked-at stamps are
missing from the dry run), unless --without-gate; and it reports success only once the stored ForeignCluster
carries the gate's stamps.`,
		Example: `  # shows the plan, then asks you to type the cluster ID
  kubectl liqo-janitor mark 0f8a2d7c-provider --reason "data centre flooded, provider decommissioned"

  # check with the gate first: nothing is stored
  kubectl liqo-janitor mark provider-a --reason "decommissioned" --dry-run=server

  # for automation: no typing (a ForeignCluster without reachability evidence also needs
  # --no-reachability-evidence=<cluster-id>; a mark during a storm --acknowledge-unreachable=<count>)
  kubectl liqo-janitor mark provider-a --reason "decommissioned" --yes`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: e.completeClusters(isUnmarked),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			return e.mark(cmd.Context(), args[0], o)
		},
	}
	cmd.Flags().StringVar(&o.reason, "reason", "", "why the provider is gone for good (quoted in the clean-up's events)")
	cmd.Flags().BoolVar(&o.yes, "yes", false, "skip typing the cluster ID (for automation)")
	cmd.Flags().StringVar(&o.dryRun, "dry-run", "none", `"server" sends the mark through the gate without storing it`)
	_ = cmd.RegisterFlagCompletionFunc("dry-run", cobra.FixedCompletions([]string{"none", "server"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.Flags().StringVar(&o.noEvidence, "no-reachability-evidence", "",
		"the cluster ID again, for a ForeignCluster Liqo keeps no reachability evidence for (instead of typing it)")
	cmd.Flags().BoolVar(&o.withoutGate, "without-gate", false,
		"mark even though the gate does not answer: Liqo >= v1.1 then acts on the bare mark at once")
	cmd.Flags().IntVar(&o.acknowledge, "acknowledge-unreachable", 0,
		"during a storm (many providers unreachable at once), the number of them, instead of typing it")
	cli.AddJanitorNamespaceFlag(cmd, &o.janitorNS)
	return cmd
}

func (o markOptions) validate() error {
	if o.dryRun != "none" && o.dryRun != "server" {
		return fmt.Errorf("--dry-run=%s: use --dry-run=server to send the mark through the gate without storing it", o.dryRun)
	}
	if strings.TrimSpace(o.reason) == "" {
		return errors.New(`--reason is required: say why the provider is gone for good (it is quoted in every event of the clean-up)`)
	}
	return nil
}

// mark is `mark`: the plan, the dry run through the gate, the typed confirmations, the mark, its stamps.
func (e *env) mark(ctx context.Context, arg string, o markOptions) error {
	c, fc, err := e.Resolve(ctx, arg)
	if err != nil {
		return err
	}
	if liqojanitor.IsMarked(fc.Annotations) {
		return fmt.Errorf("ForeignCluster %s is already marked: kubectl liqo-janitor status %s", fc.Name, fc.Name)
	}
	fcs, err := view.ListForeignClusters(ctx, c)
	if err != nil {
		return err
	}
	ev := view.EvidenceOf(fc, fcs, nil)
	ns, err := cli.FindJanitorNamespace(ctx, c, o.janitorNS)
	if err != nil {
		return err
	}
	if err := e.showPlan(ctx, c, fc, ns, ev); err != nil {
		return err
	}
	if err := checkTunnel(fc); err != nil {
		return err
	}
	if err := e.checkEvidence(fc, o); err != nil {
		return err
	}
	ack, err := e.checkStorm(fc, ev, o)
	if err != nil {
		return err
	}
	user, err := cli.WhoAmI(ctx, c)
	if err != nil {
		return err
	}
	patch := markPatch(fc, o.reason, ack.count)
	dry, err := e.preflight(ctx, c, fc, patch, user, o)
	if err != nil {
		return err
	}
	if o.dryRun == "server" {
		e.reportDryRun(dry, ack)
		return nil
	}
	if err := e.confirmMark(fc, o); err != nil {
		return err
	}
	if err := e.confirmStorm(ack); err != nil {
		return err
	}
	e.DropWarnings() // the dry run's: the real request gets its own
	r, err := sendMark(ctx, c, fc, patch, user, false)
	if err != nil {
		return err // the gate's refusal, as it gives it
	}
	e.PrintWarnings()
	return e.reportMarked(fc, r, o)
}

// showPlan prints what the mark would release, the evidence it rests on, and the provider's fence: the
// deadline before which the gate refuses the mark (gate rule 31), or that there is none.
func (e *env) showPlan(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster, ns cli.JanitorNamespace, ev *view.Evidence) error {
	mc, err := e.MetadataClient()
	if err != nil {
		return err
	}
	plan, err := view.PlanOf(ctx, c, mc, fc, ns)
	if err != nil {
		return err
	}
	view.PrintPlan(e.Out, plan, nil)
	fmt.Fprintln(e.Out, "\nEvidence for this cluster (what \"unreachable\" rests on):")
	view.PrintEvidence(e.Out, "  ", ev, "", time.Now())
	fmt.Fprintln(e.Out)
	view.PrintProviderFence(e.Out, "", view.ProviderFenceOf(view.ReadJanitor(ctx, c, ns, liqojanitor.FenceRenewalsConfigMap), fc), false, time.Now())
	return nil
}

// checkEvidence explains, for a ForeignCluster without reachability evidence, why the mark needs its
// cluster ID a second time, and checks --no-reachability-evidence against it.
func (e *env) checkEvidence(fc *liqov1beta1.ForeignCluster, o markOptions) error {
	id := string(fc.Spec.ClusterID)
	switch {
	case view.HasEvidence(fc) && o.noEvidence != "":
		return fmt.Errorf("--no-reachability-evidence: Liqo keeps reachability evidence (APIServerStatus) for ForeignCluster %s: leave the flag out", fc.Name)
	case view.HasEvidence(fc):
		return nil
	case o.noEvidence != "" && o.noEvidence != id:
		return fmt.Errorf("--no-reachability-evidence=%s is not the cluster ID %s: nothing was written", o.noEvidence, id)
	case o.noEvidence == "" && o.yes && o.dryRun != "server":
		return fmt.Errorf("ForeignCluster %s has no reachability evidence (no APIServerStatus condition): with --yes, "+
			"add --no-reachability-evidence=%s to say you know; nothing was written", fc.Name, id)
	}
	fmt.Fprintf(e.Out, "\nNo reachability evidence: %s\n", view.NoEvidenceWhy)
	return nil
}

// preflight sends the mark as a server-side dry run: the API server's refusal (the gate's) is returned as
// it is; a mark that passes without the gate's stamps is refused, unless --without-gate, which says what
// the bare mark does.
func (e *env) preflight(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster, patch client.Patch,
	user string, o markOptions) (*markRequest, error) {
	r, err := sendMark(ctx, c, fc, patch, user, true)
	if err != nil {
		return nil, err
	}
	if missing := r.stampsMissing(); missing != "" {
		if !o.withoutGate {
			return nil, gateSilent(fc, missing)
		}
		fmt.Fprint(e.Out, withoutGateWarning)
	}
	return r, nil
}

// reportDryRun reports a --dry-run=server mark.
func (e *env) reportDryRun(r *markRequest, ack stormAck) {
	e.PrintWarnings()
	if ack.count != "" {
		fmt.Fprintf(e.Out, "\nThe dry run carried %s=%s, the count mark asks you to type.\n", liqojanitor.AcknowledgeUnreachableAnnotation, ack.count)
	}
	if r.stampsMissing() != "" {
		fmt.Fprintln(e.Out, "\nDry run: the API server accepts this mark without the gate; nothing was stored.")
		return
	}
	fmt.Fprintf(e.Out, "\nDry run: the gate accepts this mark (it would stamp %s); nothing was stored.\n", output.Printable(r.stamps()))
}

// confirmMark asks the operator to type the cluster ID (unless --yes) and, for a ForeignCluster without
// reachability evidence, to type it again for the no-reachability-evidence key (unless given as a flag).
func (e *env) confirmMark(fc *liqov1beta1.ForeignCluster, o markOptions) error {
	id := string(fc.Spec.ClusterID)
	if !o.yes {
		if err := e.typed(fmt.Sprintf("\nThis cannot be undone once the grace period ends: what is released is not restored.\n"+
			"Type the cluster ID (%s) to confirm: ", output.Printable(id)), id); err != nil {
			return err
		}
	}
	if view.HasEvidence(fc) || o.noEvidence != "" {
		return nil
	}
	return e.typed(fmt.Sprintf("Nothing shows the provider is gone. Type the cluster ID (%s) again, for %s: ",
		output.Printable(id), liqojanitor.NoEvidenceAnnotation), id)
}

// typed prompts and reads one line, which must be want.
func (e *env) typed(prompt, want string) error {
	fmt.Fprint(e.Out, prompt)
	got, err := e.ReadLine()
	if err != nil {
		return fmt.Errorf("reading the confirmation: %w", err)
	}
	if got != want {
		return fmt.Errorf("you typed %q, not the cluster ID %q: nothing was written", got, want)
	}
	return nil
}

// reportMarked reports a stored mark: a success only when the stored ForeignCluster carries the gate's
// stamps (or --without-gate).
func (e *env) reportMarked(fc *liqov1beta1.ForeignCluster, r *markRequest, o markOptions) error {
	name := output.Printable(fc.Name)
	missing := r.stampsMissing()
	switch {
	case missing != "" && !o.withoutGate:
		return storedUnstamped(fc, missing)
	case missing != "":
		fmt.Fprintf(e.Out, "\nForeignCluster %s is marked permanently unreachable WITHOUT the gate (%s).\n", name, output.Printable(missing))
	default:
		fmt.Fprintf(e.Out, "\nForeignCluster %s is marked permanently unreachable (stamped by the gate: %s).\n", name, output.Printable(r.stamps()))
	}
	fmt.Fprintf(e.Out, "The janitor waits out its grace period, showing its plan on the ForeignCluster; undo within it with:\n"+
		"  kubectl liqo-janitor unmark %s\nFollow it with: kubectl liqo-janitor status %s --watch\n", name, name)
	return nil
}
