package janitor

import (
	"context"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// ShowPlan has a reporter show an empty plan for fc (as read at some version) in its grace period, as
// publishPlan does for a pass, and returns publishPlan's error.
func ShowPlan(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster) error {
	p := &reporter{client: c, recorder: events.NewFakeRecorder(10), clock: clock.RealClock{}, memory: newMemory()}
	_, err := p.publishPlan(ctx, newScope(fc, map[string]bool{}, false, liqoVersion{}), liveness{Wait: WaitGracePeriod, GraceLeft: time.Minute}, newTally(nil))
	return err
}

// PodWatch exposes the janitor's pod watches to the real-API-server tests: Pods starts (and lists) a
// node's watch, Pause and Resume are a pass's, and Events has what the watches enqueue.
type PodWatch struct{ w *podWatcher }

// NewPodWatch returns pod watches reading through mc; run Start until the test ends.
func NewPodWatch(mc metadata.Interface) *PodWatch { return &PodWatch{newPodWatcher(mc)} }

// Start runs the watches until ctx ends.
func (p *PodWatch) Start(ctx context.Context) error { return p.w.Start(ctx) }

// Pods lists the pods of node for the ForeignCluster named cluster, watching them from then on.
func (p *PodWatch) Pods(ctx context.Context, cluster, node string) ([]client.Object, error) {
	return p.w.pods(ctx, cluster, node, false)
}

// Pause stops watching cluster's nodes, as a pass does while it writes.
func (p *PodWatch) Pause(cluster string) { p.w.pause(cluster) }

// Resume watches cluster's nodes again, given the pods (of node) the pass left, as listed by Pods.
func (p *PodWatch) Resume(cluster, node string, left []client.Object) {
	onNode := map[types.UID]string{}
	for _, pod := range left {
		onNode[pod.GetUID()] = pod.GetResourceVersion()
	}
	p.w.resume(cluster, leftPods{node: onNode})
}

// Events is where the watches enqueue their ForeignCluster.
func (p *PodWatch) Events() <-chan event.GenericEvent { return p.w.events }
