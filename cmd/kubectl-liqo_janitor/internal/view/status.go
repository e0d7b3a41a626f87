package view

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"golang.org/x/term"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// janitorController is the reportingController of the janitor's events: liqojanitor.Name, the name its
// recorder writes them under (janitor.ReportingController, mgr.GetEventRecorder in
// janitor/controller_setup.go) and the only one the chart's events policy lets its ServiceAccount use.
const janitorController = liqojanitor.Name

// EventsNamespace is where the events about a ForeignCluster land: client-go's events recorder puts those
// about a cluster-scoped object in "default" (k8s.io/client-go/tools/events, makeEvent).
const EventsNamespace = metav1.NamespaceDefault

// shownEvents is how many of a ForeignCluster's last events status shows.
const shownEvents = 3

// StatusReader reads the status of the ForeignCluster Args name (or of every marked one), with the
// janitor's brake and records from its namespace.
type StatusReader struct {
	Client  client.Client
	Janitor cli.JanitorNamespace
	Args    []string
}

// Watch prints the status every interval until ctx ends: in place on a terminal, plain lines after a
// time stamp otherwise.
func (read StatusReader) Watch(ctx context.Context, out io.Writer, interval time.Duration) error {
	f, isFile := out.(*os.File)
	tty := isFile && term.IsTerminal(int(f.Fd()))
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if tty {
			fmt.Fprint(out, "\033[H\033[2J")
		} else {
			fmt.Fprintf(out, "--- %s\n", time.Now().UTC().Format(time.RFC3339))
		}
		if err := read.Print(ctx, out); err != nil {
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

// Print prints the status now, for a person: the brake, each cluster, the look-alikes ignored.
func (read StatusReader) Print(ctx context.Context, out io.Writer) error {
	r, err := read.Read(ctx, time.Now())
	if err != nil {
		return err
	}
	for _, b := range r.Brakes {
		reason := ""
		if b.Reason != "" {
			reason = fmt.Sprintf(" (reason: \"%s\")", b.Reason)
		}
		fmt.Fprintf(out, "BRAKE SET: liqo-janitor releases nothing for any cluster while ConfigMap %s/%s exists%s. "+
			"Delete it to go on: kubectl -n %s delete configmap %s\n", b.Namespace, liqojanitor.BrakeConfigMap, reason, b.Namespace, liqojanitor.BrakeConfigMap)
	}
	if len(r.Clusters) == 0 {
		fmt.Fprintln(out, "No ForeignCluster is marked permanently unreachable.")
	}
	for _, cs := range r.Clusters {
		printOne(out, &cs, r.Time.Time)
	}
	r.Janitor.PrintIgnored(out) // last: what the plugin did not read is not the news
	return nil
}

// Read reads the status of the ForeignCluster an argument names, or without one of every marked
// ForeignCluster, at now.
func (read StatusReader) Read(ctx context.Context, now time.Time) (*StatusReport, error) {
	c := read.Client
	fcs, err := statusClusters(ctx, c, read.Args)
	if err != nil {
		return nil, err
	}
	janitorView := ReadJanitor(ctx, c, read.Janitor, liqojanitor.BrakeConfigMap, liqojanitor.RecordsConfigMap,
		liqojanitor.FenceRenewalsConfigMap)
	r := &StatusReport{TypeMeta: output.TypeMeta("StatusReport"), Time: metav1.NewTime(now.UTC().Truncate(time.Second)), Clusters: []ClusterStatus{},
		Janitor: janitorView, Brakes: janitorView.brakes()}
	var all []liqov1beta1.ForeignCluster // for the storm count, listed once
	var listErr error
	if len(fcs) > 0 {
		all, listErr = ListForeignClusters(ctx, c)
	}
	for _, fc := range fcs {
		events, err := janitorEvents(ctx, c, fc)
		if err != nil {
			return nil, err
		}
		cs := clusterStatusOf(fc, events, now)
		cs.Evidence = EvidenceOf(fc, all, listErr)
		cs.ProviderFence = ProviderFenceOf(janitorView, fc)
		if cs.Marked && cs.Returned == nil {
			cs.Probe = probeOf(ctx, c, fc, janitorView.records, janitorView.Unread)
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
// in EventsNamespace whose regarding.uid is fc's UID (not an earlier ForeignCluster of the same name) and
// whose reportingController is the janitor's, selected by the API server and checked again here. Anyone
// who may create events could write that reportingController; the chart's ValidatingAdmissionPolicy lets
// only the janitor's ServiceAccount write events with it, so these are the janitor's words.
func janitorEvents(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster) ([]eventsv1.Event, error) {
	var list eventsv1.EventList
	if err := c.List(ctx, &list, client.InNamespace(EventsNamespace),
		client.MatchingFields{"regarding.uid": string(fc.UID), "reportingController": janitorController}); err != nil {
		return nil, fmt.Errorf("listing the janitor's events in namespace %s: %w", EventsNamespace, err)
	}
	events := slices.DeleteFunc(list.Items, func(ev eventsv1.Event) bool {
		return ev.Regarding.UID != fc.UID || ev.ReportingController != janitorController
	})
	slices.SortFunc(events, func(x, y eventsv1.Event) int { return eventTime(x).Compare(eventTime(y)) })
	return events[max(len(events)-shownEvents, 0):], nil
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
