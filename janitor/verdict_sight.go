package janitor

import (
	"maps"
	"sync"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// sightings is when this process first saw each ForeignCluster's mark: an input of the verdict (the grace
// period counts from the later of marked-at and the janitor's first sight, janitor rule 1), kept apart
// from the reporting memory because it decides. It can only make the janitor wait longer: a mark not seen
// yet counts as seen now, and the janitor's own record on the ForeignCluster (first-seen-at), which
// survives restarts and failovers, takes precedence over it (recordedFirstSight).
type sightings struct {
	clock clock.PassiveClock

	mu    sync.Mutex
	first map[types.UID]time.Time
}

func newSightings(c clock.PassiveClock) *sightings {
	return &sightings{clock: c, first: map[types.UID]time.Time{}}
}

// see remembers now as the first sight of fc's mark, unless it was seen before.
func (s *sightings) see(fc *liqov1beta1.ForeignCluster) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.first[fc.UID]; !ok {
		s.first[fc.UID] = s.clock.Now()
	}
}

// firstSeen is when this process first saw fc's mark, or now if it has not seen it (so a cluster never
// counts as dead sooner than its own pass would decide).
func (s *sightings) firstSeen(fc *liqov1beta1.ForeignCluster) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if at, ok := s.first[fc.UID]; ok {
		return at
	}
	return s.clock.Now()
}

// forget drops the sighting of a ForeignCluster that is no longer marked (or gone).
func (s *sightings) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.first, uid)
}

// ignoreFutureStamps drops, from this pass's copies of the ForeignClusters of a live list, a marked-at
// stamp more than liqojanitor.MaxClockSkew ahead of now (janitor rule 21): the gate never wrote it (a mark
// made past the gate), and believed it would push the grace period, the mark's records and the evidence of
// a return out to a time of the writer's choosing. The mark is then one without the gate's stamp, its grace
// period counted from the janitor's own first sight. Only the copies change: the janitor's patches carry
// its own keys alone.
func ignoreFutureStamps(fcs []liqov1beta1.ForeignCluster, now time.Time) {
	for i := range fcs {
		if liqojanitor.StampFromTheFuture(&fcs[i], now) {
			fcs[i].Annotations = maps.Clone(fcs[i].Annotations)
			delete(fcs[i].Annotations, liqojanitor.MarkedAtAnnotation)
		}
	}
}
