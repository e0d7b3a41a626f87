package janitor

import (
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"k8s.io/apimachinery/pkg/types"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// One record of a clean-up, across restarts and failovers (janitor rule 8). The cleanup annotation
// (liqojanitor.Progress) is the record: per kind, what the janitor released and what is still there ("pods
// 118/120, resourceslices 3/3, blocked 2, waiting for Liqo: app"). Each pass derives the next record from the
// one on the ForeignCluster it read live and from what the pass found and did — never from one process's
// memory — so a new leader continues the count instead of writing "nothing to release" over a finished
// clean-up, and the phase events fire on the record's own transitions, after the write that made them: a
// clean-up starts once and is done once, whichever replica gets there.

// progress is a clean-up's progress per kind: done objects released and gone, total done plus still there.
type progress struct {
	done, total map[string]int
}

// progressOf reads the record on fc: its cleanup annotation, when it belongs to the current mark (the
// janitor's first-seen-at record is there; the gate removes it with the mark), and is a clean-up's
// summary rather than the grace-window plan. Anything else reads as an empty record.
func progressOf(fc *liqov1beta1.ForeignCluster, kinds []string) progress {
	_, current := firstSightRecord(fc)
	return parseProgress(fc.Annotations[liqojanitor.CleanupAnnotation], current, kinds)
}

func parseProgress(summary string, current bool, kinds []string) progress {
	r := progress{done: map[string]int{}, total: map[string]int{}}
	p, ok := liqojanitor.ParseProgress(summary, kinds)
	if !current || !ok {
		return r
	}
	for _, k := range p.Kinds {
		r.done[k.Kind], r.total[k.Kind] = k.Done, k.Total
	}
	return r
}

// after is the record once pass t is added to r: per kind, the objects this pass released that are gone
// join the done ones, and so do those the last record left that this pass no longer finds; what the pass
// left (blocked, waiting, failed) is what is still there.
func (r progress) after(t *tally) progress {
	next := progress{done: map[string]int{}, total: map[string]int{}}
	for _, kind := range t.kinds {
		c := t.byKind[kind]
		left := map[types.UID]bool{}
		for _, uid := range c.outstanding {
			left[uid] = true
		}
		gone := 0
		for _, uid := range c.acted {
			if !left[uid] {
				gone++
			}
		}
		// What the last record left and is now gone went after the janitor's part (its owner let it go, or
		// this pass released it): done as well.
		next.done[kind] = max(r.done[kind]+gone, r.total[kind]-c.pending())
		next.total[kind] = next.done[kind] + c.pending()
	}
	return next
}

// started reports whether the record shows a clean-up: anything released or left to release.
func (r progress) started() bool {
	for _, n := range r.total {
		if n > 0 {
			return true
		}
	}
	return false
}

// complete reports whether the record shows a clean-up with nothing left.
func (r progress) complete() bool {
	if !r.started() {
		return false
	}
	for kind, n := range r.total {
		if r.done[kind] != n {
			return false
		}
	}
	return true
}

// written is the record as the cleanup annotation carries it (liqojanitor.Progress), kinds in table
// order, then how many objects stay blocked by others' finalizers and the namespaces whose
// NamespaceOffloading waits for Liqo.
func (r progress) written(kinds []string, blocked int, waitingNamespaces []string, dryRun bool) liqojanitor.Progress {
	p := liqojanitor.Progress{Blocked: blocked, DryRun: dryRun} // a dry run's is never written: it writes no record
	for _, kind := range kinds {
		p.Kinds = append(p.Kinds, liqojanitor.KindProgress{Kind: kind, Done: r.done[kind], Total: r.total[kind]})
	}
	if len(waitingNamespaces) > 0 {
		p.WaitingForLiqo = listSome(waitingNamespaces, 3)
	}
	return p
}

// summary is the record's progress as the cleanup annotation spells it.
func (r progress) summary(kinds []string, blocked int, waitingNamespaces []string, dryRun bool) string {
	return r.written(kinds, blocked, waitingNamespaces, dryRun).String()
}
