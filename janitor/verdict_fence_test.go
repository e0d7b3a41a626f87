package janitor

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// testContract is a provider's contract whose SafeAfter is about 130 s.
var testContract = liqojanitor.FenceContract{FenceAfter: liqojanitor.Duration(time.Minute), Poll: liqojanitor.Duration(5 * time.Second),
	GraceCap: liqojanitor.Duration(10 * time.Second), Failover: liqojanitor.Duration(15 * time.Second),
	Stop: liqojanitor.Duration(30 * time.Second), ProviderClusterID: "x"}

// fenceUntil is the hold of a provider whose fence completes at deadline.
func fenceUntil(deadline time.Time) fenceHold {
	return fenceHold{deadline: deadline, contract: testContract}
}

// TestTheJanitorWaitsForTheProvidersFence (janitor rule 22): a cluster otherwise dead is held until its
// provider's fence deadline, the later of that and the grace period's end wins, an unreadable record holds
// without end, and every other reason to wait comes first.
func TestTheJanitorWaitsForTheProvidersFence(t *testing.T) {
	t.Parallel()
	grace := 30 * time.Second
	deadMark := marked()                                                                             // marked a minute ago, seen an hour ago: the grace period is over
	inGrace := marked(liqojanitor.MarkedAtAnnotation, now.Add(-10*time.Second).Format(time.RFC3339)) // 20 s left
	tests := map[string]struct {
		ann       map[string]string
		fence     fenceHold
		want      WaitReason
		fenceLeft time.Duration
		graceLeft time.Duration
	}{
		"no provider-side fence: dead after the grace period": {ann: deadMark, want: NotWaiting},
		"the deadline ahead: waits for it": {
			ann: deadMark, fence: fenceUntil(now.Add(90 * time.Second)), want: WaitFenceDeadline, fenceLeft: 90 * time.Second},
		"the deadline passed: dead": {ann: deadMark, fence: fenceUntil(now.Add(-time.Second)), want: NotWaiting},
		"the deadline ahead and later than the grace period's end: the deadline wins": {
			ann: inGrace, fence: fenceUntil(now.Add(90 * time.Second)), want: WaitFenceDeadline, fenceLeft: 90 * time.Second,
			graceLeft: 20 * time.Second},
		"the deadline ahead but before the grace period's end: the grace period wins": {
			ann: inGrace, fence: fenceUntil(now.Add(5 * time.Second)), want: WaitGracePeriod, graceLeft: 20 * time.Second},
		"an unreadable record holds past the grace period": {
			ann: deadMark, fence: fenceHold{unreadable: "garbage"}, want: WaitFenceUnreadable},
		"an unreadable record holds in the grace period": {
			ann: inGrace, fence: fenceHold{unreadable: "garbage"}, want: WaitFenceUnreadable, graceLeft: 20 * time.Second},
		"a paused cluster waits for its pause first": {
			ann: marked(liqojanitor.PausedAnnotation, "true"), fence: fenceUntil(now.Add(time.Minute)), want: WaitPaused},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := assess(cluster("x", tc.ann, ""), observed{firstSeen: now.Add(-time.Hour), fence: tc.fence}, now, grace)
			if got.Wait != tc.want || got.FenceLeft != tc.fenceLeft || got.GraceLeft != tc.graceLeft || got.Dead() != (tc.want == NotWaiting) {
				t.Fatalf("assess() = %+v; want wait %q, fence left %s, grace left %s", got, tc.want, tc.fenceLeft, tc.graceLeft)
			}
		})
	}
}

// TestAClusterIDHeldByItsFenceIsNotDeadForOthers: the dead set, on which NamespaceOffloadings spanning
// several clusters are decided, counts a cluster ID its provider's fence holds as not dead (janitor rules 4
// and 22).
func TestAClusterIDHeldByItsFenceIsNotDeadForOthers(t *testing.T) {
	t.Parallel()
	fcs := []liqov1beta1.ForeignCluster{*cluster("x", marked(), ""), *cluster("y", marked(liqojanitor.ConfirmAnnotation, "y"), "")}
	fences := fenceHolds{"x": fenceUntil(now.Add(time.Minute))}
	seen := func(fc *liqov1beta1.ForeignCluster) observed {
		return observed{firstSeen: now.Add(-time.Hour), fence: fences.of(fc.Spec.ClusterID)}
	}
	if got := deadClusterIDs(fcs, seen, now, time.Second); got["x"] || !got["y"] {
		t.Fatalf("deadClusterIDs() = %v, want x held by its fence, y dead", got)
	}
}

