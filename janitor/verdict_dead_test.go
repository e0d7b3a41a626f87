package janitor

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor/internal/release"
)

var now = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func cluster(id string, ann map[string]string, status liqov1beta1.ConditionStatusType) *liqov1beta1.ForeignCluster {
	fc := &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: id, Annotations: ann,
		Labels: map[string]string{liqojanitor.RemoteClusterIDLabel: id}},
		Spec: liqov1beta1.ForeignClusterSpec{ClusterID: liqov1beta1.ClusterID(id)}}
	if status != "" {
		fc.Status.Conditions = []liqov1beta1.Condition{{Type: liqov1beta1.APIServerStatusCondition, Status: status}}
	}
	return fc
}

func marked(extra ...string) map[string]string {
	m := map[string]string{liqojanitor.MarkAnnotation: "true", liqojanitor.ConfirmAnnotation: "x",
		liqojanitor.MarkedAtAnnotation: now.Add(-time.Minute).Format(time.RFC3339)}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}

func TestTheZeroLivenessIsNotDead(t *testing.T) {
	if (liveness{}).Dead() {
		t.Fatal("liveness{}.Dead() = true: a cluster nobody assessed must never count as dead")
	}
}

func TestAPlanTakesTheJanitorsRecordedGraceWindow(t *testing.T) {
	now := time.Now()
	dead := liveness{dead: true}
	for name, tc := range map[string]struct {
		l        liveness
		ends     string
		want     WaitReason
		wantLeft time.Duration
	}{
		"an assumed grace period has passed, the janitor's window has not": {
			l: dead, ends: now.Add(time.Hour).Format(time.RFC3339Nano), want: WaitGracePeriod, wantLeft: time.Hour},
		"an assumed grace period runs, the janitor's window is over": {
			l: liveness{Wait: WaitGracePeriod, GraceLeft: 20 * time.Second}, ends: now.Add(-time.Minute).Format(time.RFC3339), want: NotWaiting},
		"no record: in the grace period, nothing left is known": {l: dead, want: WaitGracePeriod},
		"a record of an earlier mark is none": {
			l: dead, ends: now.Add(-2 * time.Hour).Format(time.RFC3339), want: WaitGracePeriod},
		"another reason to wait stays": {
			l: liveness{Wait: WaitPaused}, ends: now.Add(-time.Minute).Format(time.RFC3339), want: WaitPaused},
	} {
		t.Run(name, func(t *testing.T) {
			fc := cluster("x", marked(liqojanitor.MarkedAtAnnotation, now.Add(-time.Hour).Format(time.RFC3339)), "")
			if tc.ends != "" {
				fc.Annotations[liqojanitor.GraceEndsAnnotation] = tc.ends
			}
			got := recordedWindow(fc, tc.l, now)
			if got.Wait != tc.want || got.Dead() != (tc.want == NotWaiting) || got.GraceLeft != tc.wantLeft {
				t.Fatalf("recordedWindow() = %+v, want wait %q, left %s", got, tc.want, tc.wantLeft)
			}
		})
	}
}

