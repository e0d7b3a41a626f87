package janitor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// Options tunes the janitor.
type Options struct {
	// GracePeriod is how long after the mark the janitor waits before releasing anything.
	GracePeriod time.Duration
	// DryRun reports what would be released (events and logs) and writes nothing else.
	DryRun bool
	// ReleaseIdentitySecrets also releases the dead cluster's control-plane identity Secret (needs RBAC on
	// Secrets, from the opt-in kustomize component).
	ReleaseIdentitySecrets bool
	// PodEvents also emits an event on each force-deleted pod. Off by default: a force-deleted pod no
	// longer exists to be described, the event would double the API writes per pod (the API server, not
	// the janitor, must be the limit), and the ForeignCluster's events and the logs already record them.
	PodEvents bool
	// Workers is how many writes one pass sends concurrently.
	Workers int
	// BatchSize is how many objects are released between two live re-reads of the ForeignClusters.
	BatchSize int
	// Concurrency is how many ForeignClusters are reconciled at once.
	Concurrency int
}

// Defaults of the janitor's options, and of the client rate limits it wants: releasing thousands of
// objects must be limited by the API server, not by the janitor.
const (
	DefaultGracePeriod = 30 * time.Second
	DefaultWorkers     = 32
	DefaultBatchSize   = 250
	DefaultConcurrency = 4
	DefaultClientQPS   = 1000
	DefaultClientBurst = 2000
)

// Default returns o with every unset (zero) count — Workers, BatchSize, Concurrency — set to its default.
// GracePeriod stays as given: zero is a valid grace period.
func (o Options) Default() Options {
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	return o
}

// Reconciler is the janitor: it reconciles ForeignClusters, and for dead ones releases what they leave stuck.
type Reconciler struct {
	// Client reads from the manager's narrow caches and writes (patches and deletes).
	Client client.Client
	// APIReader reads live from the API server, right before irreversible steps.
	APIReader client.Reader
	// Recorder emits events on ForeignClusters and on released objects.
	Recorder events.EventRecorder
	// Clock tells the time.
	Clock clock.PassiveClock
	// Options tunes the janitor.
	Options Options

	pods *podWatcher
	mu   sync.Mutex
	// seen holds per-cluster memory that only makes reports nicer or waits longer, never shorter: when
	// the janitor first saw the mark (grace fallback), the last wait reason, released counts. A
	// restarted janitor starts it afresh and still finishes the job.
	seen map[types.UID]*memory
}

type memory struct {
	firstSeen   time.Time
	lastWait    WaitReason
	acted       map[string]map[types.UID]bool // objects released, by kind (for the summary)
	started     bool
	lastBlocked int
	done        bool
	// offloadingWaits is what each waiting NamespaceOffloading waited for at the last pass (an event is
	// emitted when that changes).
	offloadingWaits map[types.UID]string
	// blocked is how many objects of each kind stayed blocked at the last pass.
	blocked map[string]int
}

// errStopped says a pass stopped because the cluster stopped being dead under it.
var errStopped = errors.New("the cluster is no longer dead")

// Reconcile releases what a dead cluster leaves stuck; for any other ForeignCluster it writes nothing.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	fc := &liqov1beta1.ForeignCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, fc); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.Name, "")
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !liqojanitor.IsMarked(fc.Annotations) {
		r.forget(fc.Name, fc.UID)
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues("ForeignCluster", klog.KObj(fc), "clusterID", fc.Spec.ClusterID)
	ctx = ctrl.LoggerInto(ctx, log)

	live, liveness, fcs, err := r.assessLive(ctx, fc.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	if live == nil || liveness.Wait == WaitNotMarked { // the cache lags: it is gone, or no longer marked
		r.forget(fc.Name, fc.UID)
		return ctrl.Result{}, nil
	}
	if !liveness.Dead() {
		return r.wait(ctx, live, liveness), nil
	}
	s := r.newScope(live, fcs)
	t, err := r.cleanUp(ctx, s)
	return ctrl.Result{}, r.report(ctx, s, liveness, t, err)
}

// assessLive lists the ForeignClusters from the API server (not the cache) and assesses the cluster ID of
// the one named name (AssessClusterID): it and every other ForeignCluster of its cluster ID must be dead.
// It returns the live ForeignCluster (nil if gone), its liveness and the whole list.
func (r *Reconciler) assessLive(ctx context.Context, name string) (*liqov1beta1.ForeignCluster, Liveness, []liqov1beta1.ForeignCluster, error) {
	var fcs liqov1beta1.ForeignClusterList
	if err := r.APIReader.List(ctx, &fcs); err != nil {
		return nil, Liveness{}, nil, fmt.Errorf("re-reading ForeignClusters: %w", err)
	}
	for i := range fcs.Items {
		if fc := &fcs.Items[i]; fc.Name == name && liqojanitor.IsMarked(fc.Annotations) {
			r.memoryOf(fc) // remember the first sight of its mark before the time is read
		}
	}
	fc, l := AssessClusterID(fcs.Items, name, r.firstSeen, r.Clock.Now(), r.Options.GracePeriod)
	return fc, l, fcs.Items, nil
}

// firstSeen is when the janitor first saw fc's mark, or now if it has not reconciled fc marked yet (so a
// cluster never counts as dead sooner than its own pass would decide).
func (r *Reconciler) firstSeen(fc *liqov1beta1.ForeignCluster) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m, ok := r.seen[fc.UID]; ok {
		return m.firstSeen
	}
	return r.Clock.Now()
}

