package janitor_test

import (
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

func TestMain(m *testing.M) {
	os.Exit(harness.Run(m, harness.Options{}, nil))
}

// startJanitor runs a janitor until the returned stop function (or the end of the test) stops it.
func startJanitor(t *testing.T, opts janitor.Options) (stop func()) {
	t.Helper()
	env := harness.Require(t)
	stopJanitor, err := env.StartJanitor(opts)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	stop = func() { NewWithT(t).Expect(stopJanitor()).To(Succeed()) }
	t.Cleanup(stop)
	return stop
}

// build lays out a fresh consumer for one test (fixture.LayOut). Called before the test's janitor starts,
// its retirement runs after it stopped: later tests' janitors neither count these providers (a returned
// cluster, a storm) nor act on them.
func build(t *testing.T, spec fixture.Spec) *fixture.Consumer {
	t.Helper()
	return fixture.LayOut(t, harness.Require(t).Client, "j", spec)
}

// kill makes p unreachable and starts its unpeering: its objects are terminating and stuck.
func kill(t *testing.T, p *fixture.Provider) {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	g.Expect(fixture.Kill(t.Context(), env.Client, p)).To(Succeed())
	g.Expect(fixture.Terminate(t.Context(), env.Client, p)).To(Succeed())
}

// markedDead lays out a consumer with one provider (spec.Providers is ignored), kills it, starts its
// unpeering, starts a janitor with opts and marks the provider dead: the common opening of a scenario.
func markedDead(t *testing.T, spec fixture.Spec, opts janitor.Options) *fixture.Provider {
	t.Helper()
	env := harness.Require(t)
	spec.Providers = 1
	p := build(t, spec).Providers[0]
	kill(t, p)
	startJanitor(t, opts)
	NewWithT(t).Expect(fixture.Mark(t.Context(), env.Client, p)).To(Succeed())
	return p
}

// gone says whether obj has been deleted.
func gone(t *testing.T, obj client.Object) func() bool {
	t.Helper()
	env := harness.Require(t)
	return func() bool {
		err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
		return apierrors.IsNotFound(err)
	}
}

func get[T client.Object](t *testing.T, obj T) T {
	t.Helper()
	env := harness.Require(t)
	fresh := obj.DeepCopyObject().(T)
	NewWithT(t).Expect(env.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), fresh)).To(Succeed())
	return fresh
}

func podsLeft(t *testing.T, p *fixture.Provider) int {
	t.Helper()
	left := 0
	for _, pod := range p.Pods {
		if !gone(t, pod)() {
			left++
		}
	}
	return left
}

func rvs(t *testing.T, objs ...client.Object) map[string]string {
	t.Helper()
	return fixture.ResourceVersionsOf(t, harness.Require(t).Client, objs...)
}

func cleanupAnnotation(t *testing.T, p *fixture.Provider) func() string {
	t.Helper()
	return func() string {
		return get(t, p.ForeignCluster).Annotations[liqojanitor.CleanupAnnotation]
	}
}

// counter reads a counter or gauge of the janitor's metrics.
func counter(name string, labels map[string]string) float64 { return harness.Metric(name, labels) }

// events lists every event.
func events(t *testing.T) []eventsv1.Event {
	t.Helper()
	env := harness.Require(t)
	var evs eventsv1.EventList
	NewWithT(t).Expect(env.Client.List(t.Context(), &evs)).To(Succeed())
	return evs.Items
}

// eventReasons lists the reasons of the events about the object of that kind and name.
func eventReasons(t *testing.T, kind, regardingName string) []string {
	t.Helper()
	var reasons []string
	for _, e := range events(t) {
		if e.Regarding.Kind == kind && e.Regarding.Name == regardingName {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}

func markedAtNow() []string {
	return []string{liqojanitor.MarkedAtAnnotation, time.Now().UTC().Format(time.RFC3339)}
}