// TestAPlanKeepsTheFenceWithTheJanitorsRecordedWindow: PlanCluster's window (recordedWindow) is the
// running janitor's grace window, and the provider's fence holds in it as in the janitor's own verdict.
func TestAPlanKeepsTheFenceWithTheJanitorsRecordedWindow(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		ends  time.Time
		fence fenceHold
		want  WaitReason
	}{
		"the recorded window is over, the deadline ahead":       {ends: now.Add(-time.Minute), fence: fenceUntil(now.Add(time.Minute)), want: WaitFenceDeadline},
		"the recorded window runs beyond the deadline":          {ends: now.Add(2 * time.Minute), fence: fenceUntil(now.Add(time.Minute)), want: WaitGracePeriod},
		"the recorded window is over, the deadline passed":      {ends: now.Add(-time.Minute), fence: fenceUntil(now.Add(-time.Second)), want: NotWaiting},
		"no recorded window, the deadline ahead":                {fence: fenceUntil(now.Add(time.Minute)), want: WaitFenceDeadline},
		"the recorded window is over, the record is unreadable": {ends: now.Add(-time.Minute), fence: fenceHold{unreadable: "x"}, want: WaitFenceUnreadable},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fc := cluster("x", marked(liqojanitor.MarkedAtAnnotation, now.Add(-time.Hour).Format(time.RFC3339)), "")
			if !tc.ends.IsZero() {
				fc.Annotations[liqojanitor.GraceEndsAnnotation] = tc.ends.Format(time.RFC3339Nano)
			}
			assumed := awaitFence(liveness{dead: true}, tc.fence, now) // the plugin's own grace period: over
			if got := recordedWindow(fc, assumed, now); got.Wait != tc.want || got.Dead() != (tc.want == NotWaiting) {
				t.Fatalf("recordedWindow() = %+v, want wait %q", got, tc.want)
			}
		})
	}
}

// TestTheFenceRecordsAreReadSoThatNoneUnreadableReleases: a record with a contract and a renewal that may
// have landed gives the deadline; one without either holds nothing (the provider's agent never armed, or
// there is no provider-side fence); one that does not parse, or whose contract does not, holds its cluster
// ID (janitor rule 22) — it never counts as no record.
func TestTheFenceRecordsAreReadSoThatNoneUnreadableReleases(t *testing.T) {
	t.Parallel()
	landed := now.Add(-time.Minute)
	record := func(r liqojanitor.FenceRenewal) string { return r.String() }
	for name, tc := range map[string]struct {
		value      string
		binary     bool
		deadline   time.Time
		unreadable string
	}{
		"a contract and a landed renewal: the deadline": {
			value:    record(liqojanitor.FenceRenewal{Contract: testContract.String(), LastAck: &landed, LastLanded: &landed}),
			deadline: landed.Add(testContract.SafeAfter())},
		"no contract: nothing to wait for": {value: record(liqojanitor.FenceRenewal{LastAck: &landed, LastLanded: &landed})},
		"no renewal that may have landed: nothing to wait for": {
			value: record(liqojanitor.FenceRenewal{Contract: testContract.String()})},
		"not JSON: held": {value: "{not json", unreadable: "not a fence renewal record"},
		"a contract that does not parse: held": {
			value:      record(liqojanitor.FenceRenewal{Contract: `{"fenceAfter":"0s"}`, LastLanded: &landed}),
			unreadable: "the record's contract"},
		"binary data: held": {value: "{}", binary: true, unreadable: "binary data"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "janitor", Name: liqojanitor.FenceRenewalsConfigMap}}
			if tc.binary {
				cm.BinaryData = map[string][]byte{"x": []byte(tc.value)}
			} else {
				cm.Data = map[string]string{"x": tc.value}
			}
			got := fenceHoldsIn(cm).of("x")
			if !got.deadline.Equal(tc.deadline) || !strings.Contains(got.unreadable, tc.unreadable) || (tc.unreadable == "") != (got.unreadable == "") {
				t.Fatalf("fenceHoldsIn() = %+v, want deadline %s, unreadable %q", got, tc.deadline, tc.unreadable)
			}
			if tc.unreadable != "" && !strings.Contains(got.unreadable, "key x of ConfigMap janitor/"+liqojanitor.FenceRenewalsConfigMap) {
				t.Fatalf("the hold does not say which record: %q", got.unreadable)
			}
		})
	}
}

