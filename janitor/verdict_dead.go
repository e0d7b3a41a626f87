package janitor

import (
	"strconv"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// WaitReason says why a marked cluster is not (yet) dead for the janitor; it is the "reason" label of
// the refusals metric, so the set is small and fixed.
type WaitReason string

// Why the janitor leaves a marked cluster alone.
const (
	// NotWaiting means the cluster is dead: the janitor acts.
	NotWaiting WaitReason = ""
	// WaitNotMarked means the mark is absent or not exactly "true".
	WaitNotMarked WaitReason = "NotMarked"
	// WaitUnconfirmed means the confirmation is missing or differs from spec.clusterID.
	WaitUnconfirmed WaitReason = "Unconfirmed"
	// WaitReachable means Liqo sees the provider's API server answering (APIServerStatus Established).
	WaitReachable WaitReason = "Reachable"
	// WaitTunnelUp means Liqo's data plane to the provider is up (NetworkConnectionStatus Established, since
	// before the mark): its pods still run and serve, so it is alive whatever its API server does.
	WaitTunnelUp WaitReason = "TunnelUp"
	// WaitStorm means the janitor has not begun with this mark yet and too many of this consumer's providers
	// are unreachable at once (janitor rule 18): the cut is more likely the consumer's own.
	WaitStorm WaitReason = "Storm"
	// WaitNotFoundByLiqo means the ForeignCluster is not the one Liqo's own lookup finds for its cluster ID
	// (its liqo.io/remote-cluster-id label is missing or names another cluster): Liqo never updates its
	// APIServerStatus, so that status proves nothing.
	WaitNotFoundByLiqo WaitReason = "NotFoundByLiqo"
	// WaitPaused means an operator paused the janitor for this cluster.
	WaitPaused WaitReason = "Paused"
	// WaitGracePeriod means the mark is younger than the grace period (the window to undo a mistake).
	WaitGracePeriod WaitReason = "GracePeriod"
	// WaitDuplicate means another ForeignCluster with the same cluster ID is not dead: one that is
	// unmarked, unconfirmed, reachable or paused keeps the cluster ID alive.
	WaitDuplicate WaitReason = "Duplicate"
	// WaitReturned means the provider answered again after the mark (janitor rule 10): it is not gone, and
	// nothing more is released for this mark, whatever the provider does next.
	WaitReturned WaitReason = "Returned"
	// WaitBraked means the janitor-wide brake is set (janitor rule 14): nothing is released for any cluster.
	WaitBraked WaitReason = "Braked"
	// WaitFenceDeadline means the provider fences this consumer by itself and may not have done it yet
	// (janitor rule 22): nothing is released before the deadline its contract gives, later than the grace
	// period's end.
	WaitFenceDeadline WaitReason = "FenceDeadline"
	// WaitFenceUnreadable means the janitor's record of the provider's fence cannot be read (janitor rule
	// 22): the deadline is unknown, so nothing is released until the record can be read.
	WaitFenceUnreadable WaitReason = "FenceUnreadable"
)

// liveness is the janitor's view of one ForeignCluster. Its zero value is the cautious one, not dead:
// only assess finds a cluster dead.
type liveness struct {
	// Wait is why the cluster is not dead (NotWaiting when it is dead, or has not been assessed).
	Wait WaitReason
	// MarkedAt is when the grace period started: the later of the marked-at stamp and the janitor's first
	// sight of the mark.
	MarkedAt time.Time
	// FirstSeen is the janitor's first sight of the mark (its own record, or this process's memory).
	FirstSeen time.Time
	// GraceEnds is when the grace period ends (MarkedAt + the grace period).
	GraceEnds time.Time
	// GraceLeft is how long until the grace period ends (while it runs: with WaitGracePeriod, or with a
	// fence wait that ends later).
	GraceLeft time.Duration
	// Fence is the provider's fence the cluster ID waits for (janitor rule 22): its deadline and contract,
	// or why its record cannot be read; zero without a provider-side fence.
	Fence fenceHold
	// FenceLeft is how long until the fence's deadline (only with WaitFenceDeadline).
	FenceLeft time.Duration
	// Duplicate names the ForeignCluster that keeps the cluster ID alive (only with WaitDuplicate).
	Duplicate string
	// Returned is when and how the provider answered again after the mark (only with WaitReturned).
	Returned providerReturn
	// Brake is the operator's reason for the janitor-wide brake (only with WaitBraked).
	Brake string
	// Storm is how many providers were unreachable at once (only with WaitStorm).
	Storm liqojanitor.Storm
	// dead is assess's verdict that the janitor may act.
	dead bool
}

// Dead reports whether the janitor may act on the cluster.
func (l liveness) Dead() bool { return l.dead }

// holding says whether only a hold keeps a confirmed mark from its clean-up — its grace period, or the
// provider's fence (janitor rule 22) — so that the plan is shown (rule 9): the mark can still be undone
// with nothing of the cluster written.
func (l liveness) holding() bool {
	return l.Wait == WaitGracePeriod || l.Wait == WaitFenceDeadline || l.Wait == WaitFenceUnreadable
}

// holdLeft is how long until the hold ends (holding): the grace period or the fence's deadline, whichever
// holds the cluster; 0 when it is unknown (an unreadable fence record, a grace window without its record).
func (l liveness) holdLeft() time.Duration {
	switch l.Wait {
	case WaitGracePeriod:
		return l.GraceLeft
	case WaitFenceDeadline:
		return l.FenceLeft
	}
	return 0
}

// observed is what the janitor itself saw of a marked ForeignCluster, beyond the object: its first sight
// of the mark, its probe's first answer from the provider since then (zero when none), and its kept return.
type observed struct {
	firstSeen time.Time
	answer    answer
	// kept is the return the janitor kept in its namespace for this mark (janitor rule 17), zero if none.
	kept providerReturn
	// storm is the storm the janitor holds this mark back for (janitor rule 18), nil when it does not.
	storm *liqojanitor.Storm
	// fence is what the provider's fence holds the cluster ID to (janitor rule 22), read live with the
	// verdict.
	fence fenceHold
}

// assess decides whether fc is dead for the janitor: the mark is "true", the provider has not answered
// again since the mark (returnOf), the confirmation equals spec.clusterID, fc is the ForeignCluster
// Liqo's own lookup finds (FoundByLiqo), APIServerStatus is not Established, the data plane is not up
// (NetworkConnectionStatus Established: the provider's pods still run), the cluster is not paused, no storm
// holds the mark back (rule 18), the grace period has passed since the later of marked-at and the janitor's
// first sight of the mark — a forged or pre-written marked-at never shortens the window — and so has the
// provider's fence deadline (awaitFence, rule 22).
func assess(fc *liqov1beta1.ForeignCluster, seen observed, now time.Time, grace time.Duration) liveness {
	firstSeen := seen.firstSeen
	ret, returned := returnOf(fc, seen)
	switch {
	case !liqojanitor.IsMarked(fc.Annotations):
		return liveness{Wait: WaitNotMarked}
	case returned:
		return liveness{Wait: WaitReturned, FirstSeen: firstSeen, Returned: ret}
	case !liqojanitor.Confirmed(fc):
		return liveness{Wait: WaitUnconfirmed}
	case !liqojanitor.FoundByLiqo(fc):
		return liveness{Wait: WaitNotFoundByLiqo}
	case liqojanitor.Reachable(fc):
		return liveness{Wait: WaitReachable}
	case liqojanitor.TunnelUp(fc):
		return liveness{Wait: WaitTunnelUp}
	case liqojanitor.Paused(fc):
		return liveness{Wait: WaitPaused}
	case seen.storm != nil:
		return liveness{Wait: WaitStorm, Storm: *seen.storm}
	}
	start := firstSeen
	if at, ok := liqojanitor.MarkedAt(fc); ok && at.After(start) {
		start = at
	}
	l := liveness{MarkedAt: start, FirstSeen: firstSeen, GraceEnds: start.Add(grace)}
	if left := l.GraceEnds.Sub(now); left > 0 {
		l.Wait, l.GraceLeft = WaitGracePeriod, left
	} else {
		l.dead = true
	}
	return awaitFence(l, seen.fence, now)
}

// heldByStorm says whether the storm guard holds fc's mark back (janitor rule 18): the janitor has not
// begun with it — its first write for a mark is its record of the first sight, so a mark it has recorded
// was accepted before the storm began and keeps its course — and the mark carries no acknowledgement of
// the storm (stormAcknowledged).
func heldByStorm(fc *liqov1beta1.ForeignCluster) bool {
	_, begun := firstSightRecord(fc)
	return !begun && !stormAcknowledged(fc)
}

// stormAcknowledged says whether fc's mark acknowledges a storm: liqojanitor.AcknowledgeUnreachableAnnotation
// carries a count, and the gate's stamp (liqojanitor.AcknowledgedByAnnotation, which only its mutating
// webhook writes, in the marking request of a holder of the break-glass verb: gate rule 21) acknowledged
// that same count. An acknowledgement without the stamp was written past the gate and does not count.
func stormAcknowledged(fc *liqov1beta1.ForeignCluster) bool {
	ack, ok := liqojanitor.ParseAcknowledgement(fc.Annotations[liqojanitor.AcknowledgedByAnnotation])
	given := fc.Annotations[liqojanitor.AcknowledgeUnreachableAnnotation]
	return ok && given != "" && given == strconv.Itoa(ack.Count)
}

// recordedFirstSight is the janitor's first sight of fc's mark: its own record (the first-seen-at
// annotation, which only the janitor's identity may write: gate rule 14), so that it survives restarts and
// failovers, or remembered when there is no usable record.
func recordedFirstSight(fc *liqov1beta1.ForeignCluster, remembered time.Time) time.Time {
	if at, ok := firstSightRecord(fc); ok {
		return at
	}
	return remembered
}

// firstSightRecord reads the janitor's record of its first sight of fc's current mark
// (liqojanitor.MarkTimeRecord).
func firstSightRecord(fc *liqov1beta1.ForeignCluster) (time.Time, bool) {
	at, err := liqojanitor.MarkTimeRecord(fc.Annotations, liqojanitor.FirstSeenAnnotation)
	return at, err == nil
}

// recordedWindow replaces, for a cluster l finds dead or holding (its grace period, the provider's fence),
// the grace window l assumed with the running janitor's own: its grace-ends-at record of fc's current mark.
// Without one the cluster is in its grace period, the time left unknown (GraceLeft 0): only the janitor
// knows its --grace-period and when it first saw the mark. The provider's fence holds as it did
// (awaitFence); any other reason to wait stays.
func recordedWindow(fc *liqov1beta1.ForeignCluster, l liveness, now time.Time) liveness {
	if !l.holding() && !l.Dead() {
		return l
	}
	ends, err := liqojanitor.MarkTimeRecord(fc.Annotations, liqojanitor.GraceEndsAnnotation)
	w := liveness{MarkedAt: l.MarkedAt, GraceEnds: ends, dead: true}
	switch {
	case err != nil:
		w = liveness{Wait: WaitGracePeriod, MarkedAt: l.MarkedAt}
	case ends.After(now):
		w = liveness{Wait: WaitGracePeriod, MarkedAt: l.MarkedAt, GraceEnds: ends, GraceLeft: ends.Sub(now)}
	}
	return awaitFence(w, l.Fence, now)
}

// observeFunc tells what the janitor itself saw of a ForeignCluster: when it first saw its mark (the grace
// period counts from the later of this and marked-at) and whether its probe found the provider answering.
type observeFunc func(*liqov1beta1.ForeignCluster) observed

// assessClusterID (janitor rule 1) decides for the ForeignCluster named name, out of every ForeignCluster
// fcs, whether its cluster ID is dead: it is itself dead (assess), and so is every other ForeignCluster with
// the same spec.clusterID or carrying Liqo's label of it. Liqo probes only one ForeignCluster per cluster ID,
// the oldest its label selector finds (GetForeignClusterByID in pkg/utils/foreigncluster/getters.go, Liqo
// v1.0.3 to v1.2.0), so a marked duplicate of a live provider has no APIServerStatus and would look
// unreachable: it must never condemn the provider. It returns nil when no ForeignCluster has that name.
func assessClusterID(fcs []liqov1beta1.ForeignCluster, name string, seen observeFunc, now time.Time, grace time.Duration) (*liqov1beta1.ForeignCluster, liveness) {
	var self *liqov1beta1.ForeignCluster
	for i := range fcs {
		if fcs[i].Name == name {
			self = &fcs[i]
		}
	}
	if self == nil {
		return nil, liveness{Wait: WaitNotMarked}
	}
	l := assess(self, seen(self), now, grace)
	if !l.Dead() {
		return self, l
	}
	for _, other := range liqojanitor.ForeignClustersOf(fcs, self.Spec.ClusterID) {
		if other.Name != name && !assess(other, seen(other), now, grace).Dead() {
			return self, liveness{Wait: WaitDuplicate, MarkedAt: l.MarkedAt, Duplicate: other.Name}
		}
	}
	return self, l
}

// deadClusterIDs says, for every cluster ID with a ForeignCluster, whether it is dead: every
// ForeignCluster naming it, by spec.clusterID or by Liqo's label, is (cluster IDs without one count as
// live).
func deadClusterIDs(fcs []liqov1beta1.ForeignCluster, seen observeFunc, now time.Time, grace time.Duration) map[string]bool {
	dead := map[string]bool{}
	for i := range fcs {
		id := fcs[i].Spec.ClusterID
		if _, done := dead[string(id)]; done {
			continue
		}
		d := true
		for _, fc := range liqojanitor.ForeignClustersOf(fcs, id) {
			d = d && assess(fc, seen(fc), now, grace).Dead()
		}
		dead[string(id)] = d
	}
	return dead
}
