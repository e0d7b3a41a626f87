package janitor

import (
	"slices"
	"sync"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"k8s.io/apimachinery/pkg/types"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// memory is what the janitor's reports remember of marked clusters between passes, behind its own lock:
// the last wait reason, what stayed blocked, the last plan shown, so that events say when something
// changes rather than on every pass. It decides nothing: the first sight of a mark, which does, is the
// sightings', and what paces the next pass after refused writes is the pacing's; what a clean-up released is
// recorded on the ForeignCluster, not here (report_progress.go). A restarted janitor starts it afresh and
// still finishes the job (janitor rule 7).
type memory struct {
	mu       sync.Mutex
	clusters map[types.UID]*clusterMemory
}

// clusterMemory is what memory holds for one ForeignCluster.
type clusterMemory struct {
	// pinned is how many volumes were pinned to the cluster at the last survey (internal/unpeering).
	pinned   int
	lastWait WaitReason
	// dryRun is the last dry-run pass's record (a dry run records nothing on the ForeignCluster).
	dryRun progress
	// blocked is how many objects of each kind stayed blocked at the last pass; lastBlocked their sum.
	blocked     map[string]int
	lastBlocked int
	// pending is how many objects of each kind were left at the last pass: blocked, waiting or failed.
	pending map[string]int
	// shownPlan is the summary of the last plan shown during the grace period.
	shownPlan string
	// offloadingWaits is what each waiting NamespaceOffloading waited for at the last pass.
	offloadingWaits map[types.UID]string
	// unfenced says the provider returned and is not fenced yet (the returned-clusters gauge).
	unfenced bool
	// reportedReturn and reportedFence are what a dry run reported of a return (it writes no record).
	reportedReturn, reportedFence bool
	// webhooks are the admission webhooks that refused the last pass's writes.
	webhooks []string
	// unpeering is how many objects of the cluster's unpeering were left at the last pass, per kind and
	// releasability (the liqo_janitor_unpeering_objects gauge).
	unpeering map[unpeeringKey]int
	// unwritten is the record the last pass could not write on the ForeignCluster because another admission
	// webhook refused it (nil when it wrote).
	unwritten *progress
}

func newMemory() *memory {
	return &memory{clusters: map[types.UID]*clusterMemory{}}
}

// cluster returns fc's memory, creating it. m.mu must be held.
func (m *memory) cluster(fc *liqov1beta1.ForeignCluster) *clusterMemory {
	c, ok := m.clusters[fc.UID]
	if !ok {
		c = &clusterMemory{blocked: map[string]int{}, pending: map[string]int{}, offloadingWaits: map[types.UID]string{}}
		m.clusters[fc.UID] = c
	}
	return c
}

// forget drops what is remembered of a ForeignCluster; it reports whether there was anything.
func (m *memory) forget(uid types.UID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.clusters[uid]
	delete(m.clusters, uid)
	return ok
}

// waitChanged records why fc waits, and reports whether the reason differs from the last pass's.
func (m *memory) waitChanged(fc *liqov1beta1.ForeignCluster, w WaitReason) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return swap(&m.cluster(fc).lastWait, w)
}

// swap sets *field to v and reports whether that changed it.
func swap[T comparable](field *T, v T) bool {
	changed := *field != v
	*field = v
	return changed
}

// passed folds a pass over fc into memory — what stayed blocked and pending, per kind, for the metrics —
// and reports whether the number of blocked objects changed (the blocked event says when the situation
// changes, not on every pass).
func (m *memory) passed(fc *liqov1beta1.ForeignCluster, t *tally) (blockedChanged bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.cluster(fc)
	c.blocked, c.pending = map[string]int{}, map[string]int{}
	for kind, k := range t.byKind {
		c.blocked[kind], c.pending[kind] = k.blocked, k.pending()
	}
	if blocked := t.sum(func(k *counts) int { return k.blocked }); blocked > 0 {
		blockedChanged = blocked != c.lastBlocked
		c.lastBlocked = blocked
	}
	return blockedChanged
}

// dryRunPassed records a dry-run pass's record, which a dry run never writes onto the ForeignCluster, and
// returns the one before it: the phase events of a dry run fire on these.
func (m *memory) dryRunPassed(fc *liqov1beta1.ForeignCluster, next progress) (prev progress) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.cluster(fc)
	prev, c.dryRun = c.dryRun, next
	return prev
}

// shownPlanChanged records the summary of the plan shown for fc during its grace period, and says whether
// it differs from the last one (or is the first).
func (m *memory) shownPlanChanged(fc *liqov1beta1.ForeignCluster, summary string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return swap(&m.cluster(fc).shownPlan, summary)
}

