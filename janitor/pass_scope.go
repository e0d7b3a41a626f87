package janitor

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor/internal/liqoversion"
	"github.com/liqo-janitor/liqo-janitor/janitor/internal/podwatch"
)

// scope is what one pass over a dead cluster knows: the cluster, how the pass writes (or only reports),
// what it found while listing, the dead set it decides on, whether it has been stopped, and what its
// NamespaceOffloadings wait for. Its methods are the only ones that touch it; releases read it
// concurrently.
type scope struct {
	// fc is the dead cluster's ForeignCluster, as read live from the API server.
	fc *liqov1beta1.ForeignCluster
	// clusterID is fc's spec.clusterID.
	clusterID string
	// dryRun reports instead of writing.
	dryRun bool
	// liqo is the installed Liqo version: what an older Liqo needs done (janitor rule 12).
	liqo liqoversion.Version
	// planOnly: the cluster is in its grace period, and the pass computes what it would release once that
	// ends, writing nothing (janitor rule 9).
	planOnly bool
	// drain holds the pods that may be force-deleted though not terminating: those Liqo's own drain selects
	// on the Node of a VirtualNode of the cluster that is itself being deleted. Filled by listPods before
	// any release, read-only afterwards.
	drain map[types.UID]bool
	// undrained holds, for the other pods that are not terminating on such a Node, why the janitor leaves
	// them alone (one of the fixed notDrainedBy reasons). Filled by listPods like drain.
	undrained map[types.UID]string
	// listed is where each pod listPods returned was, and at which resourceVersion (leftPods).
	listed map[types.UID]podAt
	// recheck is the pass's live re-check of the cluster (the reconciler's: dead, or not any more; it
	// refreshes the dead set through setDead). Call it through stillDead only.
	recheck func(context.Context) (bool, error)
	// stopped: a re-check found the cluster no longer dead; no write starts after that.
	stopped atomic.Bool

	mu sync.Mutex
	// dead says, for every cluster ID with a ForeignCluster, whether it is dead (others count as live), as
	// of the last live re-check (setDead); read it through deadSet only.
	dead map[string]bool
	// waits says, for each NamespaceOffloading that waits for Liqo, what it waits for.
	waits map[types.UID]offloadingWait
	// unpeering is what the pass found of the cluster's unpeering (janitor rule 13), nil before the survey.
	unpeering *liqojanitor.Unpeering
	// refused names, per kind, the admission webhook that refused a write of that kind in this pass: the
	// pass writes no more of that kind (janitor rule 11).
	refused map[string]string
	// wake is how soon the pass wants to come back (a release that waits for a time: target_fabric.go); zero is
	// not at all.
	wake time.Duration
	// retry are the kinds an admission webhook refused in the last pass: the first write of each goes
	// alone, and only if it passes do the others follow.
	retry map[string]bool
}

// offloadingWait is what one NamespaceOffloading waits for.
type offloadingWait struct {
	namespace, why string
}

// podAt is a listed pod's node and resourceVersion.
type podAt struct {
	node, resourceVersion string
}

// newScope starts a pass over fc, given which cluster IDs are dead. Until a re-check is set, the cluster
// counts as still dead (a plan's rehearsal, which writes nothing).
func newScope(fc *liqov1beta1.ForeignCluster, dead map[string]bool, dryRun bool, liqo liqoversion.Version) *scope {
	return &scope{fc: fc, clusterID: string(fc.Spec.ClusterID), dryRun: dryRun, dead: dead, liqo: liqo,
		recheck: func(context.Context) (bool, error) { return true, nil },
		drain:   map[types.UID]bool{}, undrained: map[types.UID]string{}, listed: map[types.UID]podAt{},
		waits: map[types.UID]offloadingWait{}, refused: map[string]string{}}
}

// checkWith sets the pass's live re-check (stillDead runs it), and the kinds an admission webhook refused
// in the last pass (firstRetry), before the pass starts.
func (s *scope) checkWith(recheck func(context.Context) (bool, error), retry map[string]bool) {
	s.recheck, s.retry = recheck, retry
}

// rehearsal turns the pass into the plan of what it would release once the cluster's grace period ends
// (janitor rule 9): the cluster counts as dead, every re-check says so, and no write is made.
func (s *scope) rehearsal() {
	s.planOnly = true
	dead := maps.Clone(s.deadSet())
	dead[s.clusterID] = true
	s.setDead(dead)
	s.recheck = func(context.Context) (bool, error) { return true, nil }
}

