package janitor

import (
	"strings"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// established is a marked cluster x whose APIServerStatus turned Established at at.
func established(at time.Time, extra ...string) *liqov1beta1.ForeignCluster {
	fc := cluster("x", marked(extra...), liqov1beta1.ConditionStatusEstablished)
	fc.Status.Conditions[0].LastTransitionTime = metav1.NewTime(at)
	return fc
}

// tunnel is a marked cluster x whose API server is in Error and whose data plane turned Established at at.
func tunnel(at time.Time) *liqov1beta1.ForeignCluster {
	fc := cluster("x", marked(), liqov1beta1.ConditionStatusError)
	fc.Status.Modules.Networking.Conditions = []liqov1beta1.Condition{{Type: liqov1beta1.NetworkConnectionStatusCondition,
		Status: liqov1beta1.ConditionStatusEstablished, LastTransitionTime: metav1.NewTime(at)}}
	return fc
}

func TestAReturnIsEvidenceFromAfterTheMark(t *testing.T) {
	t.Parallel()
	markedAt := now.Add(-time.Minute) // marked()'s stamp
	probed := observed{firstSeen: markedAt, answer: answer{at: now, url: "https://10.0.0.1:6443"}}
	for name, tc := range map[string]struct {
		fc   *liqov1beta1.ForeignCluster
		seen observed
		want WaitReason
		how  string
	}{
		"Liqo's status turned Established after the mark": {
			fc: established(now), want: WaitReturned, how: "Liqo's APIServerStatus turned Established"},
		"an Established status from before the mark is the gate's veto, not a return": {
			fc: established(markedAt.Add(-time.Second)), want: WaitReachable},
		"Liqo's data plane turned Established after the mark": {
			fc: tunnel(now), want: WaitReturned, how: "NetworkConnectionStatus"},
		"a tunnel Established from before the mark is rule 1's veto, not a return": {
			fc: tunnel(markedAt.Add(-time.Second)), want: WaitTunnelUp},
		"the janitor's probe answered after the mark": {
			fc: cluster("x", marked(), liqov1beta1.ConditionStatusError), seen: probed, want: WaitReturned, how: "answered the janitor's probe"},
		"an answer from before this mark is none": {
			fc:   cluster("x", marked(), liqov1beta1.ConditionStatusError),
			seen: observed{firstSeen: markedAt, answer: answer{at: markedAt.Add(-time.Hour), url: "https://a"}}, want: NotWaiting},
		"a return is reported on a paused cluster too": {
			fc: established(now, liqojanitor.PausedAnnotation, "true"), want: WaitReturned},
		"and on an unconfirmed mark (Liqo ≥ v1.1 acts on a bare mark)": {
			fc: established(now, liqojanitor.ConfirmAnnotation, ""), want: WaitReturned},
		"the janitor's record keeps a return after the provider goes away again": {
			fc: cluster("x", marked(liqojanitor.CleanupAnnotation, liqojanitor.ReturnRecord{At: now, How: "Liqo's APIServerStatus turned Established"}.String()),
				liqov1beta1.ConditionStatusError), want: WaitReturned, how: "Liqo's APIServerStatus turned Established"},
		"a record of a return before this mark belongs to an earlier one": {
			fc: cluster("x", marked(liqojanitor.CleanupAnnotation, liqojanitor.ReturnRecord{At: markedAt.Add(-time.Hour), How: "x"}.String()),
				liqov1beta1.ConditionStatusError), want: NotWaiting},
		"no evidence: dead": {fc: cluster("x", marked(), liqov1beta1.ConditionStatusError), want: NotWaiting},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			seen := tc.seen
			if seen.firstSeen.IsZero() {
				seen.firstSeen = markedAt
			}
			got := assess(tc.fc, seen, now, 30*time.Second)
			if got.Wait != tc.want || got.Dead() != (tc.want == NotWaiting) || !strings.Contains(got.Returned.how, tc.how) {
				t.Fatalf("assess() = %+v, want wait %q (how %q)", got, tc.want, tc.how)
			}
		})
	}
}

