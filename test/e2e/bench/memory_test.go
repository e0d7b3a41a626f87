package bench

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// BenchmarkMemoryWithUnrelatedPods measures the janitor's memory after it released a dead provider's 200
// pods, with 0, 20,000 and 100,000 pods elsewhere in the cluster (on an ordinary node, 1,000 to a
// namespace). The janitor keeps no cluster-wide pod cache, so the variants should not differ beyond noise.
// Reported: heap-MB, the live heap after a GC of this process with the in-process janitor idle at the end
// (it includes the benchmark's own objects, the same in every variant), and rss-MB, the resident memory
// of the real binary, started afresh for each round, after the same job.
func BenchmarkMemoryWithUnrelatedPods(b *testing.B) {
	env := harness.Require(b)
	for _, unrelated := range []int{0, 20000, 100000} {
		b.Run(fmt.Sprintf("unrelated-pods-%d", unrelated), func(b *testing.B) {
			createUnrelatedPods(b, unrelated)
			for b.Loop() {
				stop := startJanitor(b)
				releaseSmall(b)
				b.StopTimer()
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MB")
				stop()

				r, err := env.StartReplica(fixture.Prefix(fmt.Sprintf("memory-%d-", unrelated)), "--enable-webhook=false", "--grace-period=0")
				if err != nil {
					b.Fatal(err)
				}
				releaseSmall(b)
				rss, err := r.RSS()
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(rss)/(1<<20), "rss-MB")
				if err := r.Terminate(30 * time.Second); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// releaseSmall lays out a dead provider with 200 pods, marks it and waits until the janitor running now
// released it.
func releaseSmall(b *testing.B) {
	b.Helper()
	env := harness.Require(b)
	p := layout(b, fixture.Spec{Providers: 1, PodsPerProvider: 200})
	if err := fixture.Mark(context.Background(), env.Client, p); err != nil {
		b.Fatal(err)
	}
	waitReleasedSmall(b, p)
}

var unrelatedCreated int

// createUnrelatedPods tops the cluster up to n pods bound to an ordinary node (cumulative across runs).
func createUnrelatedPods(b *testing.B, n int) {
	b.Helper()
	env := harness.Require(b)
	ctx := context.Background()
	if unrelatedCreated == 0 && n > 0 {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ordinary-node"}}
		if err := env.Client.Create(ctx, node); err != nil {
			b.Fatal(err)
		}
	}
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := range jobs {
				ns := fmt.Sprintf("unrelated-%d", i/1000)
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%d", i), Namespace: ns},
					Spec: corev1.PodSpec{NodeName: "ordinary-node", AutomountServiceAccountToken: ptr.To(false),
						Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}
				if err := env.Client.Create(ctx, pod); err != nil {
					b.Error(err)
				}
			}
		})
	}
	// namespaces first, so pods of a namespace never race its creation
	for i := unrelatedCreated; i < n; i += 1000 {
		_ = env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("unrelated-%d", i/1000)}})
	}
	for i := unrelatedCreated; i < n; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	unrelatedCreated = max(unrelatedCreated, n)
}

func waitReleasedSmall(b *testing.B, p *fixture.Provider) {
	b.Helper()
	waitAnnotation(b, p, "pods 200/200, resourceslices 1/1, namespacemaps 1/1, renews 1/1")
}
