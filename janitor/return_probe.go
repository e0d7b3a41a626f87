package janitor

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor/internal/unpeering"
)

// returnProbe is the janitor's own look at the providers of marked ForeignClusters (janitor rule 10):
// every --return-probe-interval (about a minute; no hot loop) it probes, bounded by the probe timeout, the
// API-server URLs Liqo wrote into the status of each marked ForeignCluster whose return is not recorded
// yet (liqojanitor.Prober: unauthenticated, any HTTP answer counts), and enqueues the ForeignCluster when
// its provider answers for the first time. Liqo's APIServerStatus shows a return too, but only while
// Liqo's controller runs, and force-unpeer (Liqo ≥ v1.1) removes the condition. It runs on the leader
// only, as the rest of the janitor; what it found lives in this process until the janitor records the
// return on the ForeignCluster.
type returnProbe struct {
	cache    client.Reader
	prober   *liqojanitor.Prober
	interval time.Duration
	clock    clock.PassiveClock
	events   chan event.GenericEvent
	// store keeps the probe targets of each mark in the janitor's namespace (janitor rule 16); dryRun
	// keeps none.
	store  targetStore
	dryRun bool

	mu      sync.Mutex
	answers map[types.UID]answer
	// kept is, per ForeignCluster, the mark (its marked-at) whose targets this process stored.
	kept map[types.UID]string
	// probedAt is, per moment and ForeignCluster ("<moment>/<UID>"), the mark probeNow probed for.
	probedAt map[string]string
	// returns are the records holding a kept return (janitor rule 17), and stored the ForeignClusters with
	// any record in the janitor's namespace, both as read once (loaded) and kept since.
	returns map[types.UID]liqojanitor.KeptRecord
	stored  map[types.UID]bool
	loaded  bool
}

// maxConcurrentProbes bounds how many providers one round probes at once.
const maxConcurrentProbes = 8

func newReturnProbe(cache client.Reader, store targetStore, clk clock.PassiveClock, o Options) *returnProbe {
	return &returnProbe{cache: cache, prober: liqojanitor.NewProber(o.ProbeTimeout), interval: o.ReturnProbeInterval, clock: clk,
		events: make(chan event.GenericEvent, 16), answers: map[types.UID]answer{}, kept: map[types.UID]string{}, probedAt: map[string]string{},
		returns: map[types.UID]liqojanitor.KeptRecord{}, stored: map[types.UID]bool{},
		store: store, dryRun: o.DryRun}
}

// keepTargets stores, once per mark, where fc's provider is as Liqo knows it at the janitor's first sight
// of the confirmed mark (janitor rule 16): Liqo forgets it when the tenant namespace goes.
func (p *returnProbe) keepTargets(ctx context.Context, live client.Reader, fc *liqov1beta1.ForeignCluster) error {
	mark := fc.Annotations[liqojanitor.MarkedAtAnnotation]
	p.mu.Lock()
	kept, ok := p.kept[fc.UID]
	p.mu.Unlock()
	if p.dryRun || !liqojanitor.Confirmed(fc) || (ok && kept == mark) {
		return nil
	}
	switch rec, stored, err := p.store.Of(ctx, fc); {
	case err != nil:
		return err
	case !stored || !rec.HasTargets():
		t, from := targetsAtFirstSight(ctx, live, fc)
		if !stored {
			rec = liqojanitor.KeptRecord{Mark: mark} // a record of an earlier mark is replaced, its return with it
		}
		changed, err := keepFirstSight(ctx, live, fc, &rec)
		if err != nil {
			return err
		}
		if t.APIServer != "" || t.Proxy != "" {
			rec.Targets, rec.From, rec.At, changed = t, from, metav1.NewTime(p.clock.Now()), true
		}
		if !changed {
			return nil // nothing to keep yet: the plan and the status say the mark has no target
		}
		if err := p.store.Keep(ctx, fc, rec); err != nil {
			return fmt.Errorf("keeping the probe targets of %s: %w", fc.Name, err)
		}
		if !rec.HasTargets() {
			p.mu.Lock()
			p.stored[fc.UID] = true
			p.mu.Unlock()
			return nil // the targets are looked for again on the next pass
		}
	}
	p.mu.Lock()
	p.kept[fc.UID] = mark
	p.stored[fc.UID] = true
	p.mu.Unlock()
	return nil
}

