package janitor

import (
	"context"
	"runtime/debug"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor/internal/release"
)

// target is one kind of object a dead cluster leaves stuck: how to find the terminating objects tied to
// the cluster, and how to release one of them. The releaser walks a table of targets (targetTable).
type target struct {
	kind    string
	stage   int
	list    func(ctx context.Context, s *scope) ([]client.Object, error)
	release func(ctx context.Context, s *scope, obj client.Object) (release.Outcome, error)
}

// Kinds of the core GVKs the janitor reads metadata-only (Liqo's are liqojanitor's: liqo.go).
var (
	nodeGVK      = corev1.SchemeGroupVersion.WithKind("Node")
	namespaceGVK = corev1.SchemeGroupVersion.WithKind("Namespace")
	secretGVK    = corev1.SchemeGroupVersion.WithKind("Secret")
)

// Target kinds that are not one of the GVKs above.
const (
	podKind        = "Pod"
	offloadingKind = "NamespaceOffloading"
)

// Stages order a clean-up: first the objects nothing else waits for — pods (what a VirtualNode drain
// waits on) and the replicated objects — released together; then NamespaceOffloadings, decided on the
// NamespaceMaps the first stage may have released; last the identity Secret, which waits for every
// replicated object of its namespace to be gone.
const (
	stageFirst = iota
	stageOffloading
	stageIdentity
	stages
)

// allKinds are the kinds of every target, opt-in ones included (the kind label of the metrics).
var allKinds = []string{podKind, liqojanitor.ResourceSliceGVK.Kind, liqojanitor.NamespaceMapGVK.Kind, liqojanitor.RenewGVK.Kind, liqojanitor.InternalFabricGVK.Kind, offloadingKind, secretGVK.Kind}

// targetTable is what the janitor releases, in stage order: the targets read and write through src.
func targetTable(src *sources, o Options) []target {
	ts := []target{
		{kind: podKind, stage: stageFirst, list: src.listPods, release: src.releasePod},
		src.replicated(liqojanitor.ResourceSliceGVK),
		src.replicated(liqojanitor.NamespaceMapGVK),
		src.replicated(liqojanitor.RenewGVK),
		{kind: liqojanitor.InternalFabricGVK.Kind, stage: stageFirst, list: src.listInternalFabrics, release: src.releaseInternalFabric},
		{kind: offloadingKind, stage: stageOffloading, list: src.listOffloadings, release: src.releaseOffloading},
	}
	if o.ReleaseIdentitySecrets {
		ts = append(ts, target{kind: secretGVK.Kind, stage: stageIdentity, list: src.listIdentitySecrets, release: src.releaseIdentitySecret})
	}
	return ts
}

// releaser is the worker pool that runs the target table over a dead cluster: it lists each stage's
// objects, writes with Options.Workers concurrent writes, re-checking the cluster live every
// Options.BatchSize writes, and makes each object's outcome visible (a log line, a metric, with
// --object-events an event on the object). What a pass did comes back as its end; the pass as a whole is
// the reporter's.
type releaser struct {
	src *sources
	// recorder emits events on released objects (--object-events).
	recorder events.EventRecorder
	options  Options
	// passes is how many passes are releasing now, and handled how many objects the passes since it was
	// last zero have handled (see settle).
	passes, handled atomic.Int64
}

// passEnd is what a pass came to: what it did with each object, whether it stopped because the cluster
// stopped being dead under it (no error: the change's own event decides what comes next), and the error
// that ended it early (a list or a re-check failed; per-object failures are the tally's).
type passEnd struct {
	tally   *tally
	stopped bool
	err     error
}

// finished reports whether the pass went through: not stopped, no error.
func (e passEnd) finished() bool { return !e.stopped && e.err == nil }

// largeCleanup is how many objects the passes of a busy spell handle before the janitor, once no pass
// runs any more, hands the memory they used back to the operating system at once (debug.FreeOSMemory)
// instead of keeping it for the Go runtime's slow background return: a controller that idles between
// rare clean-ups should not keep a clean-up's peak resident for minutes.
const largeCleanup = 1000

// stopWatching stops watching the pods of the ForeignCluster named cluster.
func (r *releaser) stopWatching(cluster string) { r.src.pods.WatchOnly(cluster, nil) }

// work is one object to release, and the target that knows how.
type work struct {
	tg  target
	obj client.Object
}

// release walks the table of targets for a dead cluster, stage by stage: within a stage the objects of
// all its targets are released together by one pool of Options.Workers concurrent writes, and the live
// re-check (s.stillDead) runs before every Options.BatchSize writes are started; a cluster no longer dead
// stops the pass. The pool is not drained for the re-check: writes already started (after the previous
// re-check) go on while it runs, so no write starts more than BatchSize writes after a re-check that
// found the cluster dead, and the workers do not idle at every batch boundary. While the pass writes pods,
// their nodes' watches are paused (see package podwatch).
func (r *releaser) release(ctx context.Context, s *scope) passEnd {
	r.passes.Add(1)
	defer r.settle()
	ts := targetTable(r.src, r.options)
	end := passEnd{tally: newTally(ts)}
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
				end.err = err
				return end
			}
			for _, obj := range objs {
				todo = append(todo, work{tg: tg, obj: obj})
			}
		}
		if !s.planOnly { // a plan holds little; only a clean-up's peak is worth handing back
			r.handled.Add(int64(len(todo)))
		}
		if stage == stageFirst && !s.reportOnly() && len(s.listed) > 0 {
			// The pass's own pod writes are no news to the pod watches: not watched until it ends.
			r.src.pods.Pause(s.fc.Name)
			resume = func() { r.src.pods.Resume(s.fc.Name, s.leftPods(end.tally)) }
		}
		end.err = r.releaseAll(ctx, s, todo, end.tally)
		if end.stopped = s.stopped.Load(); end.stopped || end.err != nil {
			return end
		}
	}
	return end
}

