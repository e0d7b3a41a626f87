package janitor

import (
	"time"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// Options tunes the janitor.
type Options struct {
	// GracePeriod is how long after the mark the janitor waits before releasing anything.
	GracePeriod time.Duration
	// DryRun reports what would be released (events and logs) and writes nothing else.
	DryRun bool
	// ReleaseIdentitySecrets also releases the dead cluster's control-plane identity Secret (needs RBAC on
	// Secrets, from the opt-in kustomize component).
	ReleaseIdentitySecrets bool
	// ObjectEvents also emits an event on each released object. Off by default: at thousands of objects
	// an event per object is noise and a tenth of the API server's writes (the API server, not the
	// janitor's reporting, must be the limit); the ForeignCluster gets one event per kind per pass (counts,
	// first and last object), and the structured log has every release.
	ObjectEvents bool
	// Workers is how many writes one pass sends concurrently.
	Workers int
	// BatchSize is how many writes are started between two live re-reads of the ForeignClusters.
	BatchSize int
	// Concurrency is how many ForeignClusters are reconciled at once.
	Concurrency int
	// ReturnProbeInterval is how often the janitor probes the providers of marked ForeignClusters, to see
	// one answering again (janitor rule 10); zero turns its probe off (Liqo's APIServerStatus still counts).
	ReturnProbeInterval time.Duration
	// ProbeTimeout bounds each probe of a provider (the gate's --probe-timeout).
	ProbeTimeout time.Duration
	// LiqoNamespace is Liqo's namespace, where the janitor reads the controller-manager's Deployment to
	// tell the installed Liqo version (janitor rule 12); empty is "liqo".
	LiqoNamespace string
	// Namespace is the janitor's own namespace, where the brake's ConfigMap is read (janitor rule 14) and
	// its records are kept (rules 16, 17). Required: Setup refuses to run without it.
	Namespace string
	// FabricSettle is how long an InternalFabric of a dead cluster must have been deleting before the
	// janitor removes the legacy finalizer Liqo's fabric still holds, on Liqo before v1.2.0 (target_fabric.go);
	// zero is DefaultFabricSettle.
	FabricSettle time.Duration
	// Storm is the storm guard (janitor rule 18): while it sees too many providers unreachable at once,
	// a mark the janitor has not begun with and that carries no acknowledgement waits. The zero value is
	// off; the binary passes the gate's --storm-min-unreachable and --storm-max-unreachable-share.
	Storm liqojanitor.StormGuard
}

// Defaults of the janitor's options, and of the client rate limits it wants: releasing thousands of
// objects must be limited by the API server, not by the janitor.
const (
	DefaultGracePeriod = 30 * time.Second
	DefaultWorkers     = 32
	defaultBatchSize   = 250
	defaultConcurrency = 4
	DefaultClientQPS   = 1000
	DefaultClientBurst = 2000
	// DefaultReturnProbeInterval is the --return-probe-interval of the binary: about a minute, marked
	// clusters only.
	DefaultReturnProbeInterval = time.Minute
	defaultProbeTimeout        = 2 * time.Second
)

// Default returns o with every unset (zero) count — Workers, BatchSize, Concurrency — the probe
// timeout, Liqo's namespace and the fabric's settle time set to their defaults. GracePeriod stays as given
// (zero is a valid grace period), and so does ReturnProbeInterval (zero is no probe).
func (o Options) Default() Options {
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.BatchSize <= 0 {
		o.BatchSize = defaultBatchSize
	}
	if o.Concurrency <= 0 {
		o.Concurrency = defaultConcurrency
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = defaultProbeTimeout
	}
	if o.LiqoNamespace == "" {
		o.LiqoNamespace = "liqo"
	}
	if o.FabricSettle <= 0 {
		o.FabricSettle = DefaultFabricSettle
	}
	return o
}
