package janitor

import (
	"context"
	"sync"

	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// releaser owns the target table (targets.go) and the batch/worker loop that releases a dead cluster's
// objects: it lists each target's objects, writes with Options.Workers concurrent writes per batch of
// Options.BatchSize, and makes each object's outcome visible (a log line, an event on the object, a
// metric). What a pass did comes back as a tally; the pass as a whole is the reporter's.
type releaser struct {
	// client reads from the manager's narrow caches and writes (patches and deletes).
	client client.Client
	// apiReader reads live from the API server, right before irreversible steps.
	apiReader client.Reader
	// recorder emits events on released objects.
	recorder events.EventRecorder
	// pods watches the pods of dead virtual nodes.
	pods    *podWatcher
	options Options
}

// forget stops watching the pods of the ForeignCluster named cluster.
func (r *releaser) forget(cluster string) { r.pods.retain(cluster, nil) }

// work is one object to release, and the target that knows how.
type work struct {
	tg  target
	obj client.Object
}

// release walks the table of targets for a dead cluster, stage by stage: within a stage the objects of
// all its targets are released together, in batches of concurrent writes, and stillDead — the live
// re-check of the cluster — runs before each batch; its error stops the pass.
func (r *releaser) release(ctx context.Context, s *scope, stillDead func(context.Context) error) (*tally, error) {
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
		for start := 0; start < len(todo); start += r.options.BatchSize {
			if err := stillDead(ctx); err != nil {
				return t, err
			}
			r.releaseBatch(ctx, s, todo[start:min(start+r.options.BatchSize, len(todo))], t)
		}
	}
	return t, nil
}

// releaseBatch releases a batch with up to Options.Workers concurrent writes.
func (r *releaser) releaseBatch(ctx context.Context, s *scope, batch []work, t *tally) {
	sem := make(chan struct{}, r.options.Workers)
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
func (r *releaser) recordObject(ctx context.Context, s *scope, kind string, obj client.Object, o outcome, err error) {
	log := ctrl.LoggerFrom(ctx).WithValues(kind, klog.KObj(obj))
	switch {
	case err != nil:
		objectsTotal.WithLabelValues(kind, resultFailed).Inc()
		log.V(1).Info("Releasing failed, will retry", "err", err.Error())
	case o == released || o == releasedButBlocked:
		objectsTotal.WithLabelValues(kind, resultReleased).Inc()
		log.Info("Released object", "action", releaseAction(kind))
		if kind != podKind || r.options.PodEvents {
			r.recorder.Eventf(obj, s.fc, "Normal", "Released", releaseAction(kind),
				"Released by liqo-janitor: its cluster %s is marked permanently unreachable%s", s.clusterID, reasonGiven(s.fc))
		}
	case o == wouldRelease:
		objectsTotal.WithLabelValues(kind, resultDryRun).Inc()
		log.Info("Would release object (dry run)")
		r.recorder.Eventf(obj, s.fc, "Normal", "WouldRelease", releaseAction(kind),
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
