package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// Scale of BenchmarkReleaseThreeDeadProviders: every provider dies, each leaving this many objects.
const (
	scalePods    = 3000
	scaleRslices = 300
)

var scaleSpec = fixture.Spec{Providers: 3, PodsPerProvider: scalePods, ExtraResourceSlices: scaleRslices - 1}

// BenchmarkReleaseThreeDeadProviders: three providers die at once, each leaving 3,000 terminating pods,
// 300 ResourceSlices, a NamespaceMap and a Renew (9,906 objects), released two ways in alternation as in
// BenchmarkRelease1of3: by the janitor — the real binary in its own process, binary defaults but the
// grace period 0 — from the three marks until the three cleanup annotations report everything
// released, and by the raw 32-worker client. Reported: the medians and their ratio, the API server's own
// count of writes to the released objects per released object (apiserver_request_total: pod DELETEs,
// ResourceSlice/NamespaceMap/Renew PATCHes), the time from the marks (the end of a zero grace period)
// to the first pod gone, the janitor's resident memory before the first round, after the first and after
// the last (and its peak), and what else the API server served in each round (logged per round: events,
// re-reads, watchers it terminated), in total per round.
func BenchmarkReleaseThreeDeadProviders(b *testing.B) {
	pprof, err := harness.FreeLocalAddr()
	if err != nil {
		b.Fatal(err)
	}
	r, err := env.StartReplica("scale-janitor", "--enable-webhook=false", "--grace-period=0", "--pprof-bind-address="+pprof)
	if err != nil {
		b.Fatal(err)
	}
	profiles := os.Getenv("BENCH_PROFILE_DIR") // a CPU profile of the janitor's first round, and its heap at the end
	defer func() { _ = r.Terminate(30 * time.Second) }()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		b.Fatal(err)
	}
	raw := unthrottledClient(b)
	rssBefore, err := r.RSS()
	if err != nil {
		b.Fatal(err)
	}
	var janitorTimes, rawTimes, firsts []time.Duration
	var janitorWrites, rawWrites, janitorOther, rawOther float64
	var rssFirst int64
	objects := float64(scaleSpec.Providers * (scalePods + scaleRslices + 2))
	for b.Loop() {
		cpuProfile := ""
		if profiles != "" && len(janitorTimes) == 0 {
			cpuProfile = "http://" + pprof + "/debug/pprof/profile?seconds=10"
		}
		took, first, writes, others, other := janitorRound(b, cs, cpuProfile, filepath.Join(profiles, "janitor-cpu.pprof"))
		janitorTimes, firsts, janitorWrites = append(janitorTimes, took), append(firsts, first), janitorWrites+writes
		janitorOther += other
		if len(janitorTimes) == 1 {
			if rssFirst, err = r.RSS(); err != nil {
				b.Fatal(err)
			}
		}
		b.Logf("janitor round %d: other requests the API server served: %s", len(janitorTimes), strings.Join(others, ", "))

		dead := layoutAllDead(b)
		r0 := requests(b, cs)
		t0 := time.Now()
		var wg sync.WaitGroup
		for _, p := range dead {
			wg.Go(func() { rawRelease(b, raw, p) })
		}
		wg.Wait()
		rawTimes = append(rawTimes, time.Since(t0))
		r1 := requests(b, cs)
		rawWrites += releaseWrites(r1) - releaseWrites(r0)
		others, other = otherRequests(r0, r1)
		rawOther += other
		b.Logf("raw round %d: other requests the API server served: %s", len(rawTimes), strings.Join(others, ", "))
	}
	rssAfter, err := r.RSS()
	if err != nil {
		b.Fatal(err)
	}
	rssPeak, err := r.PeakRSS()
	if err != nil {
		b.Fatal(err)
	}
	if profiles != "" {
		if err := fetch("http://"+pprof+"/debug/pprof/heap", filepath.Join(profiles, "janitor-heap.pprof")); err != nil {
			b.Fatal(err)
		}
	}
	j, rw := median(janitorTimes), median(rawTimes)
	rounds := float64(len(janitorTimes))
	b.ReportMetric(j.Seconds(), "janitor-s")
	b.ReportMetric(rw.Seconds(), "raw-32-workers-s")
	b.ReportMetric(j.Seconds()/rw.Seconds(), "ratio")
	b.ReportMetric(janitorWrites/rounds/objects, "janitor-writes/object")
	b.ReportMetric(rawWrites/rounds/objects, "raw-writes/object")
	b.ReportMetric(median(firsts).Seconds(), "first-release-s")
	b.ReportMetric(float64(rssBefore)/(1<<20), "rss-before-MB")
	b.ReportMetric(float64(rssFirst)/(1<<20), "rss-after-first-MB")
	b.ReportMetric(float64(rssAfter)/(1<<20), "rss-after-MB")
	b.ReportMetric(float64(rssPeak)/(1<<20), "rss-peak-MB")
	b.ReportMetric(janitorOther/rounds, "janitor-other-requests/round")
	b.ReportMetric(rawOther/rounds, "raw-other-requests/round")
	b.ReportMetric(objects, "objects")
}

