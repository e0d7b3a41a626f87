package janitor

// The test-only re-exports: what the tests of package janitor_test need from a pass that no leaf gives them
// (a plan shown on a ForeignCluster, and one synchronous clean-up pass).

import (
	"context"
	"fmt"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor/internal/liqoversion"
	"github.com/liqo-janitor/liqo-janitor/janitor/internal/podwatch"
)

// ShowPlan has a reporter show an empty plan for fc (as read at some version) in its grace period, as
// publishPlan does for a pass, and returns publishPlan's error.
func ShowPlan(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster) error {
	p := &reporter{client: c, recorder: events.NewFakeRecorder(10), clock: clock.RealClock{}, memory: newMemory(), pacing: newPacing()}
	_, err := p.publishPlan(ctx, newScope(fc, map[string]bool{}, false, liqoversion.Version{}), liveness{Wait: WaitGracePeriod, GraceLeft: time.Minute}, newTally(nil))
	return err
}

// PassResult is what one pass run by Pass did.
type PassResult struct {
	// Kinds has, by target kind, what the pass did with that kind's objects.
	Kinds map[string]PassCounts
	// Stopped says the pass stopped because the cluster was no longer dead.
	Stopped bool
	// Waiting says, by namespace, what each NamespaceOffloading kept waits for.
	Waiting map[string]string
}

// PassCounts is what a pass did with one kind: released (force-deleted or finalizer removed, blocked by
// others' finalizers or not), blocked (by others' finalizers, or pods left alone), waiting, failed.
type PassCounts struct {
	Released, Blocked, Waiting, Failed int
}

// Pass runs one clean-up pass over the dead ForeignCluster named name, as Reconcile does for a dead
// cluster but synchronously and without reporting: c is what the controller reads its caches and writes
// through (wrap it to interleave changes with the janitor's writes), live what it reads the API server
// through, and pods are listed live through mc; it has seen every ForeignCluster marked now (as a janitor
// that reconciled them). Logs go to ctx's logger. It fails if the cluster is not
// dead. Its live re-check is the reconciler's own (recheck).
func Pass(ctx context.Context, c client.Client, live client.Reader, mc metadata.Interface, name string, o Options) (PassResult, error) {
	if o.Namespace == "" {
		o.Namespace = metav1.NamespaceDefault // its brake and records: none there
	}
	r := newReconciler(c, live, podwatch.NewLive(mc), &events.FakeRecorder{}, clock.RealClock{}, o)
	// A running janitor has seen every marked ForeignCluster in its own passes (sightings.see).
	var all liqov1beta1.ForeignClusterList
	if err := live.List(ctx, &all); err != nil {
		return PassResult{}, err
	}
	for i := range all.Items {
		if liqojanitor.IsMarked(all.Items[i].Annotations) {
			r.sightings.see(&all.Items[i])
		}
	}
	fc, l, v, err := r.assessLive(ctx, name)
	switch {
	case err != nil:
		return PassResult{}, err
	case fc == nil || !l.Dead():
		return PassResult{}, fmt.Errorf("ForeignCluster %s is not dead: %q", name, l.Wait)
	}
	s := r.newScope(ctx, fc, v)
	end := r.releaser.release(ctx, s)
	res := PassResult{Kinds: map[string]PassCounts{}, Waiting: map[string]string{}, Stopped: end.stopped}
	for kind, c := range end.tally.byKind {
		if n := (PassCounts{Released: c.released, Blocked: c.blocked, Waiting: c.waiting, Failed: c.failed}); n != (PassCounts{}) {
			res.Kinds[kind] = n
		}
	}
	for _, w := range s.offloadingWaits() {
		res.Waiting[w.namespace] = w.why
	}
	if end.err != nil {
		return res, end.err
	}
	return res, end.tally.failure()
}

// ReconcileFor runs the reconciler's Reconcile for the ForeignCluster named name at every step of a fake
// clock, from now until d has passed (the janitor as it would run for d, every step a pass), and returns
// how many passes it ran; the first error ends it. c and live are as for Pass.
func ReconcileFor(ctx context.Context, c client.Client, live client.Reader, mc metadata.Interface, name string, o Options, d, step time.Duration) (int, error) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	r := newReconciler(c, live, podwatch.NewLive(mc), &events.FakeRecorder{}, clk, o)
	passes := 0
	for end := clk.Now().Add(d); !clk.Now().After(end); clk.SetTime(clk.Now().Add(step)) {
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
			return passes, err
		}
		passes++
	}
	return passes, nil
}
