package bench

import (
	"context"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// The gate is registered and served throughout, as on a real consumer, by the real binary in its own
// process (as in a cluster, where it runs in its own pod): the janitor's writes of its cleanup annotation
// and the benchmarks' marks go through it. Only a benchmark starts the control plane (harness.Require):
// `make test` runs this package without one.
func TestMain(m *testing.M) {
	os.Exit(harness.Run(m, harness.Options{GeneratedWebhooks: true}, func(e *harness.Env) error {
		if err := e.InstallLocalClusterID(context.Background(), "liqo", "consumer"); err != nil {
			return err
		}
		return e.StartBinary("--enable-janitor=false")
	}))
}

// layout builds spec, kills and terminates the first provider, and returns it (not timed).
func layout(b *testing.B, spec fixture.Spec) *fixture.Provider {
	b.Helper()
	return layoutDead(b, spec, 1)[0]
}

// layoutDead builds spec, kills and terminates its first dying providers, and returns them (not timed).
func layoutDead(b *testing.B, spec fixture.Spec, dying int) []*fixture.Provider {
	b.Helper()
	env := harness.Require(b)
	b.StopTimer()
	defer b.StartTimer()
	ctx := context.Background()
	spec.Prefix = fixture.Prefix("b")
	cons, err := fixture.Build(ctx, env.Client, spec)
	if err != nil {
		b.Fatal(err)
	}
	dead := cons.Providers[:dying]
	for _, p := range dead {
		if err := fixture.Kill(ctx, env.Client, p); err != nil {
			b.Fatal(err)
		}
		if err := fixture.Terminate(ctx, env.Client, p); err != nil {
			b.Fatal(err)
		}
	}
	return dead
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func startJanitor(b *testing.B) func() {
	b.Helper()
	env := harness.Require(b)
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

// waitAnnotation waits until the janitor's cleanup annotation on p's ForeignCluster reads want, watching
// the ForeignCluster (a poll would add its GETs to the API server the janitor is measured against).
func waitAnnotation(b *testing.B, p *fixture.Provider, want string) {
	b.Helper()
	env := harness.Require(b)
	dc, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		b.Fatal(err)
	}
	fcs := dc.Resource(liqov1beta1.GroupVersion.WithResource("foreignclusters"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for {
		fc, err := fcs.Get(ctx, p.ForeignCluster.Name, metav1.GetOptions{})
		if err != nil {
			b.Fatalf("waiting for the janitor: %v", err)
		}
		if fc.GetAnnotations()[liqojanitor.CleanupAnnotation] == want {
			return
		}
		w, err := fcs.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + fc.GetName(), ResourceVersion: fc.GetResourceVersion()})
		if err != nil {
			b.Fatalf("waiting for the janitor: %v", err)
		}
		for ev := range w.ResultChan() {
			if obj, ok := ev.Object.(*unstructured.Unstructured); ok && obj.GetAnnotations()[liqojanitor.CleanupAnnotation] == want {
				w.Stop()
				return
			}
		}
		w.Stop() // closed (or timed out): read again, then watch on
		if ctx.Err() != nil {
			b.Fatalf("waiting for the janitor: %q never read %q", liqojanitor.CleanupAnnotation, want)
		}
	}
}

func unthrottledClient(b *testing.B) client.Client {
	b.Helper()
	env := harness.Require(b)
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
