package janitor

import (
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
	// WaitPaused means an operator paused the janitor for this cluster.
	WaitPaused WaitReason = "Paused"
	// WaitGracePeriod means the mark is younger than the grace period (the window to undo a mistake).
	WaitGracePeriod WaitReason = "GracePeriod"
	// WaitDuplicate means another ForeignCluster with the same cluster ID is not dead: one that is
	// unmarked, unconfirmed, reachable or paused keeps the cluster ID alive.
	WaitDuplicate WaitReason = "Duplicate"
)

// Liveness is the janitor's view of one ForeignCluster.
type Liveness struct {
	// Wait is why the cluster is not dead; NotWaiting means dead.
	Wait WaitReason
	// MarkedAt is when the mark was set (marked-at, or when the janitor first saw it).
	MarkedAt time.Time
	// GraceLeft is how long until the grace period ends (only with WaitGracePeriod).
	GraceLeft time.Duration
	// Duplicate names the ForeignCluster that keeps the cluster ID alive (only with WaitDuplicate).
	Duplicate string
}

// Dead reports whether the janitor may act on the cluster.
func (l Liveness) Dead() bool { return l.Wait == NotWaiting }

// Assess decides whether fc is dead for the janitor: the mark is "true", the confirmation equals
// spec.clusterID, APIServerStatus is not Established, the cluster is not paused, and the mark (marked-at,
// or firstSeen when marked-at is absent or unreadable) is older than grace.
func Assess(fc *liqov1beta1.ForeignCluster, firstSeen, now time.Time, grace time.Duration) Liveness {
	switch {
	case !liqojanitor.IsMarked(fc.Annotations):
		return Liveness{Wait: WaitNotMarked}
	case !liqojanitor.Confirmed(fc):
		return Liveness{Wait: WaitUnconfirmed}
	case liqojanitor.Reachable(fc):
		return Liveness{Wait: WaitReachable}
	case liqojanitor.Paused(fc):
		return Liveness{Wait: WaitPaused}
	}
	markedAt := firstSeen
	if at, ok := liqojanitor.MarkedAt(fc); ok {
		markedAt = at
	}
	if left := markedAt.Add(grace).Sub(now); left > 0 {
		return Liveness{Wait: WaitGracePeriod, MarkedAt: markedAt, GraceLeft: left}
	}
	return Liveness{MarkedAt: markedAt}
}

// FirstSeen tells when the janitor first saw a ForeignCluster's mark (the grace period's fallback start).
type FirstSeen func(*liqov1beta1.ForeignCluster) time.Time

// AssessClusterID (janitor rule 1) decides for the ForeignCluster named name, out of every ForeignCluster fcs, whether its
// cluster ID is dead: it is itself dead (Assess), and so is every other ForeignCluster with the same
// spec.clusterID. Liqo probes only one ForeignCluster per cluster ID (GetForeignClusterByID in
// pkg/utils/foreigncluster/getters.go, Liqo v1.0 to v1.2), so a marked duplicate of a live provider has no
// APIServerStatus and would look unreachable: it must never condemn the provider. It returns nil when no
// ForeignCluster has that name.
func AssessClusterID(fcs []liqov1beta1.ForeignCluster, name string, seen FirstSeen, now time.Time, grace time.Duration) (*liqov1beta1.ForeignCluster, Liveness) {
	var self *liqov1beta1.ForeignCluster
	for i := range fcs {
		if fcs[i].Name == name {
			self = &fcs[i]
		}
	}
	if self == nil {
		return nil, Liveness{Wait: WaitNotMarked}
	}
	l := Assess(self, seen(self), now, grace)
	if !l.Dead() {
		return self, l
	}
	for _, other := range liqojanitor.ForeignClustersOf(fcs, self.Spec.ClusterID) {
		if other.Name != name && !Assess(other, seen(other), now, grace).Dead() {
			return self, Liveness{Wait: WaitDuplicate, MarkedAt: l.MarkedAt, Duplicate: other.Name}
		}
	}
	return self, l
}

// DeadClusterIDs says, for every cluster ID with a ForeignCluster, whether it is dead: every
// ForeignCluster naming it is (cluster IDs without one count as live).
func DeadClusterIDs(fcs []liqov1beta1.ForeignCluster, seen FirstSeen, now time.Time, grace time.Duration) map[string]bool {
	dead := map[string]bool{}
	for i := range fcs {
		id := string(fcs[i].Spec.ClusterID)
		d := Assess(&fcs[i], seen(&fcs[i]), now, grace).Dead()
		if prev, ok := dead[id]; ok {
			d = d && prev
		}
		dead[id] = d
	}
	return dead
}
