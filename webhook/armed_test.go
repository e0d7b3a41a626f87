package webhook_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// Keys written ahead of the mark (issue 25): the fence record is the gate's (rule 15), the no-evidence key
// comes in the marking request (rule 12), and the confirmation and the reason ahead of the mark come from a
// holder of the break-glass verb (rule 19). Each test fails without its rule.

// withoutGate writes kv onto the unmarked fc as c, as if the gate were not installed (harness.Env.WithoutGate:
// how a key gets onto a ForeignCluster anyway), and returns with the keys stored and the gate back: a fence
// record on the unmarked ForeignCluster is refused again.
func withoutGate(t *testing.T, c client.Client, fc *liqov1beta1.ForeignCluster, kv map[string]*string) {
	t.Helper()
	harness.Require(t).WithoutGate(t, fc.Name, func(ctx context.Context) error { return fixture.Annotate(ctx, c, fc, kv) },
		harness.GateProbe{Key: liqojanitor.FencedAnnotation, Value: "x", Refusal: "is not marked permanently unreachable"})
	for k, v := range kv {
		if v != nil {
			NewWithT(t).Expect(get(t, fc).Annotations).To(HaveKeyWithValue(k, *v), "stored without the gate")
		}
	}
}

// recordReturn writes, as the janitor's identity (asJanitor), the janitor's record of a return of
// fc's provider at, and returns the time as the janitor records it (milliseconds).
func recordReturn(t *testing.T, fc *liqov1beta1.ForeignCluster, at time.Time) time.Time {
	t.Helper()
	at = at.UTC().Truncate(time.Millisecond)
	record := liqojanitor.ReturnRecord{At: at, How: "its API server at https://10.0.0.7:6443 answered the janitor's probe",
		Marked: "alice", Next: "fence"}.String()
	NewWithT(t).Expect(fixture.Annotate(t.Context(), asJanitor, fc, map[string]*string{liqojanitor.CleanupAnnotation: &record})).To(Succeed())
	return at
}

// fencedRecord reads fc's stored fence record in the gate's stamped form.
func fencedRecord(t *testing.T, fc *liqov1beta1.ForeignCluster) liqojanitor.FenceRecord {
	t.Helper()
	v := get(t, fc).Annotations[liqojanitor.FencedAnnotation]
	rec, ok := liqojanitor.ParseFenceRecord(v)
	NewWithT(t).Expect(ok && rec.Stamped()).To(BeTrue(), "the stored fence record %q is in the gate's stamped form", v)
	return rec
}

// TestAFencePlacedAheadOfTheMarkNeverSurvivesIntoIt (rule 15): a fence record on an unmarked ForeignCluster
// is refused, whoever writes it; one that got there anyway (written while the gate was absent) is dropped
// when the mark is set, so the mark's return is never taken as fenced; removing the mark drops the record too.
func TestAFencePlacedAheadOfTheMarkNeverSurvivesIntoIt(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	forged := "2099-01-01T00:00:00Z by admin@corp: shadowpods 12, pods 12"

	for _, c := range []client.Client{bob, alice} {
		err := fixture.Annotate(ctx, c, fc, map[string]*string{liqojanitor.FencedAnnotation: &forged})
		expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/fenced]", fc,
			"is not marked permanently unreachable", "a record placed ahead of a mark would silence that mark's alert",
			"kubectl annotate foreigncluster "+fc.Name+" liqo-janitor.io/fenced-")
	}
	g.Expect(get(t, fc).Annotations).NotTo(HaveKey(liqojanitor.FencedAnnotation))

	withoutGate(t, bob, fc, map[string]*string{liqojanitor.FencedAnnotation: &forged})
	g.Expect(fixture.Annotate(ctx, alice, fc, markAndConfirm(fc))).To(Succeed())
	g.Expect(get(t, fc).Annotations).To(And(HaveKeyWithValue(liqojanitor.MarkAnnotation, "true"),
		Not(HaveKey(liqojanitor.FencedAnnotation))), "the mark drops the record placed ahead of it")

	// the mark's own fence, once the janitor recorded a return, goes with the mark
	recordReturn(t, fc, time.Now())
	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.FencedAnnotation: s(liqojanitor.FenceRecord{At: time.Now(), By: markerUser, Counts: "pods 1"}.String())})).To(Succeed())
	g.Expect(get(t, fc).Annotations).To(HaveKey(liqojanitor.FencedAnnotation))
	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.MarkAnnotation: nil})).To(Succeed())
	g.Expect(get(t, fc).Annotations).NotTo(HaveKey(liqojanitor.FencedAnnotation), "unmarking drops the record")

	// removing a record from an unmarked ForeignCluster is anyone's
	withoutGate(t, bob, fc, map[string]*string{liqojanitor.FencedAnnotation: &forged})
	g.Expect(fixture.Annotate(ctx, bob, fc, map[string]*string{liqojanitor.FencedAnnotation: nil})).To(Succeed())
}

