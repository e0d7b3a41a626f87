package janitor

import (
	"context"
	"errors"
	"fmt"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor/internal/liqoversion"
	"github.com/liqo-janitor/liqo-janitor/janitor/internal/unpeering"
)

// reconciler is the janitor: it reconciles ForeignClusters, and for dead ones releases what they leave
// stuck. A pass reads the ForeignCluster, assesses its cluster ID live, then waits or cleans up (the
// releaser), reports (the reporter) and returns; when it first saw a mark is the sightings', what the
// reports remember between passes the memory's, and what paces the next pass after refused writes the
// pacing's.
type reconciler struct {
	// client reads the ForeignClusters from the manager's cache.
	client client.Client
	// apiReader reads live from the API server, right before irreversible steps.
	apiReader client.Reader
	clock     clock.PassiveClock
	options   Options
	sightings *sightings
	probe     *returnProbe
	// released keeps the janitor's copy of the released-volumes records (janitor rule 23).
	released *releasedCopy
	memory   *memory
	pacing   *pacing
	releaser *releaser
	reporter *reporter
	// versions tells the installed Liqo version.
	versions *liqoversion.Detector
	// brake is the janitor-wide brake (janitor rule 14), read live.
	brake brake
	// fences are the providers' fence records (janitor rule 22), read live with every verdict.
	fences fenceRecords
}

// newReconciler assembles the janitor — the one constructor of Setup, PlanCluster and the tests: c reads
// the caches and writes, live reads the API server, pods lists the pods of dead virtual nodes, and
// recorder sends its events.
func newReconciler(c client.Client, live client.Reader, pods podSource, recorder events.EventRecorder, clk clock.PassiveClock, o Options) *reconciler {
	o = o.Default()
	mem, pace := newMemory(), newPacing()
	probe := newReturnProbe(c, targetStore{Client: c, Reader: live, Namespace: o.Namespace}, clk, o)
	return &reconciler{
		client: c, apiReader: live, clock: clk, options: o, sightings: newSightings(clk), memory: mem, pacing: pace,
		probe: probe, released: newReleasedCopy(probe.store, o),
		releaser: &releaser{src: &sources{client: c, apiReader: live, pods: pods, now: clk.Now, settle: o.FabricSettle},
			recorder: recorder, options: o},
		reporter: &reporter{client: c, recorder: recorder, clock: clk, memory: mem, pacing: pace, options: o, kept: probe.unfencedKept},
		versions: liqoversion.New(live, o.LiqoNamespace, clk),
		brake:    brake{reader: live, namespace: o.Namespace},
		fences:   fenceRecords{reader: live, namespace: o.Namespace},
	}
}

// Reconcile releases what a dead cluster leaves stuck; for any other ForeignCluster it writes nothing.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	fc, err := r.read(ctx, req.Name)
	if fc == nil || err != nil {
		return ctrl.Result{}, err
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("ForeignCluster", klog.KObj(fc), "clusterID", fc.Spec.ClusterID))

	live, l, v, err := r.assessLive(ctx, fc.Name)
	if err == nil && live != nil && l.Wait != WaitNotMarked {
		err = errors.Join(r.firstSight(ctx, live), r.released.keep(ctx, live))
	}
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case live == nil || l.Wait == WaitNotMarked: // the cache lags: it is gone, or no longer marked
		r.forget(fc.Name, fc.UID)
		return ctrl.Result{}, nil
	case l.Wait == WaitReturned:
		r.releaser.stopWatching(live.Name)
		return r.returned(ctx, live, l)
	case l.holding(): // its grace period or the provider's fence (janitor rules 9 and 22)
		return r.showPlan(ctx, live, l, v)
	case !l.Dead():
		r.releaser.stopWatching(live.Name)
		return r.reporter.wait(ctx, live, l), nil
	}
	return r.cleanUp(ctx, live, l, v)
}

// firstSight keeps the probe targets of a confirmed mark and probes them once, at the janitor's first sight
// of it (janitor rule 16): an answer is a return, which the pass it enqueues sees.
func (r *reconciler) firstSight(ctx context.Context, fc *liqov1beta1.ForeignCluster) error {
	if err := r.probe.keepTargets(ctx, r.apiReader, fc); err != nil {
		return err
	}
	_, err := r.probe.probeNow(ctx, fc, probeAtFirstSight)
	return err
}

// returned keeps a provider's return in the janitor's namespace first, where no other admission webhook
// can refuse it (janitor rule 17), tells it once (ProviderReturned, marked told in the kept record), then
// reports it on the ForeignCluster (rule 10).
func (r *reconciler) returned(ctx context.Context, fc *liqov1beta1.ForeignCluster, l liveness) (ctrl.Result, error) {
	if err := r.probe.keepReturn(ctx, fc, l.Returned); err != nil {
		return ctrl.Result{}, err
	}
	untold := r.probe.untold(fc)
	result, err := r.reporter.returned(ctx, fc, l, untold)
	if untold {
		if toldErr := r.probe.markTold(ctx, fc); toldErr != nil {
			return ctrl.Result{}, errors.Join(err, toldErr) // told again by the next pass: twice rather than never
		}
	}
	if _, isFenced := fenced(fc, l.Returned, r.clock.Now()); isFenced {
		if fenceErr := r.probe.markFenced(ctx, fc); fenceErr != nil {
			return ctrl.Result{}, errors.Join(err, fenceErr)
		}
		r.reporter.publishReturned()
	}
	return result, err
}