func TestAssess(t *testing.T) {
	t.Parallel()
	grace := 30 * time.Second
	tests := map[string]struct {
		fc        *liqov1beta1.ForeignCluster
		firstSeen time.Time
		want      WaitReason
		wantLeft  time.Duration
	}{
		"a confirmed mark older than the grace period on an unreachable cluster is dead": {
			fc: cluster("x", marked(), liqov1beta1.ConditionStatusError), want: NotWaiting},
		"no APIServerStatus condition counts as unreachable": {
			fc: cluster("x", marked(), ""), want: NotWaiting},
		"no mark is not dead": {
			fc: cluster("x", nil, liqov1beta1.ConditionStatusError), want: WaitNotMarked},
		"a mark other than true is not dead": {
			fc: cluster("x", marked(liqojanitor.MarkAnnotation, "True"), ""), want: WaitNotMarked},
		"an unconfirmed mark is not dead": {
			fc: cluster("x", marked(liqojanitor.ConfirmAnnotation, ""), ""), want: WaitUnconfirmed},
		"a confirmation naming another cluster is not dead": {
			fc: cluster("x", marked(liqojanitor.ConfirmAnnotation, "y"), ""), want: WaitUnconfirmed},
		"a cluster Liqo sees Established is not dead": {
			fc: cluster("x", marked(), liqov1beta1.ConditionStatusEstablished), want: WaitReachable},
		"a paused cluster is not dead": {
			fc: cluster("x", marked(liqojanitor.PausedAnnotation, "true"), ""), want: WaitPaused},
		"a mark younger than the grace period waits for the rest of it": {
			fc:   cluster("x", marked(liqojanitor.MarkedAtAnnotation, now.Add(-10*time.Second).Format(time.RFC3339)), ""),
			want: WaitGracePeriod, wantLeft: 20 * time.Second},
		"without marked-at the grace period runs from first sight": {
			fc: cluster("x", marked(liqojanitor.MarkedAtAnnotation, ""), ""), firstSeen: now.Add(-5 * time.Second),
			want: WaitGracePeriod, wantLeft: 25 * time.Second},
		"a marked-at older than the janitor's first sight does not shorten the window (a forged stamp, or the janitor was down)": {
			fc:        cluster("x", marked(liqojanitor.MarkedAtAnnotation, now.Add(-time.Hour).Format(time.RFC3339)), liqov1beta1.ConditionStatusError),
			firstSeen: now.Add(-5 * time.Second), want: WaitGracePeriod, wantLeft: 25 * time.Second},
		"a ForeignCluster without Liqo's label is not the one Liqo probes: not dead": {
			fc: func() *liqov1beta1.ForeignCluster {
				fc := cluster("x", marked(), liqov1beta1.ConditionStatusError)
				fc.Labels = nil
				return fc
			}(), want: WaitNotFoundByLiqo},
		"a ForeignCluster whose Liqo label names another cluster is not dead": {
			fc: func() *liqov1beta1.ForeignCluster {
				fc := cluster("x", marked(), liqov1beta1.ConditionStatusError)
				fc.Labels[liqojanitor.RemoteClusterIDLabel] = "y"
				return fc
			}(), want: WaitNotFoundByLiqo},
		"an unreadable marked-at falls back to first sight": {
			fc: cluster("x", marked(liqojanitor.MarkedAtAnnotation, "yesterday"), ""), firstSeen: now.Add(-time.Hour), want: NotWaiting},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			first := tc.firstSeen
			if first.IsZero() {
				first = now.Add(-time.Hour) // the janitor saw the mark long ago
			}
			got := assess(tc.fc, observed{firstSeen: first}, now, grace)
			if got.Wait != tc.want || got.GraceLeft != tc.wantLeft {
				t.Fatalf("assess() = %+v, want wait %q, grace left %s", got, tc.want, tc.wantLeft)
			}
			if got.Dead() != (tc.want == NotWaiting) {
				t.Fatalf("Dead() = %v", got.Dead())
			}
		})
	}
}

func nsMap(name, cluster string, desired ...string) offloadingv1beta1.NamespaceMap {
	m := offloadingv1beta1.NamespaceMap{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{liqojanitor.RemoteClusterIDLabel: cluster}}}
	m.Spec.DesiredMapping = map[string]string{}
	for _, ns := range desired {
		m.Spec.DesiredMapping[ns] = ns + "-remote"
	}
	return m
}

func offloading(ns string, keys ...string) *offloadingv1beta1.NamespaceOffloading {
	nso := &offloadingv1beta1.NamespaceOffloading{ObjectMeta: metav1.ObjectMeta{Name: "offloading", Namespace: ns}}
	nso.Status.RemoteNamespacesConditions = map[string]offloadingv1beta1.RemoteNamespaceConditions{}
	for _, k := range keys {
		nso.Status.RemoteNamespacesConditions[k] = nil
	}
	return nso
}