// TestAFenceRecordThatCannotBeReadIsNoVerdict: no ConfigMap is no provider-side fence; a ConfigMap the API
// server does not give is an error, so no verdict is made and nothing is released (janitor rule 22).
func TestAFenceRecordThatCannotBeReadIsNoVerdict(t *testing.T) {
	t.Parallel()
	base := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).Build()
	if err := corev1.AddToScheme(base.Scheme()); err != nil {
		t.Fatal(err)
	}
	holds, err := fenceRecords{reader: base, namespace: "janitor"}.read(context.Background())
	if err != nil || len(holds) != 0 {
		t.Fatalf("no ConfigMap: %v, %v; want no hold and no error", holds, err)
	}
	failing := interceptor.NewClient(base, interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		return errors.New("connection refused")
	}})
	if _, err := (fenceRecords{reader: failing, namespace: "janitor"}).read(context.Background()); err == nil ||
		!strings.Contains(err.Error(), "nothing is released until they can be read") {
		t.Fatalf("an unreadable ConfigMap: %v; want an error that says nothing is released", err)
	}
}

// TestOnlyTheGatesStampedOverrideLiftsTheFenceWait (janitor rule 22, gate rule 31): a mark set over the
// deadline with the override, which the gate stamped in the marking request (the user of marked-by, at
// marked-at), is not held; an override without the stamp, a stamp of another user or time, or one naming
// another cluster is written past the gate and holds as if there were none.
func TestOnlyTheGatesStampedOverrideLiftsTheFenceWait(t *testing.T) {
	t.Parallel()
	at := now.Add(-time.Minute)
	stamp := liqojanitor.FenceDeadlineOverride{At: at, By: "alice", Deadline: now.Add(time.Minute)}.String()
	for name, tc := range map[string]struct {
		ann    map[string]string
		lifted bool
	}{
		"stamped by the gate": {lifted: true, ann: marked(liqojanitor.MarkedByAnnotation, "alice",
			liqojanitor.OverrideFenceDeadlineAnnotation, "x", liqojanitor.FenceDeadlineOverriddenAnnotation, stamp)},
		"no stamp": {ann: marked(liqojanitor.MarkedByAnnotation, "alice", liqojanitor.OverrideFenceDeadlineAnnotation, "x")},
		"another user's stamp": {ann: marked(liqojanitor.MarkedByAnnotation, "bob",
			liqojanitor.OverrideFenceDeadlineAnnotation, "x", liqojanitor.FenceDeadlineOverriddenAnnotation, stamp)},
		"a stamp of another time": {ann: marked(liqojanitor.MarkedByAnnotation, "alice", liqojanitor.OverrideFenceDeadlineAnnotation, "x",
			liqojanitor.FenceDeadlineOverriddenAnnotation, liqojanitor.FenceDeadlineOverride{At: at.Add(-time.Hour), By: "alice"}.String())},
		"no marked-by": {ann: marked(liqojanitor.OverrideFenceDeadlineAnnotation, "x", liqojanitor.FenceDeadlineOverriddenAnnotation, stamp)},
		"the override names another cluster": {ann: marked(liqojanitor.MarkedByAnnotation, "alice",
			liqojanitor.OverrideFenceDeadlineAnnotation, "y", liqojanitor.FenceDeadlineOverriddenAnnotation, stamp)},
	} {
		t.Run(name, func(t *testing.T) {
			fc := &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: "x", Annotations: tc.ann},
				Spec: liqov1beta1.ForeignClusterSpec{ClusterID: "x"}}
			hold := fenceHolds{"x": fenceUntil(now.Add(time.Minute))}.holdFor(fc)
			l := awaitFence(liveness{dead: true, MarkedAt: at, GraceEnds: at}, hold, now)
			if l.Dead() != tc.lifted {
				t.Fatalf("dead = %v, want %v (wait %s)", l.Dead(), tc.lifted, l.Wait)
			}
		})
	}
}