// cleanUp is a pass over a dead cluster: unless the janitor-wide brake is set, release what it left stuck,
// follow its unpeering, report.
func (r *reconciler) cleanUp(ctx context.Context, live *liqov1beta1.ForeignCluster, l liveness, v liveView) (ctrl.Result, error) {
	switch reason, braked, err := r.brake.on(ctx); {
	case err != nil:
		return ctrl.Result{}, err
	case braked:
		r.releaser.stopWatching(live.Name)
		return r.reporter.wait(ctx, live, liveness{Wait: WaitBraked, Brake: reason}), nil
	}
	// The last look before the first release of this mark (janitor rule 16): an answer stops it, and the
	// pass the answer enqueues sees the return.
	if answered, err := r.probe.probeNow(ctx, live, probeBeforeRelease); err != nil || answered {
		return ctrl.Result{}, err
	}
	s := r.newScope(ctx, live, v)
	end := r.releaser.release(ctx, s)
	surveyErr := r.survey(ctx, s, end)
	reportErr := r.reporter.report(ctx, s, l, end)
	if err := errors.Join(end.err, end.tally.failure(), surveyErr, reportErr); err != nil {
		return ctrl.Result{}, err
	}
	// Writes other admission webhooks refused come back soon, not on the controller's long backoff; a
	// release that waits for a time comes back when it is up.
	return ctrl.Result{RequeueAfter: sooner(r.pacing.backoff(live), s.wakeAfter())}, nil
}

// survey follows the unpeering of the dead cluster after a pass that was not stopped (janitor rule 13):
// the reporter writes it with the pass's record.
func (r *reconciler) survey(ctx context.Context, s *scope, end passEnd) error {
	if !end.finished() {
		return nil // the pass stopped, or failed with its own error: nothing to follow
	}
	// the VirtualNode names kept at first sight of the mark, which a pinned volume may name
	kept, _, err := r.probe.store.Of(ctx, s.fc)
	if err != nil {
		return fmt.Errorf("following the unpeering: %w", err)
	}
	u, recheck, err := unpeering.Survey(ctx, r.client, r.apiReader, unpeering.Cluster{ForeignCluster: s.fc, Liqo: s.liqo,
		ReleaseIdentitySecrets: r.options.ReleaseIdentitySecrets, Kept: kept, PodsLeft: s.leftPods(end.tally)})
	if err != nil {
		return fmt.Errorf("following the unpeering: %w", err)
	}
	if recheck > 0 {
		s.wakeIn(recheck)
	}
	s.surveyed(u)
	return nil
}

// sooner is the shorter of two non-zero durations (zero is "never").
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// read gets the ForeignCluster from the cache; it returns nil, and forgets it, when it is gone or not
// marked (and then ends the records of a mark removed without the gate).
func (r *reconciler) read(ctx context.Context, name string) (*liqov1beta1.ForeignCluster, error) {
	fc := &liqov1beta1.ForeignCluster{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: name}, fc); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(name, "")
		}
		return nil, client.IgnoreNotFound(err)
	}
	if !liqojanitor.IsMarked(fc.Annotations) {
		// Ends the records of an unmark the gate did not see (janitor rule 15), and drops the targets and the
		// return kept for the mark (rules 16, 17) before the returned clusters are counted without it.
		err := errors.Join(r.endStaleRecords(ctx, fc), r.probe.dropRecords(ctx, fc.UID))
		r.forget(fc.Name, fc.UID)
		r.reporter.publishReturned()
		return nil, err
	}
	return fc, nil
}

// liveView is what a verdict is made from, read live from the API server (not the cache) together: every
// ForeignCluster, and the providers' fences (janitor rule 22).
type liveView struct {
	fcs    []liqov1beta1.ForeignCluster
	fences fenceHolds
}

// assessLive lists the ForeignClusters and reads the providers' fence records from the API server (not the
// cache), and assesses the cluster ID of the one named name (assessClusterID, janitor rules 1 and 22). It
// returns the live ForeignCluster (nil if gone), its liveness and what it was assessed on.
func (r *reconciler) assessLive(ctx context.Context, name string) (*liqov1beta1.ForeignCluster, liveness, liveView, error) {
	switch loaded, err := r.probe.loadReturns(ctx); { // before this process's first verdict (janitor rule 17)
	case err != nil:
		return nil, liveness{}, liveView{}, err
	case loaded:
		r.reporter.publishReturned() // kept returns count, their ForeignClusters gone or not (janitor rule 10)
	}
	var fcs liqov1beta1.ForeignClusterList
	if err := r.apiReader.List(ctx, &fcs); err != nil {
		return nil, liveness{}, liveView{}, fmt.Errorf("re-reading ForeignClusters: %w", err)
	}
	fences, err := r.fences.read(ctx)
	if err != nil {
		return nil, liveness{}, liveView{}, err
	}
	v := liveView{fcs: fcs.Items, fences: fences}
	ignoreFutureStamps(v.fcs, r.clock.Now())
	for i := range v.fcs {
		if fc := &v.fcs[i]; fc.Name == name && liqojanitor.IsMarked(fc.Annotations) {
			r.sightings.see(fc) // the first sight of its mark, before the time is read
		}
	}
	fc, l := assessClusterID(v.fcs, name, r.observeIn(v), r.clock.Now(), r.options.GracePeriod)
	if l.Wait == WaitStorm {
		r.sightings.forget(fc.UID) // its grace period counts from the end of the hold, not from a sight during it
	}
	return fc, l, v, nil
}