// keepFirstSight adds to rec, once, what the unpeering deletes and a volume pinned to fc's cluster needs
// (internal/unpeering volumes.go): the names of the cluster's VirtualNodes (spec.clusterID), one of which a pinned
// volume names as its selected node, and where each offloaded namespace is on the cluster (its NamespaceMap's
// status.currentMapping, else its NamespaceOffloading's status.remoteNamespaceName), where a pinned
// volume's data is. It reports whether it added any.
func keepFirstSight(ctx context.Context, live client.Reader, fc *liqov1beta1.ForeignCluster, rec *liqojanitor.KeptRecord) (bool, error) {
	if len(rec.VirtualNodes) > 0 || len(rec.RemoteNamespaces) > 0 {
		return false, nil
	}
	vns, err := unpeering.ClusterNodes(ctx, live, string(fc.Spec.ClusterID), liqojanitor.KeptRecord{}) // its VirtualNodes: nothing is kept yet
	if err != nil {
		return false, err
	}
	remote, err := remoteNamespaces(ctx, live, string(fc.Spec.ClusterID))
	if err != nil {
		return false, err
	}
	rec.VirtualNodes, rec.RemoteNamespaces = slices.Sorted(maps.Keys(vns)), remote
	return len(vns) > 0 || len(remote) > 0, nil
}

