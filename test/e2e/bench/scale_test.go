package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// Scale of the release benchmarks: a consumer peered with three providers, each with this many pods
// bound to its virtual node and this many ResourceSlices, plus a NamespaceMap and a Renew (3,302 objects
// a provider).
const (
	scalePods    = 3000
	scaleRslices = 300
)

var scaleSpec = fixture.Spec{Providers: 3, PodsPerProvider: scalePods, ExtraResourceSlices: scaleRslices - 1}

// BenchmarkRelease1of3: one of the three providers dies (3,302 objects); see benchRelease.
func BenchmarkRelease1of3(b *testing.B) { benchRelease(b, 1) }

// BenchmarkReleaseThreeDeadProviders: the three die at once (9,906 objects); see benchRelease.
func BenchmarkReleaseThreeDeadProviders(b *testing.B) { benchRelease(b, 3) }

// benchRelease releases what the dying providers of scaleSpec leave stuck (each 3,000 terminating pods,
// 300 ResourceSlices, a NamespaceMap and a Renew), two ways in alternation, each round laying the
// scenario out afresh for each, so the machine's drift (and the API server's growing etcd) hits both
// alike: by the janitor — the real binary in its own process, binary defaults but the grace period 0 —
// from the marks until the cleanup annotations report everything released, and by a raw client with 32
// workers per provider and no rate limit, sending exactly the needed writes. Both rounds watch the dead
// nodes for the first pod gone, so both cost the API server that watch. Reported: the medians and their
// ratio, the API server's own count of writes per released object (apiserver_request_total: pod DELETEs,
// finalizer PATCHes; and all writes, events and the janitor's record included), the live LISTs of
// ForeignClusters per 1,000 released objects (the janitor's re-checks), the watchers the API server
// terminated, the time from the marks (the end of a zero grace period) to the first pod gone, the
// janitor's resident memory, and per round (logged) everything else the API server served.
func benchRelease(b *testing.B, dying int) {
	b.Helper()
	env := harness.Require(b)
	pprof, err := harness.FreeLocalAddr()
	if err != nil {
		b.Fatal(err)
	}
	r, err := env.StartReplica(fmt.Sprintf("scale-janitor-%d", dying), "--enable-webhook=false", "--grace-period=0", "--pprof-bind-address="+pprof)
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
	var janitorRounds, rawRounds []round
	var rssFirst int64
	for b.Loop() {
		cpuProfile := ""
		if profiles != "" && len(janitorRounds) == 0 {
			cpuProfile = "http://" + pprof + "/debug/pprof/profile?seconds=10"
		}
		janitorRounds = append(janitorRounds, janitorRound(b, cs, dying, cpuProfile, filepath.Join(profiles, "janitor-cpu.pprof")))
		if len(janitorRounds) == 1 {
			if rssFirst, err = r.RSS(); err != nil {
				b.Fatal(err)
			}
		}
		rawRounds = append(rawRounds, rawRound(b, cs, raw, dying))
		for _, side := range []struct {
			name string
			rs   []round
		}{{"janitor", janitorRounds}, {"raw", rawRounds}} {
			last := side.rs[len(side.rs)-1]
			b.Logf("%s round %d: %.2fs; other requests the API server served: %s", side.name, len(side.rs), last.took.Seconds(), strings.Join(last.others, ", "))
		}
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
	objects := float64(dying * (scalePods + scaleRslices + 2))
	j, rw := medianOf(janitorRounds, func(r round) time.Duration { return r.took }), medianOf(rawRounds, func(r round) time.Duration { return r.took })
	b.ReportMetric(j.Seconds(), "janitor-s")
	b.ReportMetric(rw.Seconds(), "raw-32-workers-s")
	b.ReportMetric(j.Seconds()/rw.Seconds(), "ratio")
	b.ReportMetric(meanOf(janitorRounds, func(r round) float64 { return r.releaseWrites })/objects, "janitor-release-writes/object")
	b.ReportMetric(meanOf(janitorRounds, func(r round) float64 { return r.writes })/objects, "janitor-writes/object")
	b.ReportMetric(meanOf(rawRounds, func(r round) float64 { return r.writes })/objects, "raw-writes/object")
	b.ReportMetric(meanOf(janitorRounds, func(r round) float64 { return r.fcLists })/objects*1000, "janitor-fc-lists/1000-objects")
	b.ReportMetric(meanOf(janitorRounds, func(r round) float64 { return r.terminated }), "janitor-terminated-watchers/round")
	b.ReportMetric(meanOf(rawRounds, func(r round) float64 { return r.terminated }), "raw-terminated-watchers/round")
	b.ReportMetric(medianOf(janitorRounds, func(r round) time.Duration { return r.first }).Seconds(), "first-release-s")
	b.ReportMetric(medianOf(rawRounds, func(r round) time.Duration { return r.first }).Seconds(), "raw-first-release-s")
	b.ReportMetric(float64(rssBefore)/(1<<20), "rss-before-MB")
	b.ReportMetric(float64(rssFirst)/(1<<20), "rss-after-first-MB")
	b.ReportMetric(float64(rssAfter)/(1<<20), "rss-after-MB")
	b.ReportMetric(float64(rssPeak)/(1<<20), "rss-peak-MB")
	b.ReportMetric(meanOf(janitorRounds, func(r round) float64 { return r.other }), "janitor-other-requests/round")
	b.ReportMetric(meanOf(rawRounds, func(r round) float64 { return r.other }), "raw-other-requests/round")
	b.ReportMetric(objects, "objects")
}

// round is what one release round took and cost the API server.
type round struct {
	took, first time.Duration
	// releaseWrites are the pod DELETEs and finalizer PATCHes; writes every write (events, records too).
	releaseWrites, writes float64
	// fcLists are the LISTs of ForeignClusters, terminated the watchers the API server closed.
	fcLists, terminated float64
	// others is what else the API server served, largest first; other their total.
	others []string
	other  float64
}

// janitorRound lays out the dying providers, marks them and waits until the janitor reports them
// released. With cpuProfile set, it saves the janitor's CPU profile to path.
func janitorRound(b *testing.B, cs kubernetes.Interface, dying int, cpuProfile, path string) round {
	b.Helper()
	env := harness.Require(b)
	dead := layoutDead(b, scaleSpec, dying)
	profiled := make(chan error, 1)
	if cpuProfile != "" {
		go func() { profiled <- fetch(cpuProfile, path) }()
	} else {
		profiled <- nil
	}
	rd := measure(b, cs, dead, func() {
		for _, p := range dead {
			if err := fixture.Mark(context.Background(), env.Client, p, stormAcknowledgement(b, env, p)...); err != nil {
				b.Fatal(err)
			}
		}
		for _, p := range dead {
			waitAnnotation(b, p, fmt.Sprintf("pods %d/%d, resourceslices %d/%d, namespacemaps 1/1, renews 1/1",
				scalePods, scalePods, scaleRslices, scaleRslices))
		}
	})
	if err := <-profiled; err != nil {
		b.Fatal(err)
	}
	rd.writes -= float64(len(dead)) // the marks are the operator's writes, not the janitor's
	return rd
}

// stormAcknowledgement is the count a mark of p acknowledges when many providers are unreachable at once
// (gate rule 21, as `kubectl liqo-janitor mark` asks for it): the storm count over this consumer's live
// ForeignClusters, as the gate counts it; none when it is no storm by the default guard.
func stormAcknowledgement(b *testing.B, env *harness.Env, p *fixture.Provider) []string {
	b.Helper()
	var fcs liqov1beta1.ForeignClusterList
	if err := env.Client.List(context.Background(), &fcs); err != nil {
		b.Fatal(err)
	}
	storm := liqojanitor.CountStorm(fcs.Items, p.ForeignCluster)
	guard := liqojanitor.StormGuard{MinUnreachable: liqojanitor.DefaultStormMinUnreachable, MaxSharePercent: liqojanitor.DefaultStormMaxUnreachableShare}
	if !guard.In(storm) {
		return nil
	}
	return []string{liqojanitor.AcknowledgeUnreachableAnnotation, strconv.Itoa(len(storm.Unreachable))}
}

// rawRound lays out the dying providers and releases them with the raw client, 32 workers per provider.
func rawRound(b *testing.B, cs kubernetes.Interface, raw client.Client, dying int) round {
	b.Helper()
	dead := layoutDead(b, scaleSpec, dying)
	return measure(b, cs, dead, func() {
		var wg sync.WaitGroup
		for _, p := range dead {
			wg.Go(func() { rawRelease(b, raw, p) })
		}
		wg.Wait()
	})
}

// measure times release, which must leave dead released, and reads what it cost the API server.
func measure(b *testing.B, cs kubernetes.Interface, dead []*fixture.Provider, release func()) round {
	b.Helper()
	r0 := requests(b)
	firstGone, stopWatching := firstPodGone(b, cs, dead)
	defer stopWatching()
	t0 := time.Now()
	release()
	rd := round{took: time.Since(t0)}
	select {
	case at := <-firstGone:
		rd.first = at.Sub(t0)
	case <-time.After(time.Minute):
		b.Fatal("no pod of the dead providers was seen going")
	}
	r1 := requests(b)
	rd.releaseWrites = releaseWrites(r1) - releaseWrites(r0)
	for k, n := range r1 {
		d := n - r0[k]
		switch {
		case k.verb == "LIST" && k.resource == "foreignclusters":
			rd.fcLists += d
		case k.verb == "TERMINATED-WATCH":
			rd.terminated += d
		}
		if isWrite(k) {
			rd.writes += d
		}
	}
	rd.others, rd.other = otherRequests(r0, r1)
	return rd
}

// isWrite reports whether a request writes: create, update, patch and delete, events and the janitor's
// records included.
func isWrite(k request) bool {
	switch k.verb {
	case "POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION":
		return true
	}
	return false
}

func medianOf(rs []round, f func(round) time.Duration) time.Duration {
	d := make([]time.Duration, 0, len(rs))
	for _, r := range rs {
		d = append(d, f(r))
	}
	return median(d)
}

func meanOf(rs []round, f func(round) float64) float64 {
	total := 0.0
	for _, r := range rs {
		total += f(r)
	}
	return total / float64(len(rs))
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
func requests(b *testing.B) map[request]float64 {
	b.Helper()
	families, err := harness.Require(b).APIServerMetrics(context.Background())
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
// the watches. A watch the API server closes (it terminates watchers that fall behind) is re-opened from
// the last resourceVersion it delivered.
func firstPodGone(b *testing.B, cs kubernetes.Interface, dead []*fixture.Provider) (first <-chan time.Time, stop func()) {
	b.Helper()
	out := make(chan time.Time, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	var once sync.Once
	for _, p := range dead {
		opts := metav1.ListOptions{FieldSelector: "spec.nodeName=" + p.Node.Name}
		list, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: opts.FieldSelector, Limit: 1})
		if err != nil {
			cancel()
			b.Fatal(err)
		}
		opts.ResourceVersion = list.ResourceVersion
		w, err := cs.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, opts)
		if err != nil {
			cancel()
			b.Fatal(err)
		}
		go func() {
			for ctx.Err() == nil {
				for ev := range w.ResultChan() {
					pod, ok := ev.Object.(*corev1.Pod)
					if !ok {
						continue
					}
					if ev.Type == watch.Deleted {
						once.Do(func() { out <- time.Now() })
						w.Stop()
						return
					}
					opts.ResourceVersion = pod.ResourceVersion
				}
				w.Stop()
				if w, err = cs.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, opts); err != nil {
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
