package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
)

// progress is how far the clean-up of one kind has come.
type progress struct {
	kind        string
	total, gone int
	blocked     int
}

// measure counts, per kind, the dead provider's objects already gone, and those that stay blocked.
func (d *demo) measure(ctx context.Context) ([]progress, error) { return d.measureOf(ctx, d.dead()) }

// measureOf counts, per kind, p's objects already gone, and those that stay blocked.
func (d *demo) measureOf(ctx context.Context, p *fixture.Provider) ([]progress, error) {
	var pods corev1.PodList
	if err := d.env.Client.List(ctx, &pods, client.MatchingFields{"spec.nodeName": p.Node.Name}); err != nil {
		return nil, err
	}
	podsBlocked := 0
	for _, pod := range pods.Items {
		if pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0 && len(pod.Finalizers) > 0 {
			podsBlocked++
		}
	}
	out := []progress{{kind: "pods", total: len(p.Pods), gone: len(p.Pods) - len(pods.Items), blocked: podsBlocked}}
	slices := []client.Object{p.ResourceSlice}
	for _, rs := range p.ExtraSlices {
		slices = append(slices, rs)
	}
	for _, k := range []struct {
		kind string
		objs []client.Object
	}{{"resourceslices", slices}, {"namespacemaps", []client.Object{p.NamespaceMap}}, {"renews", []client.Object{p.Renew}}} {
		left, err := fixture.ResourceVersions(ctx, d.env.Client, k.objs...)
		if err != nil {
			return nil, err
		}
		pr := progress{kind: k.kind, total: len(k.objs)}
		for _, rv := range left {
			if rv == "<gone>" {
				pr.gone++
			}
		}
		out = append(out, pr)
	}
	return out, nil
}

func (d *demo) watchJanitor(ctx context.Context) error {
	d.out.note(fmt.Sprintf("The janitor waits out the grace period (%s: the window to undo a mistaken mark), "+
		"re-reads the ForeignCluster from the API server before every batch, then releases.", d.grace))
	if plan, err := d.gracePlan(ctx); err != nil {
		return err
	} else if plan != "" {
		d.out.note("While the mark can still be undone, the janitor shows its plan on the ForeignCluster:")
		out, err := d.plugin(ctx, "", "status", d.dead().ID)
		if err != nil {
			return err
		}
		d.out.shown(out)
	}
	var last []progress
	bars := d.out.bars()
	err := wait.PollUntilContextTimeout(ctx, 150*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		pr, err := d.measure(ctx)
		if err != nil {
			return false, err
		}
		last = pr
		bars.draw(pr, time.Since(d.marked))
		for _, k := range pr {
			if k.gone+k.blocked < k.total {
				return false, nil
			}
		}
		return true, nil
	})
	bars.finish(last, time.Since(d.marked))
	if err != nil {
		return fmt.Errorf("the janitor did not finish within 3 minutes: %w", err)
	}
	d.out.done(fmt.Sprintf("released in %s after the mark (grace period %s included)",
		time.Since(d.marked).Round(100*time.Millisecond), d.grace))
	return nil
}

// gracePlan waits, within the grace period, for the plan the janitor shows in the cleanup annotation
// ("grace 4s left: would release …"); "" if the grace period ended first.
func (d *demo) gracePlan(ctx context.Context) (string, error) {
	fc := d.dead().ForeignCluster.DeepCopy()
	var plan string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, d.grace, true, func(ctx context.Context) (bool, error) {
		if err := d.env.Client.Get(ctx, client.ObjectKeyFromObject(fc), fc); err != nil {
			return false, err
		}
		plan = fc.Annotations[liqojanitor.CleanupAnnotation]
		return strings.HasPrefix(plan, liqojanitor.GracePlanPrefix), nil
	})
	if wait.Interrupted(err) {
		return "", nil
	}
	return plan, err
}

// liveObjects are every object of the two live providers (their tenant namespaces and networking objects
// included), and the NamespaceOffloadings they share.
func (d *demo) liveObjects() []client.Object {
	var objs []client.Object
	for i, p := range d.cons.Providers {
		if i != 1 {
			objs = append(objs, p.Objects()...)
			objs = append(objs, p.ForeignCluster, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.TenantNS}})
			objs = append(objs, d.fabrics[p.ID].objects()...)
		}
	}
	for _, nso := range d.cons.Offloadings {
		objs = append(objs, nso)
	}
	return objs
}

func (d *demo) result(ctx context.Context) error {
	pr, err := d.measure(ctx)
	if err != nil {
		return err
	}
	after, err := fixture.ResourceVersions(ctx, d.env.Client, d.liveObjects()...)
	if err != nil {
		return err
	}
	n := fixture.Changed(d.before, after)
	d.out.table(pr, len(d.before)-n, len(d.before))
	if n > 0 {
		return fmt.Errorf("%d objects of the live providers were changed", n)
	}
	p := d.dead()
	fc := p.ForeignCluster.DeepCopy()
	if err := d.env.Client.Get(ctx, client.ObjectKeyFromObject(fc), fc); err != nil {
		return err
	}
	d.out.done("cleanup annotation: " + fc.Annotations[liqojanitor.CleanupAnnotation])
	guarded := &corev1.Pod{}
	if err := d.env.Client.Get(ctx, client.ObjectKeyFromObject(p.Pods[0]), guarded); err != nil {
		return err
	}
	d.out.done(fmt.Sprintf("pod %s stays, blocked by %s (never stripped)", guarded.Name, strings.Join(guarded.Finalizers, ",")))
	reasons, err := d.eventReasons(ctx, fc.Name)
	if err != nil {
		return err
	}
	d.out.done("events on the ForeignCluster: " + strings.Join(reasons, ", "))
	d.out.note("What the operator sees now:")
	out, err := d.plugin(ctx, "", "status")
	if err != nil {
		return err
	}
	d.out.shown(out)
	return nil
}

func (d *demo) eventReasons(ctx context.Context, name string) ([]string, error) {
	seen, err := d.seenReasons(ctx, name)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range []string{"Waiting", "CleanupStarted", "CleanupProgress", "CleanupBlocked", "CleanupDone"} {
		if seen[r] {
			out = append(out, r)
		}
	}
	return out, nil
}

// seenReasons are the reasons of the events on the ForeignCluster called name.
func (d *demo) seenReasons(ctx context.Context, name string) (map[string]bool, error) {
	var list eventsv1.EventList
	if err := d.env.Client.List(ctx, &list); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, e := range list.Items {
		if e.Regarding.Kind == "ForeignCluster" && e.Regarding.Name == name {
			seen[e.Reason] = true
		}
	}
	return seen, nil
}
