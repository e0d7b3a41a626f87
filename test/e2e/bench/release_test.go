package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

var env *harness.Env

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run()) // no benchmark asked for: no control plane needed
	}
	// The gate is registered and served throughout, as on a real consumer, by the real binary in its own
	// process (as in a cluster, where it runs in its own pod): the janitor's writes of its cleanup
	// annotation and the benchmarks' marks go through it.
	os.Exit(harness.Run(m, harness.Options{WebhookPaths: []string{"../../../manifests/chart/liqo-janitor/files/webhooks.yaml"}}, func(e *harness.Env) error {
		env = e
		if err := e.InstallLocalClusterID(context.Background(), "liqo", "consumer"); err != nil {
			return err
		}
		return e.StartBinary("--enable-janitor=false")
	}))
}

// Scale of the scenario: one of three providers dies, leaving this many terminating objects.
const (
	pods    = 1000
	rslices = 100
)

var layouts atomic.Int64

// scenario1of3 is the consumer of BenchmarkRelease1of3.
var scenario1of3 = fixture.Spec{Providers: 3, PodsPerProvider: pods, ExtraResourceSlices: rslices - 1}

// layout builds spec, kills and terminates the first provider, and returns it (not timed).
func layout(b *testing.B, spec fixture.Spec) *fixture.Provider {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	ctx := context.Background()
	spec.Prefix = fmt.Sprintf("b%d", layouts.Add(1))
	cons, err := fixture.Build(ctx, env.Client, spec)
	if err != nil {
		b.Fatal(err)
	}
	dead := cons.Providers[0]
	if err := fixture.Kill(ctx, env.Client, dead); err != nil {
		b.Fatal(err)
	}
	if err := fixture.Terminate(ctx, env.Client, dead); err != nil {
		b.Fatal(err)
	}
	return dead
}

// BenchmarkRelease1of3 releases what one dead provider of three leaves stuck (1,000 pods, 100
// ResourceSlices, a NamespaceMap and a Renew) two ways, alternating in one loop so that the machine's
// drift hits both alike: with the janitor (from the request that marks the cluster until its cleanup
// annotation reports everything released), and with a raw client running 32 workers that send the same
// grace-0 deletes and finalizer patches without any rate limit, knowing in advance what to release.
// Reported: the median of each, and their ratio (the target is at most 1.25).
func BenchmarkRelease1of3(b *testing.B) {
	stop := startJanitor(b)
	defer stop()
	raw := unthrottledClient(b)
	var janitorTimes, rawTimes []time.Duration
	for b.Loop() {
		p := layout(b, scenario1of3)
		t0 := time.Now()
		if err := fixture.Mark(context.Background(), env.Client, p); err != nil {
			b.Fatal(err)
		}
		waitReleased(b, p)
		janitorTimes = append(janitorTimes, time.Since(t0))

		p = layout(b, scenario1of3)
		t0 = time.Now()
		rawRelease(b, raw, p)
		rawTimes = append(rawTimes, time.Since(t0))
	}
	j, r := median(janitorTimes), median(rawTimes)
	b.ReportMetric(j.Seconds(), "janitor-s")
	b.ReportMetric(r.Seconds(), "raw-32-workers-s")
	b.ReportMetric(j.Seconds()/r.Seconds(), "ratio")
	b.ReportMetric(float64(pods+rslices+2), "objects")
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func startJanitor(b *testing.B) func() {
	b.Helper()
	stop, err := env.StartJanitor(janitor.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return func() {
		if err := stop(); err != nil {
			b.Error(err)
		}
	}
}

// waitReleased waits until the janitor reports everything of p released.
func waitReleased(b *testing.B, p *fixture.Provider) {
	b.Helper()
	waitAnnotation(b, p, fmt.Sprintf("pods %d/%d, resourceslices %d/%d, namespacemaps 1/1, renews 1/1", pods, pods, rslices, rslices))
}

// waitAnnotation waits until the janitor's cleanup annotation on p's ForeignCluster reads want.
func waitAnnotation(b *testing.B, p *fixture.Provider, want string) {
	b.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Minute, true,
		func(ctx context.Context) (bool, error) {
			fc := p.ForeignCluster.DeepCopy()
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(fc), fc); err != nil {
				return false, err
			}
			return fc.Annotations[liqojanitor.CleanupAnnotation] == want, nil
		})
	if err != nil {
		b.Fatalf("waiting for the janitor: %v", err)
	}
}

func unthrottledClient(b *testing.B) client.Client {
	b.Helper()
	c, err := env.NewClient(func(cfg *rest.Config) { cfg.QPS, cfg.Burst = -1, -1 })
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// rawRelease is what a person's script with 32 workers would do, knowing exactly what to release.
func rawRelease(b *testing.B, c client.Client, p *fixture.Provider) {
	b.Helper()
	var work []func(context.Context) error
	for _, pod := range p.Pods {
		work = append(work, func(ctx context.Context) error {
			return c.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID})
		})
	}
	patch := client.RawPatch(types.JSONPatchType, []byte(
		`[{"op":"test","path":"/metadata/finalizers/0","value":"crdreplicator.liqo.io/resource"},{"op":"remove","path":"/metadata/finalizers/0"}]`))
	for _, obj := range append([]client.Object{p.ResourceSlice, p.NamespaceMap, p.Renew}, sliceObjects(p)...) {
		work = append(work, func(ctx context.Context) error { return c.Patch(ctx, obj, patch) })
	}
	jobs := make(chan func(context.Context) error)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for range 32 {
		wg.Go(func() {
			for job := range jobs {
				if err := job(context.Background()); err != nil {
					failed.Add(1)
				}
			}
		})
	}
	for _, job := range work {
		jobs <- job
	}
	close(jobs)
	wg.Wait()
	if failed.Load() > 0 {
		b.Fatalf("%d raw writes failed", failed.Load())
	}
}

func sliceObjects(p *fixture.Provider) []client.Object {
	var out []client.Object
	for _, rs := range p.ExtraSlices {
		out = append(out, rs)
	}
	return out
}
