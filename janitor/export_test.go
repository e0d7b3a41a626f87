package janitor

import (
	"context"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ShowPlan has a reporter show an empty plan for fc (as read at some version) in its grace period, as
// publishPlan does for a pass, and returns publishPlan's error.
func ShowPlan(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster) error {
	p := &reporter{client: c, recorder: events.NewFakeRecorder(10), clock: clock.RealClock{}, memory: newMemory()}
	_, err := p.publishPlan(ctx, newScope(fc, map[string]bool{}, false, liqoVersion{}), liveness{Wait: WaitGracePeriod, GraceLeft: time.Minute}, newTally(nil))
	return err
}
