package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
	"github.com/liqo-janitor/liqo-janitor/janitor"
)

// janitorController is the reportingController of the janitor's events (its recorder,
// mgr.GetEventRecorder(janitor.ReportingController) in janitor/controller_setup.go).
const janitorController = janitor.ReportingController

// eventsNamespace is where the events about a ForeignCluster land: client-go's events recorder puts those
// about a cluster-scoped object in "default" (k8s.io/client-go/tools/events, makeEvent).
const eventsNamespace = metav1.NamespaceDefault

// shownEvents is how many of a ForeignCluster's last events status shows.
const shownEvents = 3

func (e *env) statusCommand() *cobra.Command {
	var watch bool
	var interval time.Duration
	var format *output.Flag
	var janitorNS string
	cmd := &cobra.Command{
		Use:   "status [<cluster-id|foreigncluster>]",
		Short: "Show marked ForeignClusters: stamps, the grace window, the plan or the clean-up's progress, the janitor's last events",
		Example: `  # every marked ForeignCluster
  kubectl liqo-janitor status

  # one, refreshed every 2s until interrupted
  kubectl liqo-janitor status provider-a --watch

  # for a script: the marked clusters whose provider answered again
  kubectl liqo-janitor status -o json | jq -r '.clusters[] | select(.returned) | .foreignCluster'`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: e.completeClusters(isMarked),
		RunE: func(cmd *cobra.Command, args []string) error {
			if watch && interval <= 0 {
				return fmt.Errorf("--interval=%s: give a positive duration, e.g. --interval=2s", interval)
			}
			if watch && format.Document() {
				return errors.New("--watch prints tables: leave out -o, or --watch to print one document")
			}
			c, err := e.Client()
			if err != nil {
				return err
			}
			ns, err := cli.FindJanitorNamespace(cmd.Context(), c, janitorNS)
			if err != nil {
				return err
			}
			read := statusReader{c: c, janitor: ns, args: args}
			if format.Document() {
				r, err := read.statusOf(cmd.Context(), time.Now())
				if err != nil {
					return err
				}
				return format.Print(e.Out, r)
			}
			if !watch {
				return e.printStatus(cmd.Context(), read)
			}
			return e.watchStatus(cmd.Context(), read, interval)
		},
	}
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "refresh until interrupted (in place on a terminal, plain lines otherwise)")
	cmd.Flags().DurationVar(&interval, "interval", 2*time.Second, "how often --watch refreshes")
	format = output.AddFlag(cmd)
	cli.AddJanitorNamespaceFlag(cmd, &janitorNS)
	return cmd
}

// statusReader reads the status of the ForeignCluster args name (or of every marked one), with the
// janitor's brake and records from its namespace.
type statusReader struct {
	c       client.Client
	janitor cli.JanitorNamespace
	args    []string
}