// remoteNamespaces maps each namespace offloaded to clusterID to its namespace there: the cluster's
// NamespaceMaps' status.currentMapping (Liqo's NamespaceMap controller fills it when it asks for the remote
// namespace; pkg/liqo-controller-manager/offloading/namespacemap-controller, v1.0.3 to v1.2.0), and for a
// namespace none of them maps, its NamespaceOffloading's status.remoteNamespaceName (the same name on
// every cluster it is offloaded to).
func remoteNamespaces(ctx context.Context, r client.Reader, clusterID string) (map[string]string, error) {
	nms, err := namespaceMaps(ctx, r)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for i := range nms {
		if nms[i].Labels[liqojanitor.RemoteClusterIDLabel] != clusterID {
			continue
		}
		for local, st := range nms[i].Status.CurrentMapping {
			if st.RemoteNamespace != "" {
				out[local] = st.RemoteNamespace
			}
		}
	}
	var nsos offloadingv1beta1.NamespaceOffloadingList
	if err := r.List(ctx, &nsos); err != nil {
		return nil, fmt.Errorf("listing NamespaceOffloadings: %w", err)
	}
	for _, nso := range nsos.Items {
		if _, mapped := out[nso.Namespace]; !mapped && nso.Status.RemoteNamespaceName != "" && mentions(&nso, clusterID, nms) {
			out[nso.Namespace] = nso.Status.RemoteNamespaceName
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// targetsAtFirstSight is where fc's provider is as Liqo knows it now (liqojanitor.ProviderTargets), or, when
// Liqo has already forgotten it (force unpeer cleared the status before the janitor first saw the mark) or
// knows it without the CA the gate saw, as the gate recorded it when it admitted the mark (gate rule 23,
// liqojanitor.MarkTargetsAnnotation; janitor rule 16): no blind window between the mark and the first sight.
func targetsAtFirstSight(ctx context.Context, live client.Reader, fc *liqov1beta1.ForeignCluster) (liqojanitor.Targets, string) {
	t, from := liqojanitor.ProviderTargets(ctx, live, fc)
	gate, ok := liqojanitor.ParseMarkTargets(fc.Annotations[liqojanitor.MarkTargetsAnnotation])
	if ok && ((t.APIServer == "" && t.Proxy == "") || (len(t.CA) == 0 && len(gate.Targets.CA) > 0)) {
		return gate.Targets, "the gate's record when it admitted the mark at " + gate.At.UTC().Format(time.RFC3339) + ": " + gate.From
	}
	return t, from
}

// loadReturns reads, once per process and before its first verdict, the returns the janitor kept in its
// namespace (janitor rule 17): a new leader knows every return an earlier one saw, even one it could not
// write onto the ForeignCluster. It reports whether this call read them.
func (p *returnProbe) loadReturns(ctx context.Context) (bool, error) {
	p.mu.Lock()
	loaded := p.loaded
	p.mu.Unlock()
	if loaded {
		return false, nil
	}
	recs, err := p.store.All(ctx)
	if err != nil {
		return false, fmt.Errorf("reading the returns the janitor kept: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for uid, rec := range recs {
		p.stored[uid] = true
		if rec.Return != nil {
			p.returns[uid] = rec
		}
	}
	p.loaded = true
	return true, nil
}

// keptReturn is the return the janitor kept for fc's current mark (janitor rule 17), if any.
func (p *returnProbe) keptReturn(fc *liqov1beta1.ForeignCluster) (providerReturn, bool) {
	p.mu.Lock()
	rec, ok := p.returns[fc.UID]
	p.mu.Unlock()
	if !ok || !rec.OfMark(fc.Annotations) {
		return providerReturn{}, false
	}
	at, err := time.Parse(time.RFC3339, rec.Return.At)
	if err != nil {
		return providerReturn{}, false
	}
	return providerReturn{at: at, how: rec.Return.How, kept: true}, true
}

// keepReturn keeps r, a return of fc's current mark, in the janitor's namespace before anything is written
// onto the ForeignCluster or told (janitor rule 17). A dry run keeps nothing.
func (p *returnProbe) keepReturn(ctx context.Context, fc *liqov1beta1.ForeignCluster, r providerReturn) error {
	if _, known := p.keptReturn(fc); known || r.recorded || p.dryRun {
		return nil
	}
	return p.updateKept(ctx, fc, func(rec *liqojanitor.KeptRecord) {
		rec.Return = &liqojanitor.KeptReturn{At: liqojanitor.RecordTime(r.at), How: r.how}
	})
}

// untold reports whether the return kept for fc's current mark has not been told yet (no ProviderReturned
// for it: janitor rule 17) — whichever leader kept it, and whatever became of the writes after it.
func (p *returnProbe) untold(fc *liqov1beta1.ForeignCluster) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	rec, ok := p.returns[fc.UID]
	return ok && rec.OfMark(fc.Annotations) && rec.Return != nil && !rec.Return.Told
}

// markTold records in the kept return of fc's current mark that ProviderReturned was sent for it.
func (p *returnProbe) markTold(ctx context.Context, fc *liqov1beta1.ForeignCluster) error {
	return p.updateKept(ctx, fc, func(rec *liqojanitor.KeptRecord) {
		if rec.Return != nil {
			rec.Return.Told = true
		}
	})
}

// markFenced records in the kept return of fc's current mark that the operator's fence of it was seen.
func (p *returnProbe) markFenced(ctx context.Context, fc *liqov1beta1.ForeignCluster) error {
	p.mu.Lock()
	rec, ok := p.returns[fc.UID]
	p.mu.Unlock()
	if p.dryRun || !ok || !rec.OfMark(fc.Annotations) || rec.Return == nil || rec.Return.Fenced {
		return nil
	}
	return p.updateKept(ctx, fc, func(rec *liqojanitor.KeptRecord) {
		if rec.Return != nil {
			rec.Return.Fenced = true
		}
	})
}

// unfencedKept are the ForeignCluster UIDs of the kept returns not fenced yet (janitor rule 10's gauge):
// a ForeignCluster deleted after its return still counts, whichever process kept it.
func (p *returnProbe) unfencedKept() map[types.UID]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[types.UID]bool{}
	for uid, rec := range p.returns {
		if rec.Return != nil && !rec.Return.Fenced {
			out[uid] = true
		}
	}
	return out
}

// updateKept changes the record of fc's current mark (a new one when there is none) in the janitor's
// namespace, then in this process's memory.
func (p *returnProbe) updateKept(ctx context.Context, fc *liqov1beta1.ForeignCluster, change func(*liqojanitor.KeptRecord)) error {
	rec, stored, err := p.store.Of(ctx, fc)
	if err != nil {
		return err
	}
	if !stored {
		rec = liqojanitor.KeptRecord{Mark: fc.Annotations[liqojanitor.MarkedAtAnnotation]}
	}
	change(&rec)
	if err := p.store.Keep(ctx, fc, rec); err != nil {
		return fmt.Errorf("keeping the return of %s in the janitor's namespace: %w", fc.Name, err)
	}
	p.mu.Lock()
	p.returns[fc.UID], p.stored[fc.UID] = rec, true
	p.mu.Unlock()
	return nil
}

// Start probes at once, then every interval, until ctx ends.
func (p *returnProbe) Start(ctx context.Context) error {
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		p.round(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// round probes the providers of the marked ForeignClusters whose return is not known yet.
func (p *returnProbe) round(ctx context.Context) {
	var fcs liqov1beta1.ForeignClusterList
	if err := p.cache.List(ctx, &fcs); err != nil {
		if ctx.Err() == nil { // not the janitor stopping
			ctrl.LoggerFrom(ctx).Error(err, "Listing ForeignClusters to probe the marked ones failed")
		}
		return
	}
	recs, err := p.store.All(ctx)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Reading the kept probe targets failed; probing the status' URLs only")
	}
	marked := map[types.UID]bool{}
	sem := make(chan struct{}, maxConcurrentProbes)
	var wg sync.WaitGroup
	for i := range fcs.Items {
		fc := &fcs.Items[i]
		if !liqojanitor.IsMarked(fc.Annotations) {
			continue
		}
		marked[fc.UID] = true
		rec, kept := recs[fc.UID]
		kept = kept && rec.OfMark(fc.Annotations) && rec.HasTargets()
		kr, _ := p.keptReturn(fc)
		if _, known := returnOf(fc, observed{firstSeen: p.clock.Now(), answer: p.answered(fc.UID), kept: kr}); known ||
			(!kept && len(liqojanitor.ProbeURLs(fc)) == 0) {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			p.probe(ctx, fc, rec.Targets, kept)
		})
	}
	wg.Wait()
	p.forgetUnmarked(marked)
}

// probe probes fc's provider once — at the targets kept for its mark when there are (janitor rule 16), else
// at the status' URLs — and an answer is remembered and enqueues fc.
func (p *returnProbe) probe(ctx context.Context, fc *liqov1beta1.ForeignCluster, t liqojanitor.Targets, kept bool) bool {
	var u string
	verified := false
	if kept {
		u, verified = p.prober.ProbeTargets(ctx, t)
	} else {
		u = p.prober.Probe(ctx, fc)
	}
	if u == "" {
		return false
	}
	p.mu.Lock()
	p.answers[fc.UID] = answer{at: p.clock.Now(), url: u, verified: verified, kept: kept}
	p.mu.Unlock()
	ctrl.LoggerFrom(ctx).Info("The provider of a marked ForeignCluster answers again", "ForeignCluster", fc.Name, "url", u)
	select {
	case p.events <- event.GenericEvent{Object: fc}:
	case <-ctx.Done():
	}
	return true
}

// The moments probeNow probes at.
const (
	probeAtFirstSight  = "first-sight"
	probeBeforeRelease = "before-release"
)

// probeNow probes fc's provider at once, outside the rounds, once per mark and moment (janitor rule 16): at
// the janitor's first sight of the confirmed mark and right before its first release, so that the round's
// interval is no blind window. An answer is remembered and enqueues fc, as a round's; it reports whether
// the provider answered. With the probe off (--return-probe-interval=0) it probes nothing.
func (p *returnProbe) probeNow(ctx context.Context, fc *liqov1beta1.ForeignCluster, moment string) (bool, error) {
	mark := fc.Annotations[liqojanitor.MarkedAtAnnotation]
	key := moment + "/" + string(fc.UID)
	p.mu.Lock()
	probed, done := p.probedAt[key]
	done = done && probed == mark
	p.mu.Unlock()
	if p.interval == 0 || done || !liqojanitor.Confirmed(fc) {
		return false, nil
	}
	rec, kept, err := p.store.Of(ctx, fc)
	if err != nil {
		return false, err
	}
	kept = kept && rec.HasTargets()
	answered := (kept || len(liqojanitor.ProbeURLs(fc)) > 0) && p.probe(ctx, fc, rec.Targets, kept)
	p.mu.Lock()
	p.probedAt[key] = mark
	p.mu.Unlock()
	return answered, nil
}

// answered is the probe's first answer from fc's provider, zero if none.
func (p *returnProbe) answered(uid types.UID) answer {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.answers[uid]
}

// forgetUnmarked forgets the answers of ForeignClusters that are no longer marked (or gone).
func (p *returnProbe) forgetUnmarked(marked map[types.UID]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for uid := range p.answers {
		if !marked[uid] {
			delete(p.answers, uid)
		}
	}
}

// dropRecords drops the records kept in the janitor's namespace (targets, return) for a ForeignCluster
// whose mark went, whichever leader kept them.
func (p *returnProbe) dropRecords(ctx context.Context, uid types.UID) error {
	if _, err := p.loadReturns(ctx); err != nil {
		return err
	}
	p.mu.Lock()
	ok := p.stored[uid]
	p.mu.Unlock()
	if ok && !p.dryRun {
		if err := p.store.Drop(ctx, uid); err != nil {
			return err
		}
	}
	p.mu.Lock()
	delete(p.kept, uid)
	delete(p.probedAt, probeAtFirstSight+"/"+string(uid))
	delete(p.probedAt, probeBeforeRelease+"/"+string(uid))
	delete(p.returns, uid)
	delete(p.stored, uid)
	p.mu.Unlock()
	return nil
}
