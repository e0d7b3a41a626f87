package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
)

// returnedGauge is the janitor's gauge of returned clusters not fenced yet.
const returnedGauge = "liqo_janitor_returned_clusters"

// comeBack is the last chapter: the partition heals, the janitor reports the return, and the operator
// fences the provider.
func (d *demo) comeBack(ctx context.Context) error {
	d.out.note(fmt.Sprintf("It was a partition, not a flood: %s's API server ran all along, and so did this consumer's "+
		"%d pods there. Their copies here are gone (the janitor force-deleted them; the guarded one went once its owner "+
		"removed its finalizer), and so is the peering on this side; once the consumer's controllers replace those pods, "+
		"each runs twice.", d.dead().ID, len(d.remote.laid.Mine)/2))
	for _, step := range []func(context.Context) error{
		d.healPartition, d.awaitReturn, d.showReturn, d.fence, d.checkProvider, d.awaitFenced, d.showFenced, d.checkUnpeeringOnce,
	} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (d *demo) healPartition(context.Context) error {
	if err := d.remote.partition.Up(); err != nil {
		return err
	}
	d.remote.healed = time.Now()
	d.out.done(fmt.Sprintf("the partition heals: %s answers again", d.remote.url()))
	return nil
}

// awaitReturn waits until the janitor has reported the return: the ProviderReturned event, and the
// cleanup annotation starting with "provider returned at ".
func (d *demo) awaitReturn(ctx context.Context) error {
	w := d.out.waiter(fmt.Sprintf("waiting for the janitor (it probes marked clusters every %s)", returnProbeInterval))
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		w.tick()
		return d.returnReported(ctx)
	})
	if err != nil {
		return fmt.Errorf("within a minute of the partition healing, the janitor did not report the return "+
			"(a ProviderReturned event and a cleanup annotation starting with %q): %w", liqojanitor.ReturnedPrefix, err)
	}
	d.out.done(fmt.Sprintf("the janitor reported it %.1fs after the partition healed: a Warning event ProviderReturned, "+
		"and its cleanup annotation begins %q", time.Since(d.remote.healed).Seconds(), liqojanitor.ReturnedPrefix+"…"))
	return nil
}

func (d *demo) returnReported(ctx context.Context) (bool, error) {
	fc := d.dead().ForeignCluster.DeepCopy()
	if err := d.env.Client.Get(ctx, client.ObjectKeyFromObject(fc), fc); err != nil {
		return false, err
	}
	if !strings.HasPrefix(fc.Annotations[liqojanitor.CleanupAnnotation], liqojanitor.ReturnedPrefix) {
		return false, nil
	}
	seen, err := d.seenReasons(ctx, fc.Name)
	return seen["ProviderReturned"], err
}

func (d *demo) showReturn(ctx context.Context) error {
	d.out.note("What the operator sees now:")
	out, err := d.plugin(ctx, "", "status", d.dead().ID)
	if err != nil {
		return err
	}
	d.out.shown(out)
	return d.showGauge(1)
}

// showGauge prints the janitor's returned-clusters gauge, which must be want.
func (d *demo) showGauge(want float64) error {
	v, err := d.janitor.Metric(returnedGauge, nil)
	if err != nil {
		return fmt.Errorf("reading liqo-janitor's metrics: %w", err)
	}
	if v != want {
		return fmt.Errorf("liqo-janitor's %s is %g, want %g", returnedGauge, v, want)
	}
	d.out.done(fmt.Sprintf("liqo-janitor's /metrics: %s %g", returnedGauge, v))
	return nil
}

// fence runs `kubectl liqo-janitor fence` as the operator who marked the cluster (the fence record is
// break-glass, gate rule 15), typing the provider's cluster ID, as fence read it there, when asked.
func (d *demo) fence(ctx context.Context) error {
	d.out.note(fmt.Sprintf("The operator fences the provider with its admin's kubeconfig, typing the PROVIDER's cluster ID, as "+
		"fence read it there, when asked (fence deletes the %d ShadowPods, then waits for the provider's garbage collector to delete their pods):",
		len(d.remote.laid.Mine)/2))
	t0 := time.Now()
	id := d.dead().ID
	out, err := d.plugin(ctx, id+"\n", "fence", id, "--provider-kubeconfig", d.remote.partition.Kubeconfig)
	if err != nil {
		return fmt.Errorf("the fence failed: %w", err)
	}
	d.out.shown(strings.Replace(out, "to confirm: ", "to confirm: "+id+"\n", 1))
	d.out.done(fmt.Sprintf("fenced in %s", time.Since(t0).Round(100*time.Millisecond)))
	return nil
}

// checkProvider checks the provider's side: this consumer's ShadowPods and pods gone, the other
// consumer's untouched.
func (d *demo) checkProvider(ctx context.Context) error {
	r := &d.remote
	mine, err := fixture.ResourceVersions(ctx, r.env.Client, r.laid.Mine...)
	if err != nil {
		return err
	}
	if left := len(mine) - fixture.Gone(mine); left > 0 {
		return fmt.Errorf("%d of this consumer's ShadowPods and pods are still on the provider", left)
	}
	theirs, err := fixture.ResourceVersions(ctx, r.env.Client, r.laid.Theirs...)
	if err != nil {
		return err
	}
	if n := fixture.Changed(r.laid.TheirsBefore, theirs); n > 0 {
		return fmt.Errorf("%d of %s's ShadowPods and pods on the provider were changed", n, otherConsumer)
	}
	counts, err := r.countByOrigin(ctx)
	if err != nil {
		return err
	}
	d.out.done(fmt.Sprintf("on the provider now: %s; %s's %d objects untouched (resourceVersions unchanged)",
		counts, otherConsumer, len(r.laid.Theirs)))
	return nil
}

// countByOrigin counts the provider's ShadowPods and pods per consumer: "consumer 0 ShadowPods, 0 pods; …".
func (r *remote) countByOrigin(ctx context.Context) (string, error) {
	parts := make([]string, 0, 2)
	for _, origin := range []string{localClusterID, otherConsumer} {
		var sps offloadingv1beta1.ShadowPodList
		var pods corev1.PodList
		for _, list := range []client.ObjectList{&sps, &pods} {
			if err := r.env.Client.List(ctx, list, client.MatchingLabels{fixture.OriginLabel: origin}); err != nil {
				return "", err
			}
		}
		parts = append(parts, fmt.Sprintf("%s %d ShadowPods, %d pods", origin, len(sps.Items), len(pods.Items)))
	}
	return strings.Join(parts, "; "), nil
}

// awaitFenced waits until the janitor has seen the fence record: the Fenced event, and the gauge back to 0.
func (d *demo) awaitFenced(ctx context.Context) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		seen, err := d.seenReasons(ctx, d.dead().ForeignCluster.Name)
		if err != nil || !seen["Fenced"] {
			return false, err
		}
		v, err := d.janitor.Metric(returnedGauge, nil)
		return v == 0, err
	})
	if err != nil {
		return fmt.Errorf("within 30s of the fence, the janitor did not answer it (a Fenced event and %s 0): %w", returnedGauge, err)
	}
	return nil
}

func (d *demo) showFenced(ctx context.Context) error {
	d.out.note("And the status afterwards:")
	out, err := d.plugin(ctx, "", "status", d.dead().ID)
	if err != nil {
		return err
	}
	d.out.shown(out)
	return d.showGauge(0)
}