func TestOffloadingWaitsFor(t *testing.T) {
	t.Parallel()
	dead := map[string]bool{"dead": true, "dead2": true, "live": false}
	tests := map[string]struct {
		nso      *offloadingv1beta1.NamespaceOffloading
		labelled bool
		maps     []offloadingv1beta1.NamespaceMap
		waitsFor string // a fragment of what it waits for; "" means released
		tiedX    bool
	}{
		"only the dead cluster's entry left, Liqo's local steps done: released": {
			nso: offloading("app", "dead"), maps: []offloadingv1beta1.NamespaceMap{nsMap("dead", "dead")}, tiedX: true},
		"entries of two dead clusters: released": {
			nso:  offloading("app", "dead", "dead2"),
			maps: []offloadingv1beta1.NamespaceMap{nsMap("dead", "dead"), nsMap("dead2", "dead2")}, tiedX: true},
		"an entry whose NamespaceMap is gone counts as dead": {
			nso: offloading("app", "dead"), tiedX: true},
		"the namespace still carries the scheduling label: Liqo has not started, kept": {
			nso: offloading("app", "dead"), labelled: true, maps: []offloadingv1beta1.NamespaceMap{nsMap("dead", "dead")},
			waitsFor: "namespace app still carries liqo.io/scheduling-enabled", tiedX: true},
		"the dead cluster's own NamespaceMap still desires the namespace: Liqo's second step has not run, kept": {
			nso: offloading("app", "dead"), maps: []offloadingv1beta1.NamespaceMap{nsMap("dead", "dead", "app")},
			waitsFor: "NamespaceMap /dead (cluster dead) still lists namespace app", tiedX: true},
		"a live NamespaceMap still listing the namespace keeps it, even without its entry": {
			nso:      offloading("app", "dead"),
			maps:     []offloadingv1beta1.NamespaceMap{nsMap("dead", "dead"), nsMap("live", "live", "app")},
			waitsFor: "NamespaceMap /live (cluster live) still lists namespace app", tiedX: true},
		"an entry of a live cluster keeps it": {
			nso:      offloading("app", "dead", "live"),
			maps:     []offloadingv1beta1.NamespaceMap{nsMap("dead", "dead"), nsMap("live", "live")},
			waitsFor: "on live cluster live is not gone yet", tiedX: true},
		"a NamespaceMap listing another namespace does not keep it": {
			nso:  offloading("app", "dead"),
			maps: []offloadingv1beta1.NamespaceMap{nsMap("dead", "dead", "other"), nsMap("live", "live", "other")}, tiedX: true},
		"a NamespaceMap of a cluster with no ForeignCluster counts as live": {
			nso: offloading("app", "dead", "mystery"), maps: []offloadingv1beta1.NamespaceMap{nsMap("mystery", "unknown")},
			waitsFor: "on live cluster unknown", tiedX: true},
		"keys are mapped through the NamespaceMap label, not the name": {
			nso: offloading("app", "nm-1"), maps: []offloadingv1beta1.NamespaceMap{nsMap("nm-1", "dead")}, tiedX: true},
		"an offloading that does not mention the cluster is not tied to it": {
			nso: offloading("app", "dead2"), maps: []offloadingv1beta1.NamespaceMap{nsMap("dead2", "dead2")}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := offloadingWaitsFor(tc.nso, tc.labelled, tc.maps, maps.Clone(dead))
			if (got == "") != (tc.waitsFor == "") || !strings.Contains(got, tc.waitsFor) {
				t.Errorf("offloadingWaitsFor() = %q, want %q", got, tc.waitsFor)
			}
			if got := mentions(tc.nso, "dead", tc.maps); got != tc.tiedX {
				t.Errorf("mentions() = %v, want %v", got, tc.tiedX)
			}
		})
	}
}

