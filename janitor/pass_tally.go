package janitor

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/liqo-janitor/liqo-janitor/janitor/internal/release"
)

// counts is what one pass did with one kind.
type counts struct {
	// refused counts the writes an admission webhook stopped, or that were not tried after one did.
	released, blocked, waiting, failed, refused int
	// acted and outstanding are the objects the janitor released in this pass, and those still there
	// (blocked, waiting or failed), by UID.
	acted, outstanding []types.UID
	// first and last are the first and the last object released in this pass, for the pass's one event
	// per kind (the first is its related object).
	first, last client.Object
}

func (c *counts) pending() int { return c.blocked + c.waiting + c.failed + c.refused }

// tally is what one pass did, kind by kind in table order.
type tally struct {
	mu     sync.Mutex
	kinds  []string
	byKind map[string]*counts
	// firstErr is the first per-object error of the pass (counts.failed has how many there were).
	firstErr error
	// webhooks are the admission webhooks that refused the pass's writes, and the first such refusal.
	webhooks     map[string]bool
	firstRefusal error
}

func newTally(ts []target) *tally {
	t := &tally{byKind: map[string]*counts{}, webhooks: map[string]bool{}}
	for _, tg := range ts {
		t.kinds = append(t.kinds, tg.kind)
		t.byKind[tg.kind] = &counts{}
	}
	return t
}

func (t *tally) add(kind string, uid types.UID, o release.Outcome, err error) {
	t.addObject(kind, uid, nil, o, err)
}

// addObject is add for obj, which the pass's event per kind may name (obj may be nil).
func (t *tally) addObject(kind string, uid types.UID, obj client.Object, o release.Outcome, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.byKind[kind]
	if err == nil && isRelease(o) {
		c.released++
		c.acted = append(c.acted, uid)
		if obj != nil {
			if c.first == nil {
				c.first = obj
			}
			c.last = obj
		}
	}
	webhook, refused := release.RefusingWebhook(err)
	switch {
	case refused:
		c.refused++
		t.webhooks[webhook] = true
		if t.firstRefusal == nil {
			t.firstRefusal = err
		}
	case err != nil:
		c.failed++
		if t.firstErr == nil {
			t.firstErr = err
		}
	case o == release.Blocked || o == release.ReleasedButBlocked || o == release.WouldReleaseButBlocked:
		c.blocked++
	case o == release.Waiting:
		c.waiting++
	default:
		return
	}
	c.outstanding = append(c.outstanding, uid)
}

// isRelease reports whether o is a release (done or, in a dry run or plan, that would be done).
func isRelease(o release.Outcome) bool {
	return o == release.Released || o == release.WouldRelease || o == release.ReleasedButBlocked || o == release.WouldReleaseButBlocked
}

func (t *tally) sum(f func(*counts) int) int {
	n := 0
	for _, c := range t.byKind {
		n += f(c)
	}
	return n
}

// planSummary is what a plan's rehearsal would do, for the cleanup annotation and the Waiting event: per kind
// the objects it would release, then how many of them (or of others) stay blocked by others' finalizers, then
// the namespaces whose NamespaceOffloading would wait for Liqo, e.g. "would release pods 400, resourceslices
// 3; blocked 1; waiting for Liqo: app".
func (t *tally) planSummary(waitingNamespaces []string) string {
	var parts []string
	for _, kind := range t.kinds {
		if n := t.byKind[kind].released; n > 0 {
			parts = append(parts, fmt.Sprintf("%ss %d", strings.ToLower(kind), n))
		}
	}
	out := "would release nothing"
	if len(parts) > 0 {
		out = "would release " + strings.Join(parts, ", ")
	}
	if b := t.sum(func(c *counts) int { return c.blocked }); b > 0 {
		out += fmt.Sprintf("; blocked %d", b)
	}
	if len(waitingNamespaces) > 0 {
		out += "; waiting for Liqo: " + listSome(waitingNamespaces, 3)
	}
	return out
}

// failure is the pass's per-object errors as one bounded error: how many of the objects seen failed, and
// the first error (a pass over thousands of objects must not return thousands of errors).
func (t *tally) failure() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	failed := t.sum(func(c *counts) int { return c.failed })
	if failed == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d objects failed, first: %w", failed, t.sum(func(c *counts) int { return c.released + c.pending() }), t.firstErr)
}

// addRefused counts an object of kind left untried because webhook refused an earlier write of its kind
// in this pass.
func (t *tally) addRefused(kind string, uid types.UID, webhook string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.byKind[kind]
	c.refused++
	c.outstanding = append(c.outstanding, uid)
	t.webhooks[webhook] = true
}

// refusal is what other admission webhooks refused in a pass.
type refusal struct {
	// webhooks name them (sorted); kinds are the kinds whose writes they refused, and left what each kind
	// left to them ("resourceslices 3"); first is the first refusal.
	webhooks, kinds, left []string
	first                 error
}

// refusedBy is what other admission webhooks refused in the pass.
func (t *tally) refusedBy() refusal {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := refusal{webhooks: slices.Sorted(maps.Keys(t.webhooks)), first: t.firstRefusal}
	for _, kind := range t.kinds {
		if n := t.byKind[kind].refused; n > 0 {
			r.kinds = append(r.kinds, kind)
			r.left = append(r.left, fmt.Sprintf("%ss %d", strings.ToLower(kind), n))
		}
	}
	return r
}

// listSome joins the first n of names (sorted) and says how many more there are: the summary stays short.
func listSome(names []string, n int) string {
	names = slices.Sorted(slices.Values(names))
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