// listedPod notes where listPods found pod (leftPods) and whether the pass may force-delete it though it
// is not terminating (drain: Liqo's drain selects it) or leaves it alone and why (undrained). listPods
// fills these before any release; they are read-only afterwards.
func (s *scope) listedPod(pod client.Object, node string, drain bool, undrained string) {
	s.listed[pod.GetUID()] = podAt{node: node, resourceVersion: pod.GetResourceVersion()}
	switch {
	case drain:
		s.drain[pod.GetUID()] = true
	case undrained != "":
		s.undrained[pod.GetUID()] = undrained
	}
}

// surveyed keeps what the survey found of the cluster's unpeering (janitor rule 13).
func (s *scope) surveyed(u liqojanitor.Unpeering) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unpeering = &u
}

// unpeeringFound is a copy of what the survey found of the unpeering, and false when there was no survey.
func (s *scope) unpeeringFound() (liqojanitor.Unpeering, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unpeering == nil {
		return liqojanitor.Unpeering{}, false
	}
	return *s.unpeering, true
}

// noteUnpeering adds a note to what the survey found (nothing without a survey).
func (s *scope) noteUnpeering(note string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unpeering != nil {
		s.unpeering.Notes = append(slices.Clip(s.unpeering.Notes), note)
	}
}

// wakeIn asks for the next pass within d at the latest.
func (s *scope) wakeIn(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wake == 0 || d < s.wake {
		s.wake = d
	}
}

// wakeAfter is how soon the pass asked to come back (zero: not at all).
func (s *scope) wakeAfter() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wake
}

// refuse records that webhook refused a write of kind: the pass writes no more of it.
func (s *scope) refuse(kind, webhook string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.refused[kind]; !ok {
		s.refused[kind] = webhook
	}
}

// firstRetry reports whether obj of kind is the first write of a kind refused in the last pass, once per
// kind.
func (s *scope) firstRetry(kind string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := s.retry[kind]
	delete(s.retry, kind)
	return first
}

// refusal names the admission webhook that refused a write of kind in this pass, "" if none did.
func (s *scope) refusal(kind string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused[kind]
}

// stillDead runs the pass's live re-check (janitor rule 1). The first time it finds the cluster no longer
// dead it answers false for good: the pass is stopped — the one place a pass stops — and starts no more
// writes. A re-check that fails answers false with its error (no write on its account), without stopping
// the pass: its caller fails.
func (s *scope) stillDead(ctx context.Context) (bool, error) {
	if s.stopped.Load() {
		return false, nil
	}
	dead, err := s.recheck(ctx)
	switch {
	case err != nil:
		return false, err
	case !dead:
		s.stopped.Store(true)
	}
	return dead, nil
}

// setDead replaces the dead set with one computed from a fresh live read of the ForeignClusters (janitor
// rule 1): the reconciler's live re-check calls it before every batch of writes, so every decision that
// depends on another cluster being dead (a NamespaceOffloading spanning several) is taken on the world as
// it was at the last re-check, not as it was when the pass began. Releases read it concurrently. It takes
// dead over: the caller must not change it afterwards.
func (s *scope) setDead(dead map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dead = dead
}

// deadSet returns the current dead set; the caller must not modify it (setDead replaces it, never
// changes it in place).
func (s *scope) deadSet() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dead
}

// reportOnly says whether the pass only reports what it would do: a dry run, or a plan.
func (s *scope) reportOnly() bool { return s.dryRun || s.planOnly }

// waitFor records what a NamespaceOffloading waits for (releases run concurrently).
func (s *scope) waitFor(obj client.Object, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waits[obj.GetUID()] = offloadingWait{namespace: obj.GetNamespace(), why: why}
}

// offloadingWaits is a copy of what the pass's NamespaceOffloadings wait for.
func (s *scope) offloadingWaits() map[types.UID]offloadingWait {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.waits)
}

// waitingNamespaces are the namespaces whose NamespaceOffloading waits for Liqo in this pass.
func (s *scope) waitingNamespaces() []string {
	var out []string
	for _, w := range s.offloadingWaits() {
		out = append(out, w.namespace)
	}
	return out
}

// leftPods is what the pass leaves on each node for the pod watches (podwatch.Watcher.Resume): the pods it
// listed that are still there by its own account (blocked, waiting, failed), as it listed them.
func (s *scope) leftPods(t *tally) podwatch.Left {
	t.mu.Lock()
	defer t.mu.Unlock()
	left := podwatch.Left{}
	for _, uid := range t.byKind[podKind].outstanding {
		at, ok := s.listed[uid]
		if !ok {
			continue
		}
		if left[at.node] == nil {
			left[at.node] = map[types.UID]string{}
		}
		left[at.node][uid] = at.resourceVersion
	}
	return left
}