func TestAssessClusterID(t *testing.T) {
	t.Parallel()
	dup := func(name, id string, ann map[string]string, status liqov1beta1.ConditionStatusType) liqov1beta1.ForeignCluster {
		fc := cluster(id, ann, status)
		fc.Name = name
		return *fc
	}
	confirmed := func(id string) map[string]string { return marked(liqojanitor.ConfirmAnnotation, id) }
	seen := func(*liqov1beta1.ForeignCluster) observed { return observed{firstSeen: now.Add(-time.Hour)} }
	tests := map[string]struct {
		fcs       []liqov1beta1.ForeignCluster
		want      WaitReason
		duplicate string
		deadIDs   map[string]bool
	}{
		"a lone dead ForeignCluster: its cluster ID is dead": {
			fcs:  []liqov1beta1.ForeignCluster{dup("x", "x", confirmed("x"), liqov1beta1.ConditionStatusError)},
			want: NotWaiting, deadIDs: map[string]bool{"x": true}},
		"a marked duplicate of a live, unmarked provider condemns nothing": {
			fcs: []liqov1beta1.ForeignCluster{dup("x", "live", confirmed("live"), ""),
				dup("live", "live", nil, liqov1beta1.ConditionStatusEstablished)},
			want: WaitDuplicate, duplicate: "live", deadIDs: map[string]bool{"live": false}},
		"a paused duplicate keeps the cluster ID alive": {
			fcs: []liqov1beta1.ForeignCluster{dup("x", "y", confirmed("y"), ""),
				dup("y", "y", marked(liqojanitor.ConfirmAnnotation, "y", liqojanitor.PausedAnnotation, "true"), "")},
			want: WaitDuplicate, duplicate: "y", deadIDs: map[string]bool{"y": false}},
		"two dead ForeignClusters of one cluster ID: dead": {
			fcs: []liqov1beta1.ForeignCluster{dup("x", "y", confirmed("y"), ""),
				dup("y", "y", confirmed("y"), liqov1beta1.ConditionStatusError)},
			want: NotWaiting, deadIDs: map[string]bool{"y": true}},
		"its own reason comes first": {
			fcs: []liqov1beta1.ForeignCluster{dup("x", "y", confirmed("y"), liqov1beta1.ConditionStatusEstablished),
				dup("y", "y", nil, "")},
			want: WaitReachable, deadIDs: map[string]bool{"y": false}},
		"another ForeignCluster carrying the cluster ID's label, whatever its spec, keeps it alive": {
			fcs: []liqov1beta1.ForeignCluster{dup("x", "x", confirmed("x"), liqov1beta1.ConditionStatusError),
				func() liqov1beta1.ForeignCluster {
					fc := dup("impostor", "other", nil, "")
					fc.Labels[liqojanitor.RemoteClusterIDLabel] = "x"
					return fc
				}()},
			want: WaitDuplicate, duplicate: "impostor", deadIDs: map[string]bool{"x": false, "other": false}},
		"other cluster IDs do not matter": {
			fcs:  []liqov1beta1.ForeignCluster{dup("x", "x", confirmed("x"), ""), dup("z", "z", nil, "")},
			want: NotWaiting, deadIDs: map[string]bool{"x": true, "z": false}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fc, got := assessClusterID(tc.fcs, "x", seen, now, 30*time.Second)
			if fc == nil || fc.Name != "x" || got.Wait != tc.want || got.Duplicate != tc.duplicate {
				t.Fatalf("assessClusterID() = %v, %+v; want wait %q, duplicate %q", fc, got, tc.want, tc.duplicate)
			}
			if ids := deadClusterIDs(tc.fcs, seen, now, 30*time.Second); !reflect.DeepEqual(ids, tc.deadIDs) {
				t.Fatalf("deadClusterIDs() = %v, want %v", ids, tc.deadIDs)
			}
		})
	}
	if fc, got := assessClusterID(nil, "x", seen, now, time.Second); fc != nil || got.Dead() {
		t.Fatalf("a missing ForeignCluster: %v, %+v", fc, got)
	}
}