// TestTheDeletionOverrideCannotBePrePlaced (rule 22): the break-glass override of the deletion rule on an
// unmarked ForeignCluster is refused, whoever writes it (a holder of the verb too); one that got there anyway
// (written while the gate was absent) is dropped by the request that sets the mark, and so is one given with
// the mark; on the marked ForeignCluster a holder of the verb sets it as before (rule 17).
func TestTheDeletionOverrideCannotBePrePlaced(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	override := map[string]*string{liqojanitor.AllowDeleteAnnotation: s(fc.Name)}

	for _, c := range []client.Client{bob, alice} {
		err := fixture.Annotate(ctx, c, fc, override)
		expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/allow-delete-while-unpeering]", fc,
			"is not marked permanently unreachable", "gate rule 22")
	}
	g.Expect(get(t, fc).Annotations).NotTo(HaveKey(liqojanitor.AllowDeleteAnnotation))

	withoutGate(t, bob, fc, override)
	g.Expect(fixture.Annotate(ctx, alice, fc, markAndConfirm(fc))).To(Succeed())
	g.Expect(get(t, fc).Annotations).To(And(HaveKeyWithValue(liqojanitor.MarkAnnotation, "true"),
		Not(HaveKey(liqojanitor.AllowDeleteAnnotation))), "the mark drops the override placed ahead of it")

	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.MarkAnnotation: nil})).To(Succeed())
	withMark := markAndConfirm(fc)
	withMark[liqojanitor.AllowDeleteAnnotation] = s(fc.Name)
	g.Expect(fixture.Annotate(ctx, alice, fc, withMark)).To(Succeed())
	g.Expect(get(t, fc).Annotations).To(And(HaveKeyWithValue(liqojanitor.MarkAnnotation, "true"),
		Not(HaveKey(liqojanitor.AllowDeleteAnnotation))), "the mark drops the override given with it")

	g.Expect(fixture.Annotate(ctx, alice, fc, override)).To(Succeed(), "set on the marked cluster by a holder of the verb")
	g.Expect(get(t, fc).Annotations).To(HaveKeyWithValue(liqojanitor.AllowDeleteAnnotation, fc.Name))
}

// TestAFenceRecordIsRestampedWithTheReturnItFences (rule 15): whatever the request says — a future date, a
// hand-written value, the plugin's spelling without the return — the gate stores now, the requester and
// the janitor's recorded return; with no return recorded there is nothing to fence.
func TestAFenceRecordIsRestampedWithTheReturnItFences(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	fc := markedProvider(t)

	err := fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.FencedAnnotation: s(liqojanitor.FenceRecord{At: time.Now(), By: markerUser, Counts: "pods 3"}.String())})
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/fenced]", fc,
		"nothing to fence: the janitor has recorded no return of this provider", "kubectl liqo-janitor status "+fc.Name)
	g.Expect(get(t, fc).Annotations).NotTo(HaveKey(liqojanitor.FencedAnnotation))

	returned := recordReturn(t, fc, time.Now())
	for value, counts := range map[string]string{
		"2099-01-01T00:00:00Z by admin@corp: shadowpods 12, pods 12; fences the return at 2099-01-01T00:00:00Z": "shadowpods 12, pods 12",
		"fenced by hand": "fenced by hand",
		liqojanitor.FenceRecord{At: time.Now(), By: markerUser, Counts: "shadowpods 3, pods 3"}.String(): "shadowpods 3, pods 3",
	} {
		before := time.Now().Truncate(time.Second)
		g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.FencedAnnotation: &value})).To(Succeed(), "recording %q", value)
		rec := fencedRecord(t, fc)
		g.Expect(rec.By).To(Equal(markerUser), "the requester, not the request's %q", value)
		g.Expect(rec.At).To(And(BeTemporally(">=", before), BeTemporally("<=", time.Now())), "the gate's time, not the request's")
		g.Expect(rec.Return).To(BeTemporally("==", returned), "the janitor's recorded return")
		g.Expect(rec.Counts).To(Equal(counts))
	}
}

