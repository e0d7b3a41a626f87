package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	authorizationv1 "k8s.io/api/authorization/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/webhook"
)

// gateCheck is what the gate would say to a mark now, and whether the user holds the break-glass verb.
type gateCheck struct {
	// MayMark: a SelfSubjectAccessReview for verb mark-unreachable on this ForeignCluster.
	MayMark bool `json:"mayMark"`
	// Accepted: a server-side dry run of the mark (with the right confirmation) passed the gate.
	Accepted bool `json:"accepted"`
	// Refusal is the gate's answer when it would refuse, as it gives it.
	Refusal string `json:"refusal,omitempty"`
}

// planReport is `plan -o json|yaml`.
type planReport struct {
	Plan *janitor.Plan `json:"plan"`
	Gate gateCheck     `json:"gate"`
}

func (e *env) planCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "plan <cluster-id|foreigncluster>",
		Short: "Show what marking the provider dead would release, and whether the gate would accept the mark now",
		Long: `plan writes nothing. It runs the janitor's own selection for the ForeignCluster as if its grace period
had ended, and asks the gate, with a server-side dry run, whether it would accept the mark now.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, fc, err := e.resolve(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			plan, err := e.plan(cmd.Context(), c, fc)
			if err != nil {
				return err
			}
			report := planReport{Plan: plan, Gate: e.checkGate(cmd.Context(), c, fc)}
			return printReport(e.Out, output, report)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "json or yaml, for scripts (default: tables)")
	return cmd
}

func (e *env) resolve(ctx context.Context, arg string) (client.Client, *liqov1beta1.ForeignCluster, error) {
	c, err := e.client()
	if err != nil {
		return nil, nil, err
	}
	fc, err := foreignCluster(ctx, c, arg)
	return c, fc, err
}

func (e *env) plan(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster) (*janitor.Plan, error) {
	mc, err := e.metadataClient()
	if err != nil {
		return nil, err
	}
	plan, err := janitor.PlanCluster(ctx, c, mc, fc.Name, janitor.Options{})
	if apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("%w (a plan reads what the janitor reads: get and list on ForeignClusters, ResourceSlices, "+
			"NamespaceMaps, Renews, NamespaceOffloadings, VirtualNodes, Nodes, Pods and Namespaces; the cluster's view role "+
			"and Liqo's read roles give them)", err)
	}
	return plan, err
}

// checkGate asks the API server whether the user may mark fc, and the gate whether it would take the mark.
func (e *env) checkGate(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster) gateCheck {
	var g gateCheck
	g.MayMark, _ = mayMark(ctx, c, fc.Name)
	if liqojanitor.IsMarked(fc.Annotations) {
		g.Refusal = "already marked permanently unreachable (kubectl liqo-janitor status " + fc.Name + ")"
		return g
	}
	err := c.Patch(ctx, fc.DeepCopy(), markPatch(fc, ""), client.DryRunAll)
	g.Accepted = err == nil
	if err != nil {
		g.Refusal = err.Error()
	}
	return g
}

// mayMark is a SelfSubjectAccessReview for the break-glass verb on the ForeignCluster named name.
func mayMark(ctx context.Context, c client.Client, name string) (bool, error) {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: webhook.MarkVerb, Group: liqov1beta1.GroupVersion.Group, Resource: "foreignclusters", Name: name,
		},
	}}
	if err := c.Create(ctx, review); err != nil {
		return false, fmt.Errorf("asking the API server whether you may mark it: %w", err)
	}
	return review.Status.Allowed, nil
}

// markPatch sets the mark and its confirmation (and the reason, if any): the two keys in one request.
func markPatch(fc *liqov1beta1.ForeignCluster, reason string) client.Patch {
	annotations := map[string]string{
		liqojanitor.MarkAnnotation: liqojanitor.MarkValue, liqojanitor.ConfirmAnnotation: string(fc.Spec.ClusterID),
	}
	if reason != "" {
		annotations[liqojanitor.ReasonAnnotation] = reason
	}
	return annotationsPatch(annotations, nil)
}

// annotationsPatch is a merge patch that sets and removes annotations.
func annotationsPatch(set map[string]string, remove []string) client.Patch {
	annotations := map[string]any{}
	for k, v := range set {
		annotations[k] = v
	}
	for _, k := range remove {
		annotations[k] = nil
	}
	data, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	return client.RawPatch(types.MergePatchType, data)
}

func printReport(out io.Writer, output string, r planReport) error {
	switch output {
	case "json":
		data, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, string(data))
		return err
	case "yaml":
		data, err := yaml.Marshal(r)
		if err != nil {
			return err
		}
		_, err = out.Write(data)
		return err
	case "":
		printPlan(out, r.Plan)
		printGate(out, r.Gate)
		return nil
	}
	return fmt.Errorf("unknown output format %q: use -o json or -o yaml, or leave it out for tables", output)
}

// printPlan prints a plan as a table per kind.
func printPlan(out io.Writer, p *janitor.Plan) {
	fmt.Fprintf(out, "ForeignCluster %s (cluster ID %s): %s\n\n", p.ForeignCluster, p.ClusterID, describeWait(p))
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "KIND\tRELEASED\tBLOCKED (by others' finalizers)\tWAITING (for Liqo)")
	for _, k := range p.Kinds {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\n", k.Kind, k.Release, k.Blocked, k.Waiting)
	}
	if len(p.Kinds) == 0 {
		fmt.Fprintln(w, "(nothing to release)\t\t\t")
	}
	_ = w.Flush()
	for _, wt := range p.Waiting {
		fmt.Fprintf(out, "  NamespaceOffloading %s/offloading would wait: %s\n", wt.Namespace, wt.Why)
	}
	fmt.Fprintf(out, "\nIn the words of the cleanup annotation: %s\n", p.Summary)
}

func describeWait(p *janitor.Plan) string {
	switch p.Wait {
	case janitor.WaitNotMarked:
		return "not marked; if it were marked dead, the janitor would do this once the grace period ends"
	case janitor.WaitGracePeriod:
		return fmt.Sprintf("marked, in its grace period (%s left by the default 30s): the janitor will do this", p.GraceLeft.Round(time.Second))
	case janitor.NotWaiting:
		return "marked and dead: the janitor does this now"
	}
	return fmt.Sprintf("marked, but the janitor waits (%s): nothing is released while that holds", p.Wait)
}

func printGate(out io.Writer, g gateCheck) {
	fmt.Fprintln(out)
	switch {
	case g.Accepted:
		fmt.Fprintln(out, "Gate: a mark would be accepted now (server-side dry run).")
	default:
		fmt.Fprintf(out, "Gate: a mark would be refused now:\n  %s\n", g.Refusal)
	}
	if g.MayMark {
		fmt.Fprintln(out, "Permission: you hold the break-glass verb mark-unreachable.")
	} else {
		fmt.Fprintf(out, "Permission: you do not hold the break-glass verb mark-unreachable; a cluster admin can grant it:\n"+
			"  kubectl create clusterrolebinding mark-unreachable-<you> --clusterrole=%s --user=<you>\n", webhook.MarkRoleName)
	}
}

func (e *env) markCommand() *cobra.Command {
	var reason, dryRun string
	var yes bool
	cmd := &cobra.Command{
		Use:   "mark <cluster-id|foreigncluster> --reason \"…\"",
		Short: "Declare the provider permanently unreachable: shows the plan, then asks you to type the cluster ID",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dryRun != "none" && dryRun != "server" {
				return fmt.Errorf("--dry-run=%s: use --dry-run=server to send the mark through the gate without storing it", dryRun)
			}
			if strings.TrimSpace(reason) == "" {
				return errors.New(`--reason is required: say why the provider is gone for good (it is quoted in every event of the clean-up)`)
			}
			c, fc, err := e.resolve(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if liqojanitor.IsMarked(fc.Annotations) {
				return fmt.Errorf("ForeignCluster %s is already marked: kubectl liqo-janitor status %s", fc.Name, fc.Name)
			}
			plan, err := e.plan(cmd.Context(), c, fc)
			if err != nil {
				return err
			}
			printPlan(e.Out, plan)
			if !yes {
				if err := e.confirm(fc); err != nil {
					return err
				}
			}
			var opts []client.PatchOption
			if dryRun == "server" {
				opts = append(opts, client.DryRunAll)
			}
			marked := fc.DeepCopy()
			if err := c.Patch(cmd.Context(), marked, markPatch(fc, reason), opts...); err != nil {
				return err // the gate's refusal, as it gives it
			}
			e.printWarnings()
			if dryRun == "server" {
				fmt.Fprintf(e.Out, "\nDry run: the gate accepts this mark; nothing was stored.\n")
				return nil
			}
			fmt.Fprintf(e.Out, "\nForeignCluster %s is marked permanently unreachable (stamped by the gate: marked-by=%s, marked-at=%s).\n"+
				"The janitor waits out its grace period, showing its plan on the ForeignCluster; undo within it with:\n"+
				"  kubectl liqo-janitor unmark %s\nFollow it with: kubectl liqo-janitor status %s --watch\n",
				fc.Name, marked.Annotations[liqojanitor.MarkedByAnnotation], marked.Annotations[liqojanitor.MarkedAtAnnotation], fc.Name, fc.Name)
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the provider is gone for good (quoted in the clean-up's events)")
	cmd.Flags().BoolVar(&yes, "yes", false, "skip typing the cluster ID (for automation)")
	cmd.Flags().StringVar(&dryRun, "dry-run", "none", `"server" sends the mark through the gate without storing it`)
	return cmd
}

// confirm asks the operator to type the cluster ID: the second key, typed, not pasted from a denial.
func (e *env) confirm(fc *liqov1beta1.ForeignCluster) error {
	fmt.Fprintf(e.Out, "\nThis cannot be undone once the grace period ends: what is released is not restored.\n"+
		"Type the cluster ID (%s) to confirm: ", fc.Spec.ClusterID)
	line, err := bufio.NewReader(e.In).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("reading the confirmation: %w", err)
	}
	if got := strings.TrimSpace(line); got != string(fc.Spec.ClusterID) {
		return fmt.Errorf("you typed %q, not the cluster ID %q: nothing was written", got, fc.Spec.ClusterID)
	}
	return nil
}

func (e *env) statusCommand() *cobra.Command {
	var watch bool
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "status [<cluster-id|foreigncluster>]",
		Short: "Show marked ForeignClusters: stamps, the grace-window plan or the clean-up's progress, the last events",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			if !watch {
				return e.printStatus(cmd.Context(), c, args)
			}
			if interval <= 0 {
				return fmt.Errorf("--interval=%s: give a positive duration, e.g. --interval=2s", interval)
			}
			return e.watchStatus(cmd.Context(), c, args, interval)
		},
	}
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "refresh until interrupted (in place on a terminal, plain lines otherwise)")
	cmd.Flags().DurationVar(&interval, "interval", 2*time.Second, "how often --watch refreshes")
	return cmd
}

func (e *env) watchStatus(ctx context.Context, c client.Client, args []string, interval time.Duration) error {
	f, isFile := e.Out.(*os.File)
	tty := isFile && term.IsTerminal(int(f.Fd()))
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if tty {
			fmt.Fprint(e.Out, "\033[H\033[2J")
		} else {
			fmt.Fprintf(e.Out, "--- %s\n", time.Now().UTC().Format(time.RFC3339))
		}
		if err := e.printStatus(ctx, c, args); err != nil {
			if ctx.Err() != nil {
				return nil // interrupted mid-refresh
			}
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func (e *env) printStatus(ctx context.Context, c client.Client, args []string) error {
	var fcs []liqov1beta1.ForeignCluster
	if len(args) == 1 {
		fc, err := foreignCluster(ctx, c, args[0])
		if err != nil {
			return err
		}
		fcs = append(fcs, *fc)
	} else {
		var list liqov1beta1.ForeignClusterList
		if err := c.List(ctx, &list); err != nil {
			return fmt.Errorf("listing ForeignClusters: %w", err)
		}
		for _, fc := range list.Items {
			if liqojanitor.IsMarked(fc.Annotations) {
				fcs = append(fcs, fc)
			}
		}
		if len(fcs) == 0 {
			fmt.Fprintln(e.Out, "No ForeignCluster is marked permanently unreachable.")
			return nil
		}
	}
	var events eventsv1.EventList
	if err := c.List(ctx, &events); err != nil {
		return fmt.Errorf("listing events: %w", err)
	}
	for i := range fcs {
		printOne(e.Out, &fcs[i], events.Items)
	}
	return nil
}

func printOne(out io.Writer, fc *liqov1beta1.ForeignCluster, events []eventsv1.Event) {
	a := fc.Annotations
	state := "not marked"
	if liqojanitor.IsMarked(a) {
		state = "marked permanently unreachable"
		if !liqojanitor.Confirmed(fc) {
			state += ", NOT confirmed"
		}
		if liqojanitor.Paused(fc) {
			state += ", paused"
		}
	}
	fmt.Fprintf(out, "%s (cluster ID %s): %s\n", fc.Name, fc.Spec.ClusterID, state)
	if by := a[liqojanitor.MarkedByAnnotation]; by != "" {
		at, _ := liqojanitor.MarkedAt(fc)
		fmt.Fprintf(out, "  marked by %s at %s (%s ago)\n", by, at.UTC().Format(time.RFC3339), time.Since(at).Round(time.Second))
	}
	if r := a[liqojanitor.ReasonAnnotation]; r != "" {
		fmt.Fprintf(out, "  reason: %q\n", r)
	}
	if s := a[liqojanitor.CleanupAnnotation]; s != "" {
		fmt.Fprintf(out, "  cleanup: %s\n", s)
	}
	var mine []eventsv1.Event
	for _, ev := range events {
		if ev.Regarding.Kind == "ForeignCluster" && ev.Regarding.Name == fc.Name && ev.ReportingController == "liqo-janitor" {
			mine = append(mine, ev)
		}
	}
	slices.SortFunc(mine, func(x, y eventsv1.Event) int { return eventTime(x).Compare(eventTime(y)) })
	if len(mine) > 3 {
		mine = mine[len(mine)-3:]
	}
	for _, ev := range mine {
		fmt.Fprintf(out, "  %s  %s: %s\n", eventTime(ev).UTC().Format(time.TimeOnly), ev.Reason, ev.Note)
	}
}

func eventTime(ev eventsv1.Event) time.Time {
	if ev.Series != nil {
		return ev.Series.LastObservedTime.Time
	}
	return ev.EventTime.Time
}

// pauseCommand is `pause` (pause=true) or `resume`.
func (e *env) pauseCommand(pause bool) *cobra.Command {
	use, short := "resume", "Let the janitor go on (on a marked cluster this is break-glass: it needs verb mark-unreachable)"
	if pause {
		use, short = "pause", "Stop the janitor on this cluster (anyone with update on ForeignClusters may)"
	}
	return &cobra.Command{
		Use: use + " <cluster-id|foreigncluster>", Short: short, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, fc, err := e.resolve(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			patch := annotationsPatch(nil, []string{liqojanitor.PausedAnnotation})
			if pause {
				patch = annotationsPatch(map[string]string{liqojanitor.PausedAnnotation: "true"}, nil)
			}
			if err := c.Patch(cmd.Context(), fc, patch); err != nil {
				return err
			}
			e.printWarnings()
			if pause {
				fmt.Fprintf(e.Out, "ForeignCluster %s is paused: the janitor writes nothing for it until kubectl liqo-janitor resume %s\n", fc.Name, fc.Name)
			} else {
				fmt.Fprintf(e.Out, "ForeignCluster %s is no longer paused.\n", fc.Name)
			}
			return nil
		},
	}
}

func (e *env) unmarkCommand() *cobra.Command {
	return &cobra.Command{
		Use: "unmark <cluster-id|foreigncluster>", Short: "Remove the mark (what was already released is not restored)",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, fc, err := e.resolve(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if !liqojanitor.IsMarked(fc.Annotations) {
				return fmt.Errorf("ForeignCluster %s is not marked: nothing to remove", fc.Name)
			}
			if err := c.Patch(cmd.Context(), fc, annotationsPatch(nil, []string{liqojanitor.MarkAnnotation})); err != nil {
				return err
			}
			e.printWarnings() // the gate's: what was released is not restored
			fmt.Fprintf(e.Out, "The mark is removed from ForeignCluster %s; the gate dropped its stamps and confirmation.\n", fc.Name)
			return nil
		},
	}
}

func (e *env) canICommand() *cobra.Command {
	return &cobra.Command{
		Use:   "can-i [<cluster-id|foreigncluster>]",
		Short: "Say whether you hold the break-glass verb mark-unreachable (exit status 1 if not)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			name := ""
			if len(args) == 1 {
				fc, err := foreignCluster(cmd.Context(), c, args[0])
				if err != nil {
					return err
				}
				name = fc.Name
			}
			ok, err := mayMark(cmd.Context(), c, name)
			if err != nil {
				return err
			}
			if ok {
				fmt.Fprintln(e.Out, "yes")
				return nil
			}
			fmt.Fprintln(e.Out, "no")
			return fmt.Errorf("you may not set, remove or unpause the mark: a cluster admin can grant it with "+
				"kubectl create clusterrolebinding mark-unreachable-<you> --clusterrole=%s --user=<you>", webhook.MarkRoleName)
		},
	}
}

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use: "version", Short: "Print the plugin's version", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "kubectl-liqo_janitor %s\n", version)
			return err
		},
	}
}