// wait records why a marked cluster is left alone, and comes back when its grace period ends.
func (r *Reconciler) wait(ctx context.Context, fc *liqov1beta1.ForeignCluster, l Liveness) ctrl.Result {
	waitsTotal.WithLabelValues(string(l.Wait)).Inc()
	r.pods.retain(fc.Name, nil)
	m := r.memoryOf(fc)
	r.mu.Lock()
	changed := m.lastWait != l.Wait
	m.lastWait = l.Wait
	r.mu.Unlock()
	if changed {
		ctrl.LoggerFrom(ctx).Info("Leaving marked ForeignCluster alone", "reason", l.Wait)
		r.Recorder.Eventf(fc, nil, "Normal", "Waiting", "Wait", "%s", waitMessage(fc, l))
	}
	if l.Wait == WaitGracePeriod {
		return ctrl.Result{RequeueAfter: l.GraceLeft + 100*time.Millisecond}
	}
	return ctrl.Result{}
}

func waitMessage(fc *liqov1beta1.ForeignCluster, l Liveness) string {
	switch l.Wait {
	case WaitUnconfirmed:
		return fmt.Sprintf("Marked permanently unreachable but not confirmed: nothing is released until %s=%s",
			liqojanitor.ConfirmAnnotation, fc.Spec.ClusterID)
	case WaitReachable:
		return "Marked permanently unreachable, but Liqo sees its API server answering (APIServerStatus Established): nothing is released"
	case WaitPaused:
		return fmt.Sprintf("Paused (%s=true): nothing is released", liqojanitor.PausedAnnotation)
	case WaitDuplicate:
		return fmt.Sprintf("Marked permanently unreachable, but ForeignCluster %s has the same cluster ID %s and is not dead "+
			"(unmarked, unconfirmed, reachable, paused or in its grace period): nothing is released while one ForeignCluster "+
			"of a cluster ID says it is alive; find the stray one with: kubectl get foreignclusters", l.Duplicate, fc.Spec.ClusterID)
	case WaitGracePeriod:
		return fmt.Sprintf("Marked permanently unreachable at %s: releasing starts in %s unless the mark is removed",
			l.MarkedAt.UTC().Format(time.RFC3339), l.GraceLeft.Round(time.Second))
	}
	return "Not marked permanently unreachable: nothing is released"
}

// newScope gathers what a pass over the dead cluster needs: which cluster IDs are dead, from the same
// live list of ForeignClusters the pass was decided on.
func (r *Reconciler) newScope(fc *liqov1beta1.ForeignCluster, fcs []liqov1beta1.ForeignCluster) *scope {
	return &scope{
		fc: fc, clusterID: string(fc.Spec.ClusterID), dryRun: r.Options.DryRun,
		dead:  DeadClusterIDs(fcs, r.firstSeen, r.Clock.Now(), r.Options.GracePeriod),
		drain: map[types.UID]bool{}, waits: map[types.UID]offloadingWait{},
	}
}

// stillDead is the live re-check before each batch of irreversible writes: a mark removed, a pause set, a
// provider answering again or a live duplicate appearing a millisecond ago stops the janitor.
func (r *Reconciler) stillDead(ctx context.Context, s *scope) error {
	live, l, _, err := r.assessLive(ctx, s.fc.Name)
	switch {
	case err != nil:
		return err
	case live == nil || live.UID != s.fc.UID || !l.Dead():
		return errStopped
	}
	return nil
}

// forget drops what the janitor remembers of a cluster that is no longer marked, and stops its pod watches.
func (r *Reconciler) forget(name string, uid types.UID) {
	r.pods.retain(name, nil)
	if uid == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.seen[uid]; ok {
		delete(r.seen, uid)
		r.publishBlocked()
	}
}

// publishBlocked sets liqo_janitor_blocked_objects to the sum, per kind, over the clusters the janitor
// remembers. r.mu must be held.
func (r *Reconciler) publishBlocked() {
	sums := map[string]int{}
	for _, m := range r.seen {
		for kind, n := range m.blocked {
			sums[kind] += n
		}
	}
	for _, kind := range allKinds {
		blockedObjects.WithLabelValues(kind).Set(float64(sums[kind]))
	}
}

func (r *Reconciler) memoryOf(fc *liqov1beta1.ForeignCluster) *memory {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.seen[fc.UID]
	if !ok {
		m = &memory{firstSeen: r.Clock.Now(), acted: map[string]map[types.UID]bool{}, offloadingWaits: map[types.UID]string{}}
		r.seen[fc.UID] = m
	}
	return m
}

var replicatedGVKs = []schema.GroupVersionKind{resourceSliceGVK, namespaceMapGVK, renewGVK}

// countLive counts objects of gvk on the API server (metadata only).
func (r *Reconciler) countLive(ctx context.Context, gvk schema.GroupVersionKind, opts ...client.ListOption) (int, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := r.APIReader.List(ctx, list, opts...); err != nil {
		return 0, fmt.Errorf("listing %s: %w", gvk.Kind, err)
	}
	return len(list.Items), nil
}
