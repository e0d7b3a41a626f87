package janitor

import (
	"context"
	"errors"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// releaser owns the target table (targets.go) and the worker loop that releases a dead cluster's objects:
// it lists each target's objects, writes with Options.Workers concurrent writes, re-checking the cluster
// live every Options.BatchSize writes, and makes each object's outcome visible (a log line, an event on
// the object, a metric). What a pass did comes back as a tally; the pass as a whole is the reporter's.
type releaser struct {
	// client reads from the manager's narrow caches and writes (patches and deletes).
	client client.Client
	// apiReader reads live from the API server, right before irreversible steps.
	apiReader client.Reader
	// recorder emits events on released objects.
	recorder events.EventRecorder
	// pods lists the pods of dead virtual nodes: from per-node watches in the controller, live for Plan.
	pods    podSource
	options Options
	// passes is how many passes are releasing now, and handled how many objects the passes since it was
	// last zero have handled (see settle).
	passes, handled atomic.Int64
}

// largeCleanup is how many objects the passes of a busy spell handle before the janitor, once no pass
// runs any more, hands the memory they used back to the operating system at once (debug.FreeOSMemory)
// instead of keeping it for the Go runtime's slow background return: a controller that idles between
// rare clean-ups should not keep a clean-up's peak resident for minutes.
const largeCleanup = 1000

// podSource lists the pods bound to a virtual node of a cluster, and forgets the nodes of a cluster not
// in keep.
type podSource interface {
	pods(ctx context.Context, cluster, node string, draining bool) ([]client.Object, error)
	retain(cluster string, keep map[string]bool)
	// pause stops the cluster's pod watches while a pass writes; resume restarts them, given what the
	// pass left on each node (see podWatcher).
	pause(cluster string)
	resume(cluster string, left leftPods)
}

// forget stops watching the pods of the ForeignCluster named cluster.
func (r *releaser) forget(cluster string) { r.pods.retain(cluster, nil) }

// work is one object to release, and the target that knows how.
type work struct {
	tg  target
	obj client.Object
}

// release walks the table of targets for a dead cluster, stage by stage: within a stage the objects of
// all its targets are released together by one pool of Options.Workers concurrent writes, and stillDead —
// the live re-check of the cluster — runs before every Options.BatchSize writes are started; its error
// stops the pass. The pool is not drained for the re-check: writes already started (after the previous
// re-check) go on while it runs, so no write starts more than BatchSize writes after a re-check that
// found the cluster dead, and the workers do not idle at every batch boundary.
func (r *releaser) release(ctx context.Context, s *scope, stillDead func(context.Context) error) (*tally, error) {
	r.passes.Add(1)
	defer r.settle()
	s.recheck = stillDead
	ts := r.targets()
	t := newTally(ts)
	resume := func() {}
	defer func() { resume() }()
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
		if !s.plan { // a plan holds little; only a clean-up's peak is worth handing back
			r.handled.Add(int64(len(todo)))
		}
		if stage == stageFirst && !s.reportOnly() && len(s.listed) > 0 {
			// The pass's own pod writes are no news to the pod watches: not watched until it ends.
			r.pods.pause(s.fc.Name)
			resume = func() { r.pods.resume(s.fc.Name, s.leftPods(t)) }
		}
		if err := r.releaseAll(ctx, s, todo, t, stillDead); err != nil {
			return t, err
		}
	}
	return t, nil
}

// settle ends a pass; the last pass of a busy spell that handled at least largeCleanup objects returns
// their memory to the operating system.
func (r *releaser) settle() {
	if r.passes.Add(-1) == 0 && r.handled.Load() >= largeCleanup {
		r.handled.Store(0)
		debug.FreeOSMemory()
	}
}

// releaseAll releases todo with up to Options.Workers concurrent writes, calling stillDead before the
// first write and then before every Options.BatchSize more — once a worker is free for that write, so the
// re-check is as close as it can be to the writes it allows; it returns once every started write is done.
// A write whose own live re-check found the cluster no longer dead (a retried NamespaceOffloading,
// releaseOffloading) stops the pass as a batch's re-check would: no more writes start, errStopped.
func (r *releaser) releaseAll(ctx context.Context, s *scope, todo []work, t *tally, stillDead func(context.Context) error) error {
	sem := make(chan struct{}, r.options.Workers)
	var wg sync.WaitGroup
	var stopped atomic.Bool
	for i, w := range todo {
		sem <- struct{}{}
		if stopped.Load() {
			break
		}
		if i%r.options.BatchSize == 0 {
			if err := stillDead(ctx); err != nil {
				wg.Wait()
				return err
			}
		}
		wg.Go(func() {
			defer func() { <-sem }()
			o, err := w.tg.release(ctx, s, w.obj)
			if errors.Is(err, errStopped) {
				stopped.Store(true)
				o, err = waiting, nil // not released; the pass ends as stopped, not as failed
			}
			t.addObject(w.tg.kind, w.obj.GetUID(), w.obj, o, err)
			r.recordObject(ctx, s, w.tg.kind, w.obj, o, err)
		})
	}
	wg.Wait()
	if stopped.Load() {
		return errStopped
	}
	return nil
}

// recordObject makes one object's outcome visible: a log line, a metric, and with --object-events an
// event on the object (the pass's events per kind, on the ForeignCluster, are the reporter's).
func (r *releaser) recordObject(ctx context.Context, s *scope, kind string, obj client.Object, o outcome, err error) {
	if s.plan {
		return // a plan is reported as a whole, on the ForeignCluster
	}
	log := ctrl.LoggerFrom(ctx).WithValues(kind, klog.KObj(obj))
	switch {
	case err != nil:
		objectsTotal.WithLabelValues(kind, resultFailed).Inc()
		log.V(1).Info("Releasing failed, will retry", "err", err.Error())
	case o == released || o == releasedButBlocked:
		objectsTotal.WithLabelValues(kind, resultReleased).Inc()
		log.Info("Released object", "action", releaseAction(kind))
		if r.options.ObjectEvents {
			r.recorder.Eventf(obj, s.fc, "Normal", "Released", releaseAction(kind),
				"Released by liqo-janitor: its cluster %s is marked permanently unreachable%s", s.clusterID, reasonGiven(s.fc))
		}
	case o == wouldRelease || o == wouldReleaseButBlocked:
		objectsTotal.WithLabelValues(kind, resultDryRun).Inc()
		log.Info("Would release object (dry run)")
		if r.options.ObjectEvents {
			r.recorder.Eventf(obj, s.fc, "Normal", "WouldRelease", releaseAction(kind),
				"Dry run: liqo-janitor would release it (its cluster %s is marked permanently unreachable)", s.clusterID)
		}
	case o == blocked && kind == podKind && s.undrained[obj.GetUID()] != "":
		objectsTotal.WithLabelValues(kind, resultBlocked).Inc()
		log.Info("Pod left alone on a VirtualNode being deleted: Liqo's drain does not select it", "reason", s.undrained[obj.GetUID()])
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