// rehearse runs the pass s would be once the cluster's grace period ends — the cluster dead, every write
// replaced by its outcome — and returns what it would do (a plan, janitor rule 9).
func (r *releaser) rehearse(ctx context.Context, s *scope) passEnd {
	s.rehearsal()
	return r.release(ctx, s)
}

// settle ends a pass; the last pass of a busy spell that handled at least largeCleanup objects returns
// their memory to the operating system.
func (r *releaser) settle() {
	if r.passes.Add(-1) == 0 && r.handled.Load() >= largeCleanup {
		r.handled.Store(0)
		debug.FreeOSMemory()
	}
}

// releaseAll releases todo with up to Options.Workers concurrent writes, re-checking the cluster live
// (s.stillDead) before the first write and then before every Options.BatchSize more — once a worker is
// free for that write, so the re-check is as close as it can be to the writes it allows; it returns once
// every started write is done. A write whose own re-check found the cluster no longer dead (a retried
// NamespaceOffloading, releaseOffloading) stops the pass as a batch's re-check does: no more writes start.
func (r *releaser) releaseAll(ctx context.Context, s *scope, todo []work, t *tally) error {
	sem := make(chan struct{}, r.options.Workers)
	var wg sync.WaitGroup
	defer wg.Wait()
	for i, w := range todo {
		sem <- struct{}{}
		if i%r.options.BatchSize == 0 {
			if dead, err := s.stillDead(ctx); !dead {
				return err
			}
		}
		if s.stopped.Load() {
			return nil
		}
		if s.firstRetry(w.tg.kind) { // refused in the last pass: one write alone, then the rest or none
			r.releaseOne(ctx, s, w, t)
			<-sem
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			r.releaseOne(ctx, s, w, t)
		})
	}
	return nil
}

// releaseOne releases one object, unless an admission webhook refused a write of its kind earlier in the
// pass: then it is left for the next pass, untried (janitor rule 11).
func (r *releaser) releaseOne(ctx context.Context, s *scope, w work, t *tally) {
	if webhook := s.refusal(w.tg.kind); webhook != "" {
		t.addRefused(w.tg.kind, w.obj.GetUID(), webhook)
		objectsTotal.WithLabelValues(w.tg.kind, resultRefused).Inc()
		return
	}
	o, err := w.tg.release(ctx, s, w.obj)
	if webhook, ok := release.RefusingWebhook(err); ok {
		s.refuse(w.tg.kind, webhook)
	}
	t.addObject(w.tg.kind, w.obj.GetUID(), w.obj, o, err)
	r.reportObject(ctx, s, w.tg.kind, w.obj, o, err)
}

// reportObject makes one object's outcome visible: a log line, a metric, and with --object-events an
// event on the object (the pass's events per kind, on the ForeignCluster, are the reporter's).
func (r *releaser) reportObject(ctx context.Context, s *scope, kind string, obj client.Object, o release.Outcome, err error) {
	if s.planOnly {
		return // a plan is reported as a whole, on the ForeignCluster
	}
	log := ctrl.LoggerFrom(ctx).WithValues(kind, klog.KObj(obj))
	webhook, refused := release.RefusingWebhook(err)
	switch {
	case refused:
		objectsTotal.WithLabelValues(kind, resultRefused).Inc()
		log.Info("An admission webhook refused the release, will retry", "webhook", webhook, "err", err.Error())
	case err != nil:
		objectsTotal.WithLabelValues(kind, resultFailed).Inc()
		log.V(1).Info("Releasing failed, will retry", "err", err.Error())
	case o == release.Released || o == release.ReleasedButBlocked:
		objectsTotal.WithLabelValues(kind, resultReleased).Inc()
		log.Info("Released object", "action", releaseAction(kind))
		if r.options.ObjectEvents {
			r.recorder.Eventf(obj, s.fc, "Normal", "Released", releaseAction(kind),
				"Released by liqo-janitor: its cluster %s is marked permanently unreachable%s", s.clusterID, reasonGiven(s.fc))
		}
	case o == release.WouldRelease || o == release.WouldReleaseButBlocked:
		objectsTotal.WithLabelValues(kind, resultDryRun).Inc()
		log.Info("Would release object (dry run)")
		if r.options.ObjectEvents {
			r.recorder.Eventf(obj, s.fc, "Normal", "WouldRelease", releaseAction(kind),
				"Dry run: liqo-janitor would release it (its cluster %s is marked permanently unreachable)", s.clusterID)
		}
	case o == release.Blocked && kind == podKind && s.undrained[obj.GetUID()] != "":
		objectsTotal.WithLabelValues(kind, resultBlocked).Inc()
		log.Info("Pod left alone on a VirtualNode being deleted: Liqo's drain does not select it", "reason", s.undrained[obj.GetUID()])
	case o == release.Blocked:
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
