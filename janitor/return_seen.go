package janitor

import (
	"fmt"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// A provider that answers again after its mark has returned (janitor rule 10): it is not gone, and what
// the consumer left running there — the copies of every pod the consumer force-deleted — may run twice.
// The evidence, each only if it comes after the mark began (the earlier of marked-at and the janitor's
// first sight of the mark):
//   - Liqo's APIServerStatus turned Established: Liqo's API-server checker writes the condition on a
//     transition only (foreigncluster-controller/apiserverchecker.go checkAndUpdateCallback, Liqo v1.0.3 to
//     v1.2.0), setting lastTransitionTime to now (EnsureGenericCondition in
//     pkg/utils/foreigncluster/conditions.go), so that time is when Liqo saw the provider answer again. An
//     Established status from before the mark is no return but a mark against a live provider (rule 1's
//     veto: the gate refuses such a mark, rule 4);
//   - Liqo's data plane turned Established (NetworkConnectionStatus: foreigncluster-controller/status.go
//     handleConnectionStatus mirrors the gateway's Connection, EnsureModuleCondition sets its
//     lastTransitionTime on a change; the same in v1.0.3 to v1.2.0): the provider's gateway answers the
//     consumer's again, so its pods run and reach the consumer. An Established tunnel from before the mark
//     is rule 1's veto (the gate refuses such a mark, gate rule 20);
//   - the janitor's own probe (return_probe.go) got an answer: Liqo's checker stops with its controller, and
//     on Liqo ≥ v1.1 force-unpeer removes the condition;
//   - the janitor's own record of a return (the cleanup annotation starting with ReturnedPrefix), which only
//     its identity writes (gate rule 14): a return is never forgotten for this mark, even when the provider
//     stops answering again. A record older than marked-at belongs to an earlier mark;
//   - the return it kept in its namespace (return_targets.go, rule 17), where no other webhook can refuse it.

// answer is the janitor's probe finding a provider's API server answering.
type answer struct {
	at  time.Time
	url string
	// verified: the server's certificate verified against the provider's CA; kept: the URL is one the
	// janitor kept at its first sight of the mark (janitor rule 16).
	verified, kept bool
}

// how says what the answer was, for a person.
func (a answer) how() string {
	s := "its API server at " + a.url + " answered the janitor's probe"
	switch {
	case a.verified:
		s += " with a certificate of the provider's CA"
	case a.kept:
		s += " (no CA of the provider is known: its certificate was not verified)"
	}
	return s
}

// providerReturn is when and how a marked cluster's provider was seen answering again.
type providerReturn struct {
	at time.Time
	// how says what showed it, for a person ("Liqo's APIServerStatus turned Established").
	how string
	// recorded says the janitor's record on the ForeignCluster already shows the return; kept that its
	// namespace does (janitor rule 17).
	recorded, kept bool
}

// returnOf finds the evidence, if any, that fc's provider answered again after its mark.
func returnOf(fc *liqov1beta1.ForeignCluster, seen observed) (providerReturn, bool) {
	if r, ok := recordedReturn(fc); ok {
		return r, true
	}
	if !seen.kept.at.IsZero() {
		return seen.kept, true
	}
	// The mark began no later than marked-at and the janitor's first sight of it: the earlier of the two is
	// the cautious one here (more evidence counts), as the later one is for the grace period.
	start := recordedFirstSight(fc, seen.firstSeen)
	if at, ok := liqojanitor.MarkedAt(fc); ok && at.Before(start) {
		start = at
	}
	// Liqo's condition times have whole seconds (metav1.Time), and so has marked-at.
	if c := liqojanitor.APIServerStatus(fc); liqojanitor.Reachable(fc) && !c.LastTransitionTime.Time.Before(start.Truncate(time.Second)) {
		return providerReturn{at: c.LastTransitionTime.Time, how: "Liqo's APIServerStatus turned Established"}, true
	}
	if c := liqojanitor.TunnelStatus(fc); liqojanitor.TunnelUp(fc) && !c.LastTransitionTime.Time.Before(start.Truncate(time.Second)) {
		return providerReturn{at: c.LastTransitionTime.Time, how: "Liqo's data plane to it (NetworkConnectionStatus) turned Established"}, true
	}
	if a := seen.answer; !a.at.IsZero() && !a.at.Before(start) {
		return providerReturn{at: a.at, how: a.how()}, true
	}
	return providerReturn{}, false
}

// recordedReturn reads the janitor's record of a return of fc's current mark.
func recordedReturn(fc *liqov1beta1.ForeignCluster) (providerReturn, bool) {
	at, ok := liqojanitor.ReturnRecordedAt(fc.Annotations)
	if !ok {
		return providerReturn{}, false
	}
	rec, _ := liqojanitor.ParseReturnRecord(fc.Annotations[liqojanitor.CleanupAnnotation])
	return providerReturn{at: at, how: rec.How, recorded: true}, true
}

// fenced reads the operator's fence record of the return r as of now (liqojanitor.FencedBy).
func fenced(fc *liqov1beta1.ForeignCluster, r providerReturn, now time.Time) (string, bool) {
	return liqojanitor.FencedBy(fc.Annotations, r.at, now)
}

// returnSummary is the cleanup annotation of a returned cluster (liqojanitor.ReturnRecord): the return
// first, then who marked it and when, how many pods the janitor had force-deleted, the clean-up's record as
// it was, and last what comes next — the fence command, or the operator's fence record once it is there.
// A recorded return keeps its first parts as written.
func returnSummary(fc *liqov1beta1.ForeignCluster, r providerReturn, now time.Time) string {
	rec, recorded := liqojanitor.ParseReturnRecord(fc.Annotations[liqojanitor.CleanupAnnotation])
	if !r.recorded || !recorded {
		rec = liqojanitor.ReturnRecord{At: r.at, How: r.how, Marked: markedBy(fc), PodsForceDeleted: podsForceDeleted(fc)}
		if before := progressOf(fc, allKinds); before.started() {
			rec.Before = before.summary(allKinds, 0, nil, false)
		}
	}
	rec.Next, rec.Fenced = fenceCommand(fc), ""
	if f, ok := fenced(fc, r, now); ok {
		rec.Fenced = f
	}
	return rec.String()
}

// podsForceDeleted is how many pods the janitor's record of the current mark says it force-deleted.
func podsForceDeleted(fc *liqov1beta1.ForeignCluster) int {
	return progressOf(fc, allKinds).done[podKind]
}

// markedBy says who marked fc and when, from the gate's stamps (with the janitor's first sight when a
// stamp is missing).
func markedBy(fc *liqov1beta1.ForeignCluster) string {
	firstSeen, _ := firstSightRecord(fc)
	return liqojanitor.MarkStampOf(fc.Annotations).Describe(firstSeen)
}

// fenceCommand is the operator's next step for a returned cluster.
func fenceCommand(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("kubectl liqo-janitor fence %s --provider-kubeconfig <provider kubeconfig>", fc.Spec.ClusterID)
}

// returnedMessage is the ProviderReturned event's text.
func returnedMessage(fc *liqov1beta1.ForeignCluster, r providerReturn) string {
	return fmt.Sprintf("The provider of cluster %s answered again after it was marked dead: %s at %s. It was marked dead by %s; "+
		"the janitor force-deleted %d of its pods (Liqo ≥ v1.1 also force-deletes them on the mark itself), and their copies on the "+
		"provider may still run: each may now run twice. Nothing more is released for this mark. Stop the copies: %s; then unmark "+
		"and re-peer, or delete the ForeignCluster",
		fc.Spec.ClusterID, r.how, r.at.UTC().Format(time.RFC3339), markedBy(fc), podsForceDeleted(fc), fenceCommand(fc))
}
