package janitor

import (
	"context"
	"errors"
	"fmt"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// reconciler is the janitor: it reconciles ForeignClusters, and for dead ones releases what they leave
// stuck. A pass reads the ForeignCluster, assesses its cluster ID live, then waits or cleans up (the
// releaser), reports (the reporter) and returns; what it remembers between passes is the memory's.
type reconciler struct {
	// client reads the ForeignClusters from the manager's cache.
	client client.Client
	// apiReader reads live from the API server, right before irreversible steps.
	apiReader client.Reader
	clock     clock.PassiveClock
	options   Options
	memory    *memory
	releaser  *releaser
	reporter  *reporter
}

// errStopped says a pass stopped because the cluster stopped being dead under it.
var errStopped = errors.New("the cluster is no longer dead")

// Reconcile releases what a dead cluster leaves stuck; for any other ForeignCluster it writes nothing.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	fc, err := r.read(ctx, req.Name)
	if fc == nil || err != nil {
		return ctrl.Result{}, err
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("ForeignCluster", klog.KObj(fc), "clusterID", fc.Spec.ClusterID))

	live, liveness, fcs, err := r.assessLive(ctx, fc.Name)
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case live == nil || liveness.Wait == WaitNotMarked: // the cache lags: it is gone, or no longer marked
		r.forget(fc.Name, fc.UID)
		return ctrl.Result{}, nil
	case liveness.Wait == WaitGracePeriod:
		return r.plan(ctx, live, liveness, fcs)
	case !liveness.Dead():
		r.releaser.forget(live.Name)
		return r.reporter.wait(ctx, live, liveness), nil
	}
	s := r.newScope(live, fcs)
	t, passErr := r.releaser.release(ctx, s, func(ctx context.Context) error { return r.stillDead(ctx, s) })
	reportErr := r.reporter.report(ctx, s, liveness, t, passErr)
	return ctrl.Result{}, passResult(passErr, t, reportErr)
}

// read gets the ForeignCluster from the cache; it returns nil, and forgets it, when it is gone or not
// marked.
func (r *reconciler) read(ctx context.Context, name string) (*liqov1beta1.ForeignCluster, error) {
	fc := &liqov1beta1.ForeignCluster{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: name}, fc); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(name, "")
		}
		return nil, client.IgnoreNotFound(err)
	}
	if !liqojanitor.IsMarked(fc.Annotations) {
		r.forget(fc.Name, fc.UID)
		return nil, nil
	}
	return fc, nil
}

// passResult is what a pass returns for a retry with backoff: the error that ended it (a cluster that
// stopped being dead is not one: its next event decides), its per-object failures as one bounded error,
// and the report's own write error.
func passResult(passErr error, t *tally, reportErr error) error {
	if errors.Is(passErr, errStopped) {
		passErr = nil
	}
	return errors.Join(passErr, t.failure(), reportErr)
}

// assessLive lists the ForeignClusters from the API server (not the cache) and assesses the cluster ID of
// the one named name (AssessClusterID, janitor rule 1). It returns the live ForeignCluster (nil if gone),
// its liveness and the whole list.
func (r *reconciler) assessLive(ctx context.Context, name string) (*liqov1beta1.ForeignCluster, Liveness, []liqov1beta1.ForeignCluster, error) {
	var fcs liqov1beta1.ForeignClusterList
	if err := r.apiReader.List(ctx, &fcs); err != nil {
		return nil, Liveness{}, nil, fmt.Errorf("re-reading ForeignClusters: %w", err)
	}
	for i := range fcs.Items {
		if fc := &fcs.Items[i]; fc.Name == name && liqojanitor.IsMarked(fc.Annotations) {
			r.memory.see(fc) // remember the first sight of its mark before the time is read
		}
	}
	fc, l := AssessClusterID(fcs.Items, name, r.firstSight, r.clock.Now(), r.options.GracePeriod)
	return fc, l, fcs.Items, nil
}

// newScope gathers what a pass over the dead cluster needs: which cluster IDs are dead, from the same
// live list of ForeignClusters the pass was decided on.
func (r *reconciler) newScope(fc *liqov1beta1.ForeignCluster, fcs []liqov1beta1.ForeignCluster) *scope {
	return newScope(fc, DeadClusterIDs(fcs, r.firstSight, r.clock.Now(), r.options.GracePeriod), r.options.DryRun)
}

// firstSight is the janitor's first sight of fc's mark: its own record on the ForeignCluster, which
// survives restarts and failovers, or this process's memory of it (janitor rule 1).
func (r *reconciler) firstSight(fc *liqov1beta1.ForeignCluster) time.Time {
	return recordedFirstSight(fc, r.memory.firstSeen(fc))
}

// plan (janitor rule 9) computes, for a cluster in its grace period, what the pass after the grace period
// would release — the same targets and the same selection, as if the cluster were dead, with every write
// replaced by its outcome — and has the reporter show it. Nothing of the cluster's objects is written.
func (r *reconciler) plan(ctx context.Context, fc *liqov1beta1.ForeignCluster, l Liveness, fcs []liqov1beta1.ForeignCluster) (ctrl.Result, error) {
	s := r.newScope(fc, fcs)
	t, err := r.releaser.plan(ctx, s)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("planning the clean-up: %w", err)
	}
	return r.reporter.planned(ctx, s, l, t)
}

// stillDead is the live re-check before each batch of irreversible writes: a mark removed, a pause set, a
// provider answering again or a live duplicate appearing a millisecond ago stops the janitor. From the same
// one live list it refreshes the pass's dead set, on which NamespaceOffloadings spanning several clusters
// are decided (janitor rule 4).
func (r *reconciler) stillDead(ctx context.Context, s *scope) error {
	live, l, fcs, err := r.assessLive(ctx, s.fc.Name)
	switch {
	case err != nil:
		return err
	case live == nil || live.UID != s.fc.UID || !l.Dead():
		return errStopped
	}
	s.setDead(DeadClusterIDs(fcs, r.firstSight, r.clock.Now(), r.options.GracePeriod))
	return nil
}

// forget drops what the janitor remembers of a cluster that is no longer marked, and stops its pod watches.
func (r *reconciler) forget(name string, uid types.UID) {
	r.releaser.forget(name)
	if uid != "" && r.memory.forget(uid) {
		r.reporter.publishBlocked()
	}
}
