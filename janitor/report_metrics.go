package janitor

import (
	"context"
	"fmt"
	"sync"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/event"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// Metric labels are bounded: kind is one of the target kinds, result one of the outcomes below, reason one
// of the WaitReasons. Never a cluster, namespace or object name.
var (
	objectsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "liqo_janitor_objects_total",
		Help: "Objects of dead clusters the janitor acted on, by kind and result (released, blocked, dry_run, failed, refused_by_webhook: another admission webhook refused the write).",
	}, []string{"kind", "result"})
	blockedObjects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "liqo_janitor_blocked_objects",
		Help: "Objects of dead clusters that stay because of finalizers the janitor does not own, by kind, as of the last pass.",
	}, []string{"kind"})
	pendingObjects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "liqo_janitor_pending_objects",
		Help: "Objects of dead clusters past their grace period that are not released yet (blocked, waiting for Liqo or failed), by kind, as of the last pass.",
	}, []string{"kind"})
	dryRunGauge = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "liqo_janitor_dry_run",
		Help: "1 when the janitor runs with --dry-run (it reports and writes nothing), else 0.",
	})
	waitsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "liqo_janitor_waits_total",
		Help: "Passes over marked ForeignClusters that were not dead, so the janitor wrote nothing, by reason (Unconfirmed, NotFoundByLiqo, Reachable, TunnelUp, Paused, Storm, GracePeriod, FenceDeadline, FenceUnreadable, Duplicate, Returned, Braked).",
	}, []string{"reason"})
	returnedClusters = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "liqo_janitor_returned_clusters",
		Help: "Marked ForeignClusters whose provider answered again after the mark and that are not fenced yet: the consumer's workloads there may run twice.",
	})
	unpeeringObjects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "liqo_janitor_unpeering_objects",
		Help: "Objects of dead clusters' unpeerings still on the consumer (tenant namespaces, VirtualNodes, objects whose finalizers hold a tenant namespace), by kind and whether liqo-janitor releases them, as of the last pass.",
	}, []string{"kind", "releasable"})
	pinnedVolumesGauge = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "liqo_janitor_pinned_volumes",
		Help: "PVCs of Liqo's virtual storage class pinned to dead clusters (their workloads cannot run anywhere until the operator releases them; the janitor never does), summed over the dead clusters, as of the last pass.",
	})
	brakeGauge = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "liqo_janitor_brake",
		Help: "1 while the janitor-wide brake (the ConfigMap liqo-janitor-brake in the janitor's namespace) is set and nothing is released, as last read.",
	})
	providersGauge = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "liqo_janitor_providers",
		Help: "Cluster IDs this consumer has ForeignClusters for, as last read.",
	})
	unreachableProviders = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "liqo_janitor_unreachable_providers",
		Help: "Of liqo_janitor_providers, those Liqo's evidence shows unreachable (API server not Established and data plane not up), as last read.",
	})
	stormGauge = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "liqo_janitor_storm",
		Help: "1 while so many providers are unreachable at once that the janitor holds back marks it has not begun with (--storm-min-unreachable, --storm-max-unreachable-share), else 0; counted on every replica.",
	})
	cleanupDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "liqo_janitor_cleanup_duration_seconds",
		Help:    "Time from the end of a dead cluster's hold (the later of its grace period's end and its provider's fence deadline) until nothing of it was left to release.",
		Buckets: prometheus.ExponentialBuckets(0.5, 2, 14),
	})
)

// Results counted in liqo_janitor_objects_total.
const (
	resultReleased = "released"
	resultBlocked  = "blocked"
	resultDryRun   = "dry_run"
	resultFailed   = "failed"
	// resultRefused: another admission webhook refused the write (or one of its kind in the same pass), as
	// Liqo's own do while their pod is down (janitor rule 11).
	resultRefused = "refused_by_webhook"
)

func init() {
	ctrlmetrics.Registry.MustRegister(objectsTotal, blockedObjects, pendingObjects, dryRunGauge, waitsTotal, returnedClusters, unpeeringObjects, pinnedVolumesGauge, brakeGauge,
		providersGauge, unreachableProviders, stormGauge, cleanupDuration)
	// Every series exists from the start, at zero, so that rate() and the alerts see a janitor that has
	// not acted yet (not an absent series) and dashboards show every kind.
	for _, kind := range allKinds {
		for _, result := range []string{resultReleased, resultBlocked, resultDryRun, resultFailed, resultRefused} {
			objectsTotal.WithLabelValues(kind, result)
		}
		blockedObjects.WithLabelValues(kind)
		pendingObjects.WithLabelValues(kind)
	}
	for _, reason := range []WaitReason{WaitUnconfirmed, WaitNotFoundByLiqo, WaitReachable, WaitTunnelUp, WaitPaused, WaitStorm, WaitGracePeriod, WaitFenceDeadline, WaitFenceUnreadable, WaitDuplicate, WaitReturned, WaitBraked} {
		waitsTotal.WithLabelValues(string(reason))
	}
}

// watchStorm keeps the storm gauges (janitor rule 18; the LiqoJanitorStorm alert) on Liqo's evidence: on
// every ForeignCluster event — one added, Liqo's status changed, one deleted — it counts the cached
// ForeignClusters again: how many providers this consumer has, how many Liqo's evidence shows unreachable,
// and whether guard sees a storm. Only those events change the count, so a pass never counts. When the
// count of unreachable providers or the storm itself changes, it sends one event on changes (never blocking:
// one pending event stands for any number), which the controller maps to every marked ForeignCluster: a
// mark the guard held is assessed again the moment the storm ends (janitor rule 20).
func watchStorm(ctx context.Context, c cache.Cache, guard liqojanitor.StormGuard, changes chan<- event.GenericEvent) error {
	informer, err := c.GetInformer(ctx, &liqov1beta1.ForeignCluster{})
	if err != nil {
		return fmt.Errorf("watching ForeignClusters for the storm count: %w", err)
	}
	log := ctrl.LoggerFrom(ctx)
	type state struct {
		unreachable int
		storm       bool
	}
	var mu sync.Mutex
	last := state{unreachable: -1}
	count := func() {
		var fcs liqov1beta1.ForeignClusterList
		// The informer that calls this is synced: the cached list answers at once, whatever became of ctx.
		if err := c.List(context.Background(), &fcs); err != nil {
			log.Error(err, "Counting the unreachable providers")
			return
		}
		s := liqojanitor.CountStorm(fcs.Items, nil)
		providersGauge.Set(float64(s.Providers))
		unreachableProviders.Set(float64(len(s.Unreachable)))
		now := state{unreachable: len(s.Unreachable), storm: guard.In(s)}
		stormGauge.Set(0)
		if now.storm {
			stormGauge.Set(1)
		}
		mu.Lock()
		changed := now != last
		last = now
		mu.Unlock()
		if changed {
			select {
			case changes <- event.GenericEvent{Object: &liqov1beta1.ForeignCluster{}}:
			default: // one is pending: it maps to every marked cluster when it is handled
			}
		}
	}
	_, err = informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { count() },
		UpdateFunc: func(any, any) { count() },
		DeleteFunc: func(any) { count() },
	})
	return err
}