// TestTheRecordCarriesOn: a pass's summary is derived from the record it read on the ForeignCluster and
// from what it did, so it counts on across passes, restarts and failovers (janitor rule 8).
func TestTheRecordCarriesOn(t *testing.T) {
	t.Parallel()
	kinds := []string{"Pod", "ResourceSlice", "NamespaceOffloading", "Renew"}
	targets := []target{{kind: "Pod"}, {kind: "ResourceSlice"}, {kind: "NamespaceOffloading"}, {kind: "Renew"}}
	withFirstSight := true
	prev := parseProgress("pods 100/120, resourceslices 3/3, namespaceoffloadings 1/2, blocked 1, waiting for Liqo: app-a", withFirstSight, kinds)
	tl := newTally(targets)
	for i := range 18 {
		tl.add("Pod", types.UID(fmt.Sprint("pod-", i)), release.Released, nil)
	}
	tl.add("Pod", "pod-x", release.ReleasedButBlocked, nil) // force-deleted, but someone else's finalizer holds it
	tl.add("Pod", "pod-y", release.Blocked, nil)
	tl.add("NamespaceOffloading", "nso-2", release.Waiting, nil)
	next := prev.after(tl)
	got := next.summary(kinds, 2, []string{"app-b", "app-a"}, false)
	if want := "pods 118/120, resourceslices 3/3, namespaceoffloadings 1/2, blocked 2, waiting for Liqo: app-a, app-b"; got != want {
		t.Fatalf("summary = %q, want %q", got, want)
	}
	if !next.started() || next.complete() {
		t.Fatalf("started %v, complete %v", next.started(), next.complete())
	}

	// a new leader finds the blocked pods gone and nothing left: it finishes the same record
	done := parseProgress(got, withFirstSight, kinds).after(newTally(targets))
	if got := done.summary(kinds, 0, nil, false); got != "pods 120/120, resourceslices 3/3, namespaceoffloadings 2/2" {
		t.Fatalf("finished summary = %q", got)
	}
	if !done.complete() {
		t.Fatal("a record with nothing left is complete")
	}
	if again := done.after(newTally(targets)); again.summary(kinds, 0, nil, false) != done.summary(kinds, 0, nil, false) {
		t.Fatal("a finished record stays as it is")
	}

	for name, r := range map[string]progress{
		"a grace-window plan":          parseProgress(liqojanitor.GracePlan{Left: 20 * time.Second, Plan: "would release pods 3"}.String(), withFirstSight, kinds),
		"a summary of an earlier mark": parseProgress("pods 3/3", false, kinds),
		"nothing to release":           parseProgress("nothing to release", withFirstSight, kinds),
	} {
		if r.started() {
			t.Errorf("%s reads as a clean-up in progress: %+v", name, r)
		}
	}
	if got := (progress{}).summary(kinds, 0, nil, false); got != "nothing to release" {
		t.Fatalf("empty summary = %q", got)
	}
	if got := listSome([]string{"d", "c", "b", "a", "e"}, 3); got != "a, b, c and 2 more" {
		t.Fatalf("listSome = %q", got)
	}
}

func TestAPassesFailuresComeBackAsOneBoundedError(t *testing.T) {
	t.Parallel()
	tl := newTally([]target{{kind: "Pod"}, {kind: "ResourceSlice"}})
	if tl.failure() != nil {
		t.Fatal("no failure, no error")
	}
	first := errors.New("connection refused")
	tl.add("Pod", "pod-0", release.Released, nil)
	for i := range 3000 {
		err := first
		if i > 0 {
			err = fmt.Errorf("failure %d", i)
		}
		tl.add("Pod", types.UID(fmt.Sprint("pod-", i+1)), 0, err)
	}
	tl.add("ResourceSlice", "rs-1", release.Blocked, nil)
	err := tl.failure()
	if !errors.Is(err, first) || err.Error() != "3000 of 3002 objects failed, first: connection refused" {
		t.Fatalf("failure() = %v", err)
	}
}