// TestPreArmedKeysThenABareMark (rules 12 and 19): liqoctl force unpeer sends a bare mark, so keys set
// ahead of it must be typed by someone who may mark. A user without the verb cannot confirm or give the
// reason ahead of the mark, nobody can give the no-evidence key ahead of it, and liqoctl's bare mark is
// then refused with what to type first; one that got there anyway does not count. The same confirmation
// by a holder of the verb, then liqoctl's bare mark, marks.
func TestPreArmedKeysThenABareMark(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)

	for key, value := range map[string]string{liqojanitor.ConfirmAnnotation: fc.Name, liqojanitor.ReasonAnnotation: "bob says it is gone"} {
		err := fixture.Annotate(ctx, bob, fc, map[string]*string{key: s(value)})
		expectDenied(t, err, http.StatusForbidden, "metadata.annotations[liqo.io/foreign-cluster-permanently-unreachable]", fc,
			`user "bob" may not set liqo-janitor.io/confirm-cluster-id or liqo-janitor.io/reason ahead of the mark`,
			"liqoctl force unpeer", "kubectl create clusterrolebinding mark-unreachable-bob",
			"ask a holder of the verb to confirm it (kubectl annotate foreigncluster "+fc.Name+" liqo-janitor.io/confirm-cluster-id="+fc.Name+" --overwrite)")
	}
	for _, c := range []client.Client{bob, alice} {
		err := fixture.Annotate(ctx, c, fc, map[string]*string{liqojanitor.NoEvidenceAnnotation: s(fc.Name)})
		expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/no-reachability-evidence]", fc,
			"counts only in the request that sets the mark", "kubectl liqo-janitor mark "+fc.Name)
	}
	g.Expect(get(t, fc).Annotations).To(BeEmpty())

	err := liqoctlForceUnpeerPatch(t, alice, fc)
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/confirm-cluster-id]", fc,
		"with liqoctl force unpeer, confirm first: kubectl annotate foreigncluster "+fc.Name+" liqo-janitor.io/confirm-cluster-id="+fc.Name+" --overwrite",
		"then run liqoctl force unpeer "+fc.Name+" again")
	g.Expect(get(t, fc).Annotations).To(BeEmpty())

	// the same confirmation and reason by a holder of the verb arm liqoctl's bare mark, which is hers
	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{
		liqojanitor.ConfirmAnnotation: s(fc.Name), liqojanitor.ReasonAnnotation: s("data centre lost")})).To(Succeed())
	g.Expect(liqoctlForceUnpeerPatch(t, alice, fc)).To(Succeed())
	g.Expect(get(t, fc).Annotations).To(And(HaveKeyWithValue(liqojanitor.MarkAnnotation, "true"),
		HaveKeyWithValue(liqojanitor.MarkedByAnnotation, markerUser), HaveKeyWithValue(liqojanitor.ReasonAnnotation, "data centre lost")))
}

// TestANoEvidenceKeyWrittenAheadOfTheMarkDoesNotCount (rule 12): on a ForeignCluster without evidence, a
// no-evidence key that got there ahead of the mark (written while the gate was absent) does not stand for
// the one who marks: liqoctl's bare mark is refused, saying to remove it and mark with it in one request.
func TestANoEvidenceKeyWrittenAheadOfTheMarkDoesNotCount(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	fc := newProvider(t, "", 0)
	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.ConfirmAnnotation: s(fc.Name)})).To(Succeed())
	withoutGate(t, bob, fc, map[string]*string{liqojanitor.NoEvidenceAnnotation: s(fc.Name)})

	err := liqoctlForceUnpeerPatch(t, alice, fc)
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/no-reachability-evidence]", fc,
		"was set before this request", "kubectl annotate foreigncluster "+fc.Name+" liqo-janitor.io/no-reachability-evidence-",
		"then mark with it in one request")
	g.Expect(get(t, fc).Annotations).NotTo(HaveKey(liqojanitor.MarkAnnotation))

	// removed, then given in the marking request by the one who marks: accepted
	g.Expect(fixture.Annotate(ctx, bob, fc, map[string]*string{liqojanitor.NoEvidenceAnnotation: nil})).To(Succeed())
	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{
		liqojanitor.NoEvidenceAnnotation: s(fc.Name), liqojanitor.MarkAnnotation: s("true")})).To(Succeed())
}