// janitorRound lays out three dead providers, marks them and waits until the janitor reports them
// released; it returns how long that took, how long until the first pod was gone, and the API server's
// count of release writes meanwhile. With cpuProfile set, it saves the janitor's CPU profile to path.
func janitorRound(b *testing.B, cs kubernetes.Interface, cpuProfile, path string) (took, first time.Duration, writes float64, others []string, other float64) {
	b.Helper()
	dead := layoutAllDead(b)
	r0 := requests(b, cs)
	firstGone, stopWatching := firstPodGone(b, cs, dead)
	defer stopWatching()
	profiled := make(chan error, 1)
	if cpuProfile != "" {
		go func() { profiled <- fetch(cpuProfile, path) }()
	} else {
		profiled <- nil
	}
	t0 := time.Now()
	for _, p := range dead {
		if err := fixture.Mark(context.Background(), env.Client, p); err != nil {
			b.Fatal(err)
		}
	}
	for _, p := range dead {
		waitAnnotation(b, p, fmt.Sprintf("pods %d/%d, resourceslices %d/%d, namespacemaps 1/1, renews 1/1",
			scalePods, scalePods, scaleRslices, scaleRslices))
	}
	took = time.Since(t0)
	first = (<-firstGone).Sub(t0)
	r1 := requests(b, cs)
	writes = releaseWrites(r1) - releaseWrites(r0)
	others, other = otherRequests(r0, r1)
	if err := <-profiled; err != nil {
		b.Fatal(err)
	}
	return took, first, writes, others, other
}

// layoutAllDead builds scaleSpec and kills and terminates every provider (not timed).
func layoutAllDead(b *testing.B) []*fixture.Provider {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	ctx := context.Background()
	spec := scaleSpec
	spec.Prefix = fmt.Sprintf("s%d", layouts.Add(1))
	cons, err := fixture.Build(ctx, env.Client, spec)
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range cons.Providers {
		if err := fixture.Kill(ctx, env.Client, p); err != nil {
			b.Fatal(err)
		}
		if err := fixture.Terminate(ctx, env.Client, p); err != nil {
			b.Fatal(err)
		}
	}
	return cons.Providers
}

// releaseWrites is the count, in a reading of requests, of the writes that release objects: pod DELETEs
// and ResourceSlice, NamespaceMap and Renew PATCHes (apiserver_request_total, successful or not).
func releaseWrites(counts map[request]float64) float64 {
	total := 0.0
	for k, n := range counts {
		if isReleaseWrite(k) {
			total += n
		}
	}
	return total
}

func isReleaseWrite(k request) bool {
	return k.subresource == "" && ((k.verb == "DELETE" && k.resource == "pods") ||
		(k.verb == "PATCH" && (k.resource == "resourceslices" || k.resource == "namespacemaps" || k.resource == "renews")))
}

// request is one series of apiserver_request_total, without its code.
type request struct{ verb, resource, subresource string }

func (k request) String() string {
	if k.subresource != "" {
		return k.verb + " " + k.resource + "/" + k.subresource
	}
	return k.verb + " " + k.resource
}

// requests reads the API server's apiserver_request_total, summed over response codes and scopes.
func requests(b *testing.B, cs kubernetes.Interface) map[request]float64 {
	b.Helper()
	data, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	out := map[request]float64{}
	for _, m := range families["apiserver_request_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		out[request{labels["verb"], labels["resource"], labels["subresource"]}] += m.GetCounter().GetValue()
	}
	// Watchers the API server closed because they did not take their events fast enough (each one the
	// client re-opens): not a request, but what it costs the API server is part of the round's.
	for _, m := range families["apiserver_terminated_watchers_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "resource" {
				out[request{verb: "TERMINATED-WATCH", resource: l.GetValue()}] += m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// otherRequests is what the API server served between two readings of requests, apart from the release
// writes, largest first ("POST events 906", …), and its total.
func otherRequests(before, after map[request]float64) ([]string, float64) {
	type row struct {
		k request
		n float64
	}
	var rows []row
	total := 0.0
	for k, n := range after {
		if d := n - before[k]; d > 0 && !isReleaseWrite(k) {
			rows = append(rows, row{k, d})
			total += d
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].n > rows[j].n })
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%s %.0f", r.k, r.n))
	}
	return out, total
}

// firstPodGone watches the dead providers' nodes and sends the time the first pod is gone; stop ends
// the watches.
func firstPodGone(b *testing.B, cs kubernetes.Interface, dead []*fixture.Provider) (first <-chan time.Time, stop func()) {
	b.Helper()
	out := make(chan time.Time, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	var once sync.Once
	for _, p := range dead {
		w, err := cs.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + p.Node.Name})
		if err != nil {
			cancel()
			b.Fatal(err)
		}
		go func() {
			defer w.Stop()
			for ev := range w.ResultChan() {
				if _, ok := ev.Object.(*corev1.Pod); ok && ev.Type == watch.Deleted {
					once.Do(func() { out <- time.Now() })
					return
				}
			}
		}()
	}
	return out, cancel
}

// fetch saves what url answers to path.
func fetch(url, path string) error {
	resp, err := http.Get(url) //nolint:noctx // a profile in a benchmark
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return os.WriteFile(path, data, 0o600)
}