// leftByKind sums, per kind, what stayed blocked and what was left at all (pending) at the last pass of
// every remembered cluster.
func (m *memory) leftByKind() (blocked, pending map[string]int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	blocked, pending = map[string]int{}, map[string]int{}
	for _, c := range m.clusters {
		for kind, n := range c.blocked {
			blocked[kind] += n
		}
		for kind, n := range c.pending {
			pending[kind] += n
		}
	}
	return blocked, pending
}

// offloadingWaitsChanged records what fc's NamespaceOffloadings wait for, and returns the waits that began
// or changed since the last pass.
func (m *memory) offloadingWaitsChanged(fc *liqov1beta1.ForeignCluster, waits map[types.UID]offloadingWait) []offloadingWait {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.cluster(fc)
	var changed []offloadingWait
	for uid, w := range waits {
		if c.offloadingWaits[uid] != w.why {
			changed = append(changed, w)
		}
	}
	c.offloadingWaits = map[types.UID]string{}
	for uid, w := range waits {
		c.offloadingWaits[uid] = w.why
	}
	return changed
}

// returnedChanged records whether fc's provider returned and is not fenced yet, and reports whether that
// changed.
func (m *memory) returnedChanged(fc *liqov1beta1.ForeignCluster, unfenced bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return swap(&m.cluster(fc).unfenced, unfenced)
}

// returnedUnfenced counts the clusters whose provider returned and that are not fenced yet: the remembered
// ones as remembered, and the UIDs of kept unfenced returns this memory holds nothing of.
func (m *memory) returnedUnfenced(kept map[types.UID]bool) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, c := range m.clusters {
		if c.unfenced {
			n++
		}
	}
	for uid := range kept {
		if _, known := m.clusters[uid]; !known {
			n++
		}
	}
	return n
}

// returnReported records, for a dry run, that fc's return (and its fence, if fenced) was reported, and
// says which of the two had not been before.
func (m *memory) returnReported(fc *liqov1beta1.ForeignCluster, fenced bool) (newReturn, newFence bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.cluster(fc)
	newReturn, newFence = !c.reportedReturn, fenced && !c.reportedFence
	c.reportedReturn, c.reportedFence = true, c.reportedFence || fenced
	return newReturn, newFence
}

// refusedBy records which admission webhooks refused fc's last pass (sorted), and returns the ones of the
// pass before and whether that changed (the BlockedByWebhook and WebhookAnswering events fire on a change).
func (m *memory) refusedBy(fc *liqov1beta1.ForeignCluster, webhooks []string) (before []string, changed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.cluster(fc)
	before, c.webhooks = c.webhooks, webhooks
	return before, !slices.Equal(before, webhooks)
}

// keepUnwritten remembers next as fc's record the pass could not write (unwritten), or forgets it.
func (m *memory) keepUnwritten(fc *liqov1beta1.ForeignCluster, next progress, unwritten bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.cluster(fc)
	c.unwritten = nil
	if unwritten {
		c.unwritten = &next
	}
}

// unwrittenRecord is fc's record a pass could not write, when the one on the ForeignCluster, onWritten, is
// behind it (it has not started); else nil.
func (m *memory) unwrittenRecord(fc *liqov1beta1.ForeignCluster, onWritten progress) *progress {
	m.mu.Lock()
	defer m.mu.Unlock()
	if u := m.cluster(fc).unwritten; u != nil && !onWritten.started() {
		return u
	}
	return nil
}

// unpeeringKey is one series of liqo_janitor_unpeering_objects.
type unpeeringKey struct {
	kind       string
	releasable bool
}

// unpeeringLeft remembers what fc's unpeering had left at the last pass (u.More objects beyond those
// named count under the kind "other").
func (m *memory) unpeeringLeft(fc *liqov1beta1.ForeignCluster, u liqojanitor.Unpeering) {
	m.mu.Lock()
	defer m.mu.Unlock()
	left := map[unpeeringKey]int{}
	for _, o := range u.Left {
		left[unpeeringKey{kind: o.Kind, releasable: o.Releasable}]++
	}
	if u.More > 0 {
		left[unpeeringKey{kind: "other"}] += u.More
	}
	m.cluster(fc).unpeering = left
	m.cluster(fc).pinned = u.PinnedVolumes
}

// pinnedVolumes sums the volumes pinned to the remembered clusters at their last pass.
func (m *memory) pinnedVolumes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, c := range m.clusters {
		n += c.pinned
	}
	return n
}

// unpeeringByKind sums what the remembered clusters' unpeerings had left.
func (m *memory) unpeeringByKind() map[unpeeringKey]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[unpeeringKey]int{}
	for _, c := range m.clusters {
		for k, n := range c.unpeering {
			out[k] += n
		}
	}
	return out
}
