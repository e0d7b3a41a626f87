package janitor

import (
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"

	"github.com/liqo-janitor/liqo-janitor/janitor/liqoapi"
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
)

// Liveness is the janitor's view of one ForeignCluster.
type Liveness struct {
	// Wait is why the cluster is not dead; NotWaiting means dead.
	Wait WaitReason
	// MarkedAt is when the mark was set (marked-at, or when the janitor first saw it).
	MarkedAt time.Time
	// GraceLeft is how long until the grace period ends (only with WaitGracePeriod).
	GraceLeft time.Duration
}

// Dead reports whether the janitor may act on the cluster.
func (l Liveness) Dead() bool { return l.Wait == NotWaiting }

// Assess decides whether fc is dead for the janitor: the mark is "true", the confirmation equals
// spec.clusterID, APIServerStatus is not Established, the cluster is not paused, and the mark (marked-at,
// or firstSeen when marked-at is absent or unreadable) is older than grace.
func Assess(fc *liqov1beta1.ForeignCluster, firstSeen, now time.Time, grace time.Duration) Liveness {
	ann := fc.Annotations
	switch {
	case !liqoapi.IsMarked(ann):
		return Liveness{Wait: WaitNotMarked}
	case ann[liqoapi.ConfirmAnnotation] != string(fc.Spec.ClusterID) || fc.Spec.ClusterID == "":
		return Liveness{Wait: WaitUnconfirmed}
	case apiServerEstablished(fc):
		return Liveness{Wait: WaitReachable}
	case ann[liqoapi.PausedAnnotation] == "true":
		return Liveness{Wait: WaitPaused}
	}
	markedAt := firstSeen
	if at, err := time.Parse(time.RFC3339, ann[liqoapi.MarkedAtAnnotation]); err == nil {
		markedAt = at
	}
	if left := markedAt.Add(grace).Sub(now); left > 0 {
		return Liveness{Wait: WaitGracePeriod, MarkedAt: markedAt, GraceLeft: left}
	}
	return Liveness{MarkedAt: markedAt}
}

// apiServerEstablished reads the first APIServerStatus condition, as Liqo's own IsDead does.
func apiServerEstablished(fc *liqov1beta1.ForeignCluster) bool {
	for _, c := range fc.Status.Conditions {
		if c.Type == liqov1beta1.APIServerStatusCondition {
			return c.Status == liqov1beta1.ConditionStatusEstablished
		}
	}
	return false
}
