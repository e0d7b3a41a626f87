package janitor

import (
	"context"
	"fmt"
	"sync"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
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
}

// maxConcurrentProbes bounds how many providers one round probes at once.
const maxConcurrentProbes = 8

func newReturnProbe(cache client.Reader, store targetStore, clk clock.PassiveClock, o Options) *returnProbe {
	return &returnProbe{cache: cache, prober: liqojanitor.NewProber(o.ProbeTimeout), interval: o.ReturnProbeInterval, clock: clk,
		events: make(chan event.GenericEvent, 16), answers: map[types.UID]answer{}, kept: map[types.UID]string{},
		store: store, dryRun: o.DryRun}
}

// keepTargets stores, once per mark, where fc's provider is as Liqo knows it at the janitor's first sight
// of the confirmed mark (janitor rule 16): Liqo forgets it when the tenant namespace goes.
func (p *returnProbe) keepTargets(ctx context.Context, live client.Reader, fc *liqov1beta1.ForeignCluster) error {
	mark := fc.Annotations[liqojanitor.MarkedAtAnnotation]
	p.mu.Lock()
	kept, ok := p.kept[fc.UID]
	p.mu.Unlock()
	if p.dryRun || p.store.namespace == "" || !liqojanitor.Confirmed(fc) || (ok && kept == mark) {
		return nil
	}
	switch _, stored, err := p.store.of(ctx, fc); {
	case err != nil:
		return err
	case !stored:
		t, from := liqojanitor.ProviderTargets(ctx, live, fc)
		if t.APIServer == "" && t.Proxy == "" {
			return nil // nothing to keep yet: the plan and the status say the mark has no target
		}
		if err := p.store.keep(ctx, fc, targetsRecord{Mark: mark, Targets: t, From: from, At: metav1.NewTime(p.clock.Now())}); err != nil {
			return fmt.Errorf("keeping the probe targets of %s: %w", fc.Name, err)
		}
	}
	p.mu.Lock()
	p.kept[fc.UID] = mark
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
	recs, err := p.store.all(ctx)
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
		kept = kept && rec.Mark == fc.Annotations[liqojanitor.MarkedAtAnnotation]
		if _, known := returnOf(fc, observed{firstSeen: p.clock.Now(), answer: p.answered(fc.UID)}); known ||
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
	p.retain(marked)
}

// probe probes fc's provider once — at the targets kept for its mark when there are (janitor rule 16), else at
// the status' URLs — and an answer is remembered and enqueues fc.
func (p *returnProbe) probe(ctx context.Context, fc *liqov1beta1.ForeignCluster, t liqojanitor.Targets, kept bool) {
	var u string
	verified := false
	if kept {
		u, verified = p.prober.ProbeTargets(ctx, t)
	} else {
		u = p.prober.Probe(ctx, fc)
	}
	if u == "" {
		return
	}
	p.mu.Lock()
	p.answers[fc.UID] = answer{at: p.clock.Now(), url: u, verified: verified, kept: kept}
	p.mu.Unlock()
	ctrl.LoggerFrom(ctx).Info("The provider of a marked ForeignCluster answers again", "ForeignCluster", fc.Name, "url", u)
	select {
	case p.events <- event.GenericEvent{Object: fc}:
	case <-ctx.Done():
	}
}

// answered is the probe's first answer from fc's provider, zero if none.
func (p *returnProbe) answered(uid types.UID) answer {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.answers[uid]
}

// retain forgets the answers of ForeignClusters that are no longer marked (or gone).
func (p *returnProbe) retain(marked map[types.UID]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for uid := range p.answers {
		if !marked[uid] {
			delete(p.answers, uid)
		}
	}
}

// forgetTargets drops the targets this process kept for a ForeignCluster whose mark went.
func (p *returnProbe) forgetTargets(ctx context.Context, uid types.UID) error {
	p.mu.Lock()
	_, ok := p.kept[uid]
	delete(p.kept, uid)
	p.mu.Unlock()
	if !ok || p.dryRun {
		return nil
	}
	return p.store.forget(ctx, uid)
}