func TestTheReturnSummarySaysItFirstAndKeepsItsRecord(t *testing.T) {
	t.Parallel()
	fc := established(now, liqojanitor.MarkedByAnnotation, "alice", liqojanitor.FirstSeenAnnotation, now.Add(-time.Minute).Format(time.RFC3339),
		liqojanitor.CleanupAnnotation, "pods 118/120, resourceslices 3/3")
	l := assess(fc, observed{firstSeen: now.Add(-time.Minute)}, now, 30*time.Second)
	later := now.Add(2 * time.Minute) // the janitor's clock when it writes the summaries
	first := returnSummary(fc, l.Returned, later)
	for _, want := range []string{liqojanitor.ReturnedPrefix, "marked dead by alice", "pods force-deleted by the janitor: 118",
		"before: pods 118/120, resourceslices 3/3", "next: kubectl liqo-janitor fence x "} {
		if !strings.Contains(first, want) {
			t.Fatalf("returnSummary() = %q, want it to say %q", first, want)
		}
	}
	if !strings.HasPrefix(first, liqojanitor.ReturnedPrefix) {
		t.Fatalf("returnSummary() = %q: the return must come first", first)
	}
	// Recorded, then fenced: the record stays as written, the next step becomes the fence record.
	fc.Annotations[liqojanitor.CleanupAnnotation] = first
	fc.Status.Conditions[0].Status = liqov1beta1.ConditionStatusError
	l = assess(fc, observed{firstSeen: now.Add(-time.Minute)}, now, 30*time.Second)
	if l.Wait != WaitReturned || !l.Returned.recorded || returnSummary(fc, l.Returned, later) != first {
		t.Fatalf("a recorded return: %+v, summary %q, want it unchanged %q", l, returnSummary(fc, l.Returned, later), first)
	}
	stamped := func(at time.Time, by, counts string) string { // as the gate stamps it, for this return
		return liqojanitor.FenceRecord{At: at, By: by, Return: l.Returned.at, Counts: counts}.String()
	}
	fc.Annotations[liqojanitor.FencedAnnotation] = liqojanitor.FenceRecord{At: now.Add(time.Minute), By: "bob", Counts: "shadowpods 12, pods 12"}.String()
	if got := returnSummary(fc, l.Returned, later); got != first {
		t.Fatalf("a fence record the gate did not stamp: %q, want %q", got, first)
	}
	fc.Annotations[liqojanitor.FencedAnnotation] = liqojanitor.FenceRecord{At: now.Add(time.Minute), By: "bob",
		Return: l.Returned.at.Add(-time.Hour), Counts: "shadowpods 12, pods 12"}.String()
	if got := returnSummary(fc, l.Returned, later); got != first {
		t.Fatalf("a fence record of another return: %q, want %q", got, first)
	}
	fc.Annotations[liqojanitor.FencedAnnotation] = stamped(now.Add(time.Minute), "bob", "shadowpods 12, pods 12")
	fencedSummary := returnSummary(fc, l.Returned, later)
	rec, _ := liqojanitor.ParseReturnRecord(first)
	rec.Next, rec.Fenced = "", "by bob: shadowpods 12, pods 12"
	if want := rec.String(); fencedSummary != want || !strings.HasSuffix(want, "; fenced by bob: shadowpods 12, pods 12") {
		t.Fatalf("fenced: %q, want %q", fencedSummary, want)
	}
	// A fence record from the future was not stamped by the gate.
	fc.Annotations[liqojanitor.FencedAnnotation] = stamped(later.Add(time.Hour), "mallory", "shadowpods 0")
	if got := returnSummary(fc, l.Returned, later); got != first {
		t.Fatalf("a future-dated fence record: %q, want %q", got, first)
	}
	// A fence record older than the return is not this return's.
	fc.Annotations[liqojanitor.FencedAnnotation] = stamped(now.Add(-time.Hour), "bob", "shadowpods 1")
	if got := returnSummary(fc, l.Returned, later); got != first {
		t.Fatalf("an old fence record: %q, want %q", got, first)
	}
	if n := progressOf(fc, allKinds).done[podKind]; n != 0 {
		t.Fatalf("a return's summary read as a clean-up record: pods done %d", n)
	}
}