// newScope starts a pass over the dead cluster: which cluster IDs are dead, from the same live view the
// pass was decided on, and the live re-check its batches run (recheck).
func (r *reconciler) newScope(ctx context.Context, fc *liqov1beta1.ForeignCluster, v liveView) *scope {
	s := newScope(fc, deadClusterIDs(v.fcs, r.observeIn(v), r.clock.Now(), r.options.GracePeriod), r.options.DryRun, r.versions.Get(ctx))
	s.checkWith(func(ctx context.Context) (bool, error) { return r.recheck(ctx, s) }, r.pacing.retryKinds(fc))
	return s
}

// observe is what the janitor itself saw of fc: its first sight of the mark — its own record on the
// ForeignCluster, which survives restarts and failovers, or this process's sighting of it (janitor rule
// 1) — its probe's answer from the provider (rule 10), and the return it kept in its namespace (rule 17).
func (r *reconciler) observe(fc *liqov1beta1.ForeignCluster) observed {
	kept, _ := r.probe.keptReturn(fc)
	return observed{firstSeen: recordedFirstSight(fc, r.sightings.firstSeen(fc)), answer: r.probe.answered(fc.UID), kept: kept}
}

// observeIn is observe for a verdict over v, one live view of every ForeignCluster and of the providers'
// fences, with the storm guard (janitor rule 18) — while Options.Storm sees a storm in v by Liqo's
// evidence, a mark the janitor has not begun with and that no acknowledgement covers is held back
// (heldByStorm) — and the provider's fence of each cluster ID (rule 22).
func (r *reconciler) observeIn(v liveView) observeFunc {
	storm := liqojanitor.CountStorm(v.fcs, nil)
	stormy := r.options.Storm.In(storm)
	return func(fc *liqov1beta1.ForeignCluster) observed {
		o := r.observe(fc)
		if stormy && heldByStorm(fc) {
			o.storm = &storm
		}
		o.fence = v.fences.holdFor(fc)
		return o
	}
}

// showPlan (janitor rule 9) computes, for a cluster in its grace period or waiting for its provider's fence
// (rule 22), what the pass after the hold would release — the same targets and the same selection, as if
// the cluster were dead, with every write replaced by its outcome — and has the reporter show it. Nothing
// of the cluster's objects is written.
func (r *reconciler) showPlan(ctx context.Context, fc *liqov1beta1.ForeignCluster, l liveness, v liveView) (ctrl.Result, error) {
	s := r.newScope(ctx, fc, v)
	end := r.releaser.rehearse(ctx, s)
	if end.err != nil {
		return ctrl.Result{}, fmt.Errorf("planning the clean-up: %w", end.err)
	}
	return r.reporter.publishPlan(ctx, s, l, end.tally)
}

// recheck is the live re-check before each batch of irreversible writes: the janitor-wide brake set (rule
// 14), a mark removed, a pause set, a provider answering again (Liqo's status or the janitor's probe:
// rule 10), a live duplicate appearing a millisecond ago, or a provider's fence deadline ahead (rule 22)
// stops the janitor. From the same one live view it refreshes the pass's dead set, on which
// NamespaceOffloadings spanning several clusters are decided (janitor rule 4). Three requests: a GET of the
// brake's ConfigMap, a LIST of the ForeignClusters and a GET of the fence records' ConfigMap.
func (r *reconciler) recheck(ctx context.Context, s *scope) (dead bool, err error) {
	if _, braked, err := r.brake.on(ctx); err != nil || braked {
		return false, err
	}
	live, l, v, err := r.assessLive(ctx, s.fc.Name)
	switch {
	case err != nil:
		return false, err
	case live == nil || live.UID != s.fc.UID || !l.Dead():
		return false, nil
	}
	s.setDead(deadClusterIDs(v.fcs, r.observeIn(v), r.clock.Now(), r.options.GracePeriod))
	return true, nil
}

// forget drops what the janitor remembers of a cluster that is no longer marked, and stops its pod watches.
func (r *reconciler) forget(name string, uid types.UID) {
	r.releaser.stopWatching(name)
	if uid == "" {
		return
	}
	r.sightings.forget(uid)
	r.pacing.forget(uid)
	if r.memory.forget(uid) {
		r.reporter.publishBlocked()
		r.reporter.publishReturned()
		r.reporter.publishUnpeering()
	}
}