func (e *env) watchStatus(ctx context.Context, read statusReader, interval time.Duration) error {
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
		if err := e.printStatus(ctx, read); err != nil {
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

func (e *env) printStatus(ctx context.Context, read statusReader) error {
	r, err := read.statusOf(ctx, time.Now())
	if err != nil {
		return err
	}
	for _, b := range r.Brakes {
		reason := ""
		if b.Reason != "" {
			reason = fmt.Sprintf(" (reason: \"%s\")", b.Reason)
		}
		fmt.Fprintf(e.Out, "BRAKE SET: liqo-janitor releases nothing for any cluster while ConfigMap %s/%s exists%s. "+
			"Delete it to go on: kubectl -n %s delete configmap %s\n", b.Namespace, liqojanitor.BrakeConfigMap, reason, b.Namespace, liqojanitor.BrakeConfigMap)
	}
	if len(r.Clusters) == 0 {
		fmt.Fprintln(e.Out, "No ForeignCluster is marked permanently unreachable.")
	}
	for _, cs := range r.Clusters {
		printOne(e.Out, &cs, r.Time.Time)
	}
	r.Janitor.printIgnored(e.Out) // last: what the plugin did not read is not the news
	return nil
}

// statusOf reads the status of the ForeignCluster an argument names, or without one of every marked
// ForeignCluster, at now.
func (read statusReader) statusOf(ctx context.Context, now time.Time) (*statusReport, error) {
	c := read.c
	fcs, err := statusClusters(ctx, c, read.args)
	if err != nil {
		return nil, err
	}
	janitorView := readJanitorView(ctx, c, read.janitor, liqojanitor.BrakeConfigMap, liqojanitor.RecordsConfigMap,
		liqojanitor.FenceRenewalsConfigMap)
	r := &statusReport{TypeMeta: output.TypeMeta("StatusReport"), Time: metav1.NewTime(now.UTC().Truncate(time.Second)), Clusters: []clusterStatus{},
		Janitor: janitorView, Brakes: janitorView.brakes()}
	var all []liqov1beta1.ForeignCluster // for the storm count, listed once
	var listErr error
	if len(fcs) > 0 {
		all, listErr = listForeignClusters(ctx, c)
	}
	for _, fc := range fcs {
		events, err := janitorEvents(ctx, c, fc)
		if err != nil {
			return nil, err
		}
		cs := clusterStatusOf(fc, events, now)
		cs.Evidence = evidenceOf(fc, all, listErr)
		cs.ProviderFence = providerFenceOf(janitorView, fc)
		if cs.Marked && cs.Returned == nil {
			cs.Probe = probeStatusOf(ctx, c, fc, janitorView.records, janitorView.Unread)
		}
		r.Clusters = append(r.Clusters, cs)
	}
	return r, nil
}

// statusClusters is the ForeignCluster an argument names, or without one every marked ForeignCluster.
func statusClusters(ctx context.Context, c client.Client, args []string) ([]*liqov1beta1.ForeignCluster, error) {
	if len(args) == 1 {
		fc, err := cli.ForeignCluster(ctx, c, args[0])
		if err != nil {
			return nil, err
		}
		return []*liqov1beta1.ForeignCluster{fc}, nil
	}
	var list liqov1beta1.ForeignClusterList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing ForeignClusters: %w", err)
	}
	var marked []*liqov1beta1.ForeignCluster
	for i := range list.Items {
		if liqojanitor.IsMarked(list.Items[i].Annotations) {
			marked = append(marked, &list.Items[i])
		}
	}
	return marked, nil
}

// janitorEvents lists the last events the janitor wrote about fc, oldest first: events.k8s.io/v1 Events
// in eventsNamespace whose regarding.uid is fc's UID (not an earlier ForeignCluster of the same name) and
// whose reportingController is the janitor's, selected by the API server and checked again here. Anyone
// who may create events could write that reportingController; the chart's ValidatingAdmissionPolicy lets
// only the janitor's ServiceAccount write events with it, so these are the janitor's words.
func janitorEvents(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster) ([]eventsv1.Event, error) {
	var list eventsv1.EventList
	if err := c.List(ctx, &list, client.InNamespace(eventsNamespace),
		client.MatchingFields{"regarding.uid": string(fc.UID), "reportingController": janitorController}); err != nil {
		return nil, fmt.Errorf("listing the janitor's events in namespace %s: %w", eventsNamespace, err)
	}
	events := slices.DeleteFunc(list.Items, func(ev eventsv1.Event) bool {
		return ev.Regarding.UID != fc.UID || ev.ReportingController != janitorController
	})
	slices.SortFunc(events, func(x, y eventsv1.Event) int { return eventTime(x).Compare(eventTime(y)) })
	return events[max(len(events)-shownEvents, 0):], nil
}

// printOne prints one cluster's status for a person (its text already escaped by clusterStatusOf).
func printOne(out io.Writer, cs *clusterStatus, now time.Time) {
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
		printEvidence(out, "  ", cs.Evidence, cs.Probe.line(), now)
	}
	printProviderFence(out, "  ", cs.ProviderFence, cs.Marked, now)
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
func returnedLine(cs *clusterStatus) string {
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

func markState(cs *clusterStatus) string {
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

// withoutCountdown is a cleanup annotation without a grace-window plan's countdown (the janitor writes the
// time left once per change of the plan: read later, it is stale; the grace period line shows the
// window): "grace: would release …".
func withoutCountdown(cleanup string) string {
	if plan, ok := liqojanitor.ParseGracePlan(cleanup); ok {
		return "grace: " + plan.Plan
	}
	return cleanup
}

func eventTime(ev eventsv1.Event) time.Time {
	switch {
	case ev.Series != nil:
		return ev.Series.LastObservedTime.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.CreationTimestamp.Time
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
