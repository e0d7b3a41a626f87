package janitor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// counts is what one pass did with one kind.
type counts struct {
	released, blocked, waiting, failed int
	// acted and outstanding are the objects the janitor released in this pass, and those still there
	// (blocked, waiting or failed), by UID.
	acted, outstanding []types.UID
}

func (c *counts) pending() int { return c.blocked + c.waiting + c.failed }

// tally is what one pass did, kind by kind in table order.
type tally struct {
	mu     sync.Mutex
	kinds  []string
	byKind map[string]*counts
	errs   []error
}

func newTally(ts []target) *tally {
	t := &tally{byKind: map[string]*counts{}}
	for _, tg := range ts {
		t.kinds = append(t.kinds, tg.kind)
		t.byKind[tg.kind] = &counts{}
	}
	return t
}

func (t *tally) add(kind string, uid types.UID, o outcome, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.byKind[kind]
	if err == nil && (o == released || o == wouldRelease || o == releasedButBlocked) {
		c.released++
		c.acted = append(c.acted, uid)
	}
	switch {
	case err != nil:
		c.failed++
		t.errs = append(t.errs, err)
	case o == blocked || o == releasedButBlocked:
		c.blocked++
	case o == waiting:
		c.waiting++
	default:
		return
	}
	c.outstanding = append(c.outstanding, uid)
}

func (t *tally) sum(f func(*counts) int) int {
	n := 0
	for _, c := range t.byKind {
		n += f(c)
	}
	return n
}

// work is one object to release, and the target that knows how.
type work struct {
	tg  target
	obj client.Object
}

// cleanUp walks the table of targets for a dead cluster, stage by stage: within a stage the objects of
// all its targets are released together, in batches of concurrent writes with a live re-check of the
// cluster before each batch.
func (r *Reconciler) cleanUp(ctx context.Context, s *scope) (*tally, error) {
	ts := r.targets()
	t := newTally(ts)
	for stage := range stages {
		var todo []work
		for _, tg := range ts {
			if tg.stage != stage {
				continue
			}
			objs, err := tg.list(ctx, s)
			if err != nil {
				return t, err
			}
			for _, obj := range objs {
				todo = append(todo, work{tg: tg, obj: obj})
			}
		}
		for start := 0; start < len(todo); start += r.Options.BatchSize {
			if err := r.stillDead(ctx, s); err != nil {
				return t, err
			}
			r.releaseBatch(ctx, s, todo[start:min(start+r.Options.BatchSize, len(todo))], t)
		}
	}
	return t, nil
}

// releaseBatch releases a batch with up to Options.Workers concurrent writes.
func (r *Reconciler) releaseBatch(ctx context.Context, s *scope, batch []work, t *tally) {
	sem := make(chan struct{}, r.Options.Workers)
	var wg sync.WaitGroup
	for _, w := range batch {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			o, err := w.tg.release(ctx, s, w.obj)
			t.add(w.tg.kind, w.obj.GetUID(), o, err)
			r.recordObject(ctx, s, w.tg.kind, w.obj, o, err)
		})
	}
	wg.Wait()
}

// recordObject makes one object's outcome visible: a log line, an event on the object, a metric.
func (r *Reconciler) recordObject(ctx context.Context, s *scope, kind string, obj client.Object, o outcome, err error) {
	log := ctrl.LoggerFrom(ctx).WithValues(kind, klog.KObj(obj))
	switch {
	case err != nil:
		objectsTotal.WithLabelValues(kind, resultFailed).Inc()
		log.V(1).Info("Releasing failed, will retry", "err", err.Error())
	case o == released || o == releasedButBlocked:
		objectsTotal.WithLabelValues(kind, resultReleased).Inc()
		log.Info("Released object", "action", releaseAction(kind))
		if kind != podKind || r.Options.PodEvents {
			r.Recorder.Eventf(obj, s.fc, "Normal", "Released", releaseAction(kind),
				"Released by liqo-janitor: its cluster %s is marked permanently unreachable%s", s.clusterID, reasonGiven(s.fc))
		}
	case o == wouldRelease:
		objectsTotal.WithLabelValues(kind, resultDryRun).Inc()
		log.Info("Would release object (dry run)")
		r.Recorder.Eventf(obj, s.fc, "Normal", "WouldRelease", releaseAction(kind),
			"Dry run: liqo-janitor would release it (its cluster %s is marked permanently unreachable)", s.clusterID)
	case o == blocked:
		objectsTotal.WithLabelValues(kind, resultBlocked).Inc()
		log.V(1).Info("Object blocked by finalizers liqo-janitor does not own", "finalizers", obj.GetFinalizers())
	}
}

func releaseAction(kind string) string {
	if kind == podKind {
		return "ForceDelete"
	}
	return "RemoveFinalizer"
}

// summary is the cleanup annotation: per kind, the objects released and gone over all objects seen
// (released ones and those still there), then how many stay blocked by others' finalizers, then the
// namespaces whose NamespaceOffloading waits for Liqo, e.g. "pods 118/120, resourceslices 3/3,
// namespaceoffloadings 1/2, blocked 2, waiting for Liqo: app".
func (t *tally) summary(acted map[string]map[types.UID]bool, waitingNamespaces []string, dryRun bool) string {
	var parts []string
	for _, kind := range t.kinds {
		c := t.byKind[kind]
		done, total := len(acted[kind]), len(acted[kind])
		for _, uid := range c.outstanding {
			if acted[kind][uid] {
				done--
			} else {
				total++
			}
		}
		if total > 0 {
			parts = append(parts, fmt.Sprintf("%ss %d/%d", strings.ToLower(kind), done, total))
		}
	}
	if b := t.sum(func(c *counts) int { return c.blocked }); b > 0 {
		parts = append(parts, fmt.Sprintf("blocked %d", b))
	}
	if len(waitingNamespaces) > 0 {
		parts = append(parts, "waiting for Liqo: "+listSome(waitingNamespaces, 3))
	}
	if len(parts) == 0 {
		parts = append(parts, "nothing to release")
	}
	if dryRun {
		return "dry run: would release " + strings.Join(parts, ", ")
	}
	return strings.Join(parts, ", ")
}

func joinErrs(err error, errs []error) error {
	return errors.Join(append([]error{err}, errs...)...)
}

// listSome joins the first n of names (sorted) and says how many more there are: the summary stays short.
func listSome(names []string, n int) string {
	names = slices.Sorted(slices.Values(names))
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
