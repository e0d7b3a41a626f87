package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor/fencerenew"
	"github.com/liqo-janitor/liqo-janitor/janitor/providerfence"
	"github.com/liqo-janitor/liqo-janitor/webhook"
	"github.com/liqo-janitor/liqo-janitor/webhook/certs"
)

// leaderElectionID names the Lease the janitor replicas compete for; providerFenceElectionID the one the
// provider fence's replicas compete for (its own Deployment, possibly beside a janitor on a cluster that is
// both a consumer and a provider).
const (
	leaderElectionID        = "liqo-janitor.liqo-janitor.io"
	providerFenceElectionID = "liqo-janitor-provider-fence.liqo-janitor.io"
)

// inClusterNamespaceFile is where a pod finds its own namespace; controller-runtime puts the Lease there
// when --leader-election-namespace is not set.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// options holds every command-line setting; main parses them and the wiring below only reads them.
type options struct {
	metricsAddr string
	// metricsSecure serves /metrics over HTTPS behind authentication; metricsCertDir holds its certificate.
	metricsSecure  bool
	metricsCertDir string
	pprofAddr      string
	probeAddr      string
	// namespace is the janitor's own namespace (records, brake, kept targets and returns); "" in a pod is
	// the pod's.
	namespace     string
	leaderElect   bool
	leaderElectNS string
	// lease, renew, retry are the leader election's timings.
	lease, renew, retry time.Duration
	webhookPort         int
	webhookCertDir      string
	enableWebhook       bool
	enableJanitor       bool
	// enableProviderFence runs the provider fence (janitor/providerfence) instead of the gate and the
	// janitor; fence holds its settings.
	enableProviderFence bool
	fence               providerfence.Options
	// fenceRenew is how often the janitor renews each provider's fence Lease (janitor/fencerenew).
	fenceRenew    time.Duration
	enableHTTP2   bool
	liqoNamespace string
	// liqoUninstallers are the identities whose bare marks the gate accepts as Liqo's uninstaller's.
	liqoUninstallers userList
	minUnreachable   time.Duration
	// storm is the storm guard shared by the gate (gate rule 21) and the janitor.
	storm          liqojanitor.StormGuard
	probeTimeout   time.Duration
	gracePeriod    time.Duration
	returnProbe    time.Duration
	fabricSettle   time.Duration
	dryRun         bool
	releaseSecrets bool
	workers        int
	objectEvents   bool
	kubeAPIQPS     float64
	kubeAPIBurst   int
	certs          certOptions
	zap            zap.Options
}

func (o *options) bindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080",
		"Address the Prometheus metrics endpoint binds to; \"0\" turns it off.")
	fs.BoolVar(&o.metricsSecure, "metrics-secure", true,
		"Serve /metrics over HTTPS, only to scrapers whose token the API server authenticates and who may get the non-resource URL /metrics (ClusterRole liqo-janitor:metrics-reader); false serves plain HTTP to anyone who reaches it.")
	fs.StringVar(&o.metricsCertDir, "metrics-cert-dir", "",
		"Directory holding the metrics endpoint's certificate as tls.crt and tls.key; empty: the webhook's (--webhook-cert-dir), or a self-signed one when the webhook is off.")
	fs.StringVar(&o.pprofAddr, "pprof-bind-address", "0",
		"Address Go's pprof endpoints (/debug/pprof/) bind to, for profiling; \"0\" (the default) turns them off.")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081",
		"Address the /healthz and /readyz endpoints bind to.")
	fs.StringVar(&o.namespace, "namespace", "",
		"The janitor's own namespace: its records (the probe targets and returns it keeps), the janitor-wide brake, and "+
			"the leader-election Lease live there. In a cluster it defaults to the pod's own namespace (the chart sets it); "+
			"out of a cluster it is required: without it the janitor keeps no records and has no brake, so it refuses to start.")
	fs.BoolVar(&o.leaderElect, "leader-elect", false,
		"Elect a leader before running the janitor, so that only one replica writes (every replica serves the webhook).")
	fs.StringVar(&o.leaderElectNS, "leader-election-namespace", "",
		"Namespace of the leader-election Lease; defaults to --namespace.")
	fs.DurationVar(&o.lease, "leader-election-lease-duration", 15*time.Second,
		"How long a standby waits after the leader's last renewal before it takes the Lease (a killed leader's gap).")
	fs.DurationVar(&o.renew, "leader-election-renew-deadline", 10*time.Second,
		"How long the leader keeps trying to renew before it gives up leading (shorter than the lease duration).")
	fs.DurationVar(&o.retry, "leader-election-retry-period", 2*time.Second,
		"How often the replicas try to take or renew the Lease (shorter than the renew deadline).")
	fs.IntVar(&o.webhookPort, "webhook-port", crwebhook.DefaultPort,
		"Port the admission webhook server listens on.")
	fs.StringVar(&o.webhookCertDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs",
		"Directory holding the webhook serving certificate as tls.crt and tls.key; changes are picked up without a restart.")
	fs.BoolVar(&o.enableWebhook, "enable-webhook", true,
		"Serve the admission webhook (the gate) on ForeignClusters.")
	fs.BoolVar(&o.enableJanitor, "enable-janitor", true,
		"Run the janitor controller that releases the objects of clusters marked dead.")
	fs.BoolVar(&o.enableProviderFence, "enable-provider-fence", false,
		"Run the provider fence instead (on a provider, in a Deployment of its own, with --enable-webhook=false --enable-janitor=false): "+
			"it stops the pods of a consumer whose Tenant carries "+liqojanitor.FenceAfterAnnotation+" once that consumer's renewals of its "+
			"Lease "+liqojanitor.FenceLeaseName+" stop (go doc ./janitor/providerfence).")
	fs.DurationVar(&o.fence.Poll, "fence-poll", providerfence.DefaultPoll,
		"Provider fence: how often it reads each opted-in consumer's Lease; a read that takes longer has failed (part of the contract it publishes).")
	fs.DurationVar(&o.fence.GraceCap, "fence-grace-cap", providerfence.DefaultGraceCap,
		"Provider fence: the longest grace period the fence gives a consumer's pod it deletes (part of the contract it publishes).")
	fs.DurationVar(&o.fenceRenew, "fence-renew-interval", fencerenew.DefaultInterval,
		"How often the janitor's leader renews the fence Lease of each provider it holds a fence credential for (a Secret labelled "+
			liqojanitor.ProviderFenceSecretLabel+"=<provider cluster ID> in --namespace); whole seconds, each request bounded by half of it.")
	fs.BoolVar(&o.enableHTTP2, "enable-http2", false,
		"Allow HTTP/2 on the webhook and metrics servers (off by default: HTTP/2 rapid-reset mitigations).")
	fs.StringVar(&o.liqoNamespace, "liqo-namespace", liqojanitor.DefaultLiqoNamespace,
		"Namespace Liqo is installed in; the local cluster ID is read from its cluster-ID ConfigMap.")
	fs.Var(&o.liqoUninstallers, "liqo-uninstaller-users",
		"Comma-separated ServiceAccounts of --liqo-namespace whose bare marks the gate accepts as Liqo's uninstaller's, from a token "+
			"bound to a live pod of their Job only (gate rule 18: without the confirmation, the no-evidence key and the break-glass verb, "+
			"still vetoed while the provider answers or in a storm; the gate writes the confirmation, a reason and the stamps, and emits "+
			"an Event). Empty (the default): nobody's, since no released Liqo (up to v1.2.0) marks ForeignClusters when it uninstalls; "+
			"for a Liqo whose force uninstall does, name its pre-delete Job's ServiceAccount, system:serviceaccount:<--liqo-namespace>:"+
			liqojanitor.LiqoPreDeleteServiceAccount+".")
	fs.DurationVar(&o.minUnreachable, "min-unreachable", webhook.DefaultMinUnreachable,
		"How long a ForeignCluster's APIServerStatus must have been not Established before it may be marked dead.")
	fs.IntVar(&o.storm.MinUnreachable, "storm-min-unreachable", liqojanitor.DefaultStormMinUnreachable,
		"Storm guard: how many of this consumer's providers must be unreachable by Liqo's evidence at once (the one being marked "+
			"counted), together with more than --storm-max-unreachable-share of them, for a mark to need the count acknowledged "+
			"(liqo-janitor.io/acknowledge-unreachable, gate rule 21): so many at once is more likely this cluster's own partition. "+
			"0 turns the guard off.")
	fs.IntVar(&o.storm.MaxSharePercent, "storm-max-unreachable-share", liqojanitor.DefaultStormMaxUnreachableShare,
		"Storm guard: the share of this consumer's providers, in percent (0 to 100), that must be exceeded, with at least "+
			"--storm-min-unreachable of them, for a storm.")
	fs.DurationVar(&o.probeTimeout, "probe-timeout", webhook.DefaultProbeTimeout,
		"How long the gate's own probe of a provider's API server (an unauthenticated GET /readyz at the https URLs Liqo wrote in the ForeignCluster's status) may take before a mark is accepted; an answer vetoes the mark. 0 turns the probe off. At most 3s (the webhook's timeout is 5s)")
	fs.DurationVar(&o.gracePeriod, "grace-period", janitor.DefaultGracePeriod,
		"How long after a cluster is marked dead the janitor waits before releasing anything (the window to undo a mistake).")
	fs.DurationVar(&o.returnProbe, "return-probe-interval", janitor.DefaultReturnProbeInterval,
		"How often the janitor probes the providers of marked ForeignClusters (the same unauthenticated GET /readyz as the gate's, bounded by --probe-timeout or 2s), to report one that answers again (ProviderReturned) and stop releasing for it; marked clusters only. 0 turns the probe off (Liqo's APIServerStatus turning Established still counts); at least 1s otherwise.")
	fs.DurationVar(&o.fabricSettle, "fabric-settle", janitor.DefaultFabricSettle,
		"On Liqo before v1.2.0: how long an InternalFabric of a dead cluster, in its tenant namespace being deleted, must have been deleting before the janitor removes the legacy internalfabric-controller.liqo.io/finalizer Liqo's fabric still holds (Liqo v1.2.0 removes it at once by itself). At least 1s.")
	fs.BoolVar(&o.dryRun, "dry-run", false,
		"Report what the janitor would release through events and logs, and write nothing else.")
	fs.BoolVar(&o.releaseSecrets, "release-identity-secrets", false,
		"Also release a dead cluster's control-plane identity Secret (crdreplicator.liqo.io/operator; needed on Liqo v1.0.x). "+
			"Needs RBAC on Secrets from the opt-in kustomize component.")
	fs.BoolVar(&o.objectEvents, "object-events", false,
		"Also emit an Event on every object the janitor releases (the ForeignCluster gets one per kind per pass, with counts, and the logs record every release).")
	fs.BoolVar(&o.objectEvents, "pod-events", false, "Deprecated: use --object-events.")
	fs.IntVar(&o.workers, "janitor-workers", janitor.DefaultWorkers,
		"How many writes the janitor sends concurrently while releasing a dead cluster's objects.")
	fs.Float64Var(&o.kubeAPIQPS, "kube-api-qps", janitor.DefaultClientQPS,
		"Client-side queries per second towards the API server (high by default: the API server should be the limit).")
	fs.IntVar(&o.kubeAPIBurst, "kube-api-burst", janitor.DefaultClientBurst,
		"Client-side burst towards the API server.")
	o.certs.bindFlags(fs)
	o.zap.BindFlags(fs)
}

func (o *options) validate() error {
	errs := o.validateDurations()
	if err := o.resolveNamespace(); err != nil {
		errs = append(errs, err)
	}
	if err := o.certs.resolve(o.enableWebhook, o.namespace); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, o.validateStorm()...)
	if o.workers <= 0 {
		errs = append(errs, fmt.Errorf("--janitor-workers must be positive, got %d", o.workers))
	}
	if o.kubeAPIQPS <= 0 || o.kubeAPIBurst <= 0 {
		errs = append(errs, errors.New("--kube-api-qps and --kube-api-burst must be positive"))
	}
	if o.retry <= 0 || o.renew <= o.retry || o.lease <= o.renew {
		errs = append(errs, fmt.Errorf("leader election needs --leader-election-lease-duration (%s) > --leader-election-renew-deadline (%s) "+
			"> --leader-election-retry-period (%s) > 0", o.lease, o.renew, o.retry))
	}
	errs = append(errs, o.validateMode()...)
	if o.enableProviderFence {
		if err := fenceOptions(o).Default().Validate(); err != nil {
			errs = append(errs, err)
		}
	} else if o.namespace != "" { // without it, resolveNamespace has said so, naming the flag
		if err := gateOptions(o).Default().Validate(); err != nil {
			errs = append(errs, err)
		}
		if err := renewOptions(o).Default().Validate(); o.enableJanitor && err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// validateMode checks what the process runs: the gate and/or the janitor, or the provider fence alone.
func (o *options) validateMode() []error {
	switch {
	case o.enableProviderFence && (o.enableWebhook || o.enableJanitor):
		return []error{errors.New("--enable-provider-fence runs the provider fence alone, in a Deployment of its own: " +
			"add --enable-webhook=false --enable-janitor=false (the chart's providerFence.enabled does)")}
	case o.enableProviderFence:
		return nil
	case !o.enableWebhook && !o.enableJanitor:
		return []error{errors.New("nothing to run: --enable-webhook and --enable-janitor are both false (and --enable-provider-fence is not set)")}
	}
	return nil
}

// fenceOptions are the provider fence's settings, with the leader election's timings for its failover bound.
func fenceOptions(o *options) providerfence.Options {
	f := o.fence
	f.LiqoNamespace = o.liqoNamespace
	f.Version, _, _ = buildVersions(version, revision)
	if o.leaderElect {
		f.LeaseDuration, f.RetryPeriod = o.lease, o.retry
	}
	return f
}

// resolveNamespace sets the janitor's own namespace: --namespace, else the pod's. The janitor's safety
// lives there (janitor rules 14, 16, 17: the brake, the kept probe targets and returns), and the gate reads
// the kept returns there, so out of a cluster without --namespace the binary refuses to start rather than
// run with them quietly off. --leader-election-namespace defaults to it.
func (o *options) resolveNamespace() error {
	if o.namespace == "" {
		if data, err := os.ReadFile(inClusterNamespaceFile); err == nil {
			o.namespace = strings.TrimSpace(string(data))
		}
	}
	if o.namespace == "" {
		return fmt.Errorf("--namespace is required out of a cluster (there is no %s to take the pod's namespace from): "+
			"the janitor keeps its records, its brake and its leader-election Lease there, and must not run without them; "+
			"name the namespace liqo-janitor is installed in, e.g. --namespace=liqo-janitor-system", inClusterNamespaceFile)
	}
	if o.leaderElectNS == "" {
		o.leaderElectNS = o.namespace
	}
	return nil
}

// validateDurations checks the gate's and the janitor's timings.
func (o *options) validateDurations() []error {
	var errs []error
	if o.probeTimeout < 0 || o.probeTimeout > 3*time.Second {
		errs = append(errs, fmt.Errorf("--probe-timeout must be between 0 (off) and 3s, inside the webhook's 5s timeout, got %s", o.probeTimeout))
	}
	if o.minUnreachable < 0 {
		errs = append(errs, fmt.Errorf("--min-unreachable must not be negative, got %s", o.minUnreachable))
	}
	if o.gracePeriod < 0 {
		errs = append(errs, fmt.Errorf("--grace-period must not be negative, got %s", o.gracePeriod))
	}
	if o.fabricSettle < time.Second {
		errs = append(errs, fmt.Errorf("--fabric-settle must be at least 1s (Liqo's fabric releases the finalizer itself when it can), got %s", o.fabricSettle))
	}
	if o.returnProbe != 0 && o.returnProbe < time.Second {
		errs = append(errs, fmt.Errorf("--return-probe-interval must be 0 (off) or at least 1s (it probes every marked cluster's provider), got %s", o.returnProbe))
	}
	return errs
}

// validateStorm checks the storm guard's flags.
func (o *options) validateStorm() []error {
	var errs []error
	if o.storm.MinUnreachable < 0 {
		errs = append(errs, fmt.Errorf("--storm-min-unreachable must be 0 (off) or a number of providers, got %d", o.storm.MinUnreachable))
	}
	if o.storm.MaxSharePercent < 0 || o.storm.MaxSharePercent > 100 {
		errs = append(errs, fmt.Errorf("--storm-max-unreachable-share is a percentage, between 0 and 100, got %d", o.storm.MaxSharePercent))
	}
	return errs
}

func main() {
	var o options
	o.bindFlags(flag.CommandLine)
	flag.Usage = usage
	flag.Parse()
	ctrl.SetLogger(newLogger(o.zap))
	if err := run(ctrl.SetupSignalHandler(), &o); err != nil {
		ctrl.Log.Error(err, "liqo-janitor stopped")
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintf(flag.CommandLine.Output(), `liqo-janitor guards and cleans up after Liqo providers that are gone for good.

It serves an admission webhook that makes marking a ForeignCluster permanently unreachable a confirmed,
authorised and audited act, and runs a janitor that then releases the objects such a provider leaves stuck.

Usage: liqo-janitor [flags]

Flags:
`)
	flag.PrintDefaults()
}

func run(ctx context.Context, o *options) error {
	if err := o.validate(); err != nil {
		return err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig (set --kubeconfig or run in a cluster): %w", err)
	}
	cfg.QPS, cfg.Burst = float32(o.kubeAPIQPS), o.kubeAPIBurst

	cm := newCertManager(o)
	mgr, err := ctrl.NewManager(cfg, managerOptions(o, servingTLS(cm)))
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if err := addCertManager(mgr, cm); err != nil {
		return err
	}
	if err := addProbes(mgr, o, cm); err != nil {
		return err
	}
	if err := setupGate(ctx, mgr, o); err != nil {
		return err
	}
	if err := setupJanitor(ctx, mgr, o); err != nil {
		return err
	}
	if o.enableProviderFence {
		if err := providerfence.Setup(mgr, fenceOptions(o)); err != nil {
			return fmt.Errorf("setting up the provider fence: %w", err)
		}
		ctrl.Log.Info("Starting liqo-janitor's provider fence", "namespace", o.namespace, "liqoNamespace", o.liqoNamespace,
			"poll", o.fence.Poll, "graceCap", o.fence.GraceCap)
		return mgr.Start(ctx)
	}
	ctrl.Log.Info("Starting liqo-janitor", "webhook", o.enableWebhook, "janitor", o.enableJanitor,
		"certManagement", o.certs.mode, "namespace", o.namespace, "liqoNamespace", o.liqoNamespace,
		"liqoUninstallers", gateOptions(o).Default().LiqoUninstallerUsers, "minUnreachable", o.minUnreachable, "gracePeriod", o.gracePeriod, "dryRun", o.dryRun)
	return mgr.Start(ctx)
}

// managerOptions are the manager's; webhookTLS are more TLS options for the webhook server alone.
func managerOptions(o *options, webhookTLS []func(*tls.Config)) ctrl.Options {
	var tlsOpts []func(*tls.Config)
	if !o.enableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	return ctrl.Options{
		Scheme:                 liqojanitor.NewScheme(),
		Metrics:                metricsOptions(o, append(slices.Clone(tlsOpts), webhookTLS...)),
		HealthProbeBindAddress: o.probeAddr,
		PprofBindAddress:       o.pprofAddr,
		// Only the janitor needs the Lease: a replica that runs the gate alone (--enable-janitor=false,
		// e.g. in a Deployment of its own) must not take the Lease a janitor replica waits for.
		LeaderElection:          o.leaderElect && (o.enableJanitor || o.enableProviderFence),
		LeaderElectionID:        electionID(o),
		LeaderElectionNamespace: o.leaderElectNS,
		LeaseDuration:           &o.lease,
		RenewDeadline:           &o.renew,
		RetryPeriod:             &o.retry,
		// A replica that stops hands the Lease over at once (the standby need not wait a lease duration).
		LeaderElectionReleaseOnCancel: true,
		WebhookServer: crwebhook.NewServer(crwebhook.Options{
			Port: o.webhookPort, CertDir: o.webhookCertDir, TLSOpts: append(slices.Clone(tlsOpts), webhookTLS...),
		}),
		Cache: cache.Options{
			// The gate reads exactly one ConfigMap (the local cluster ID) in the Liqo namespace; never cache
			// ConfigMaps cluster-wide.
			ByObject: cacheByObject(o),
		},
	}
}

// electionID is the Lease the process's replicas compete for.
func electionID(o *options) string {
	if o.enableProviderFence {
		return providerFenceElectionID
	}
	return leaderElectionID
}

// cacheByObject narrows every cache the gate and the janitor use (see their CacheByObject).
func cacheByObject(o *options) map[client.Object]cache.ByObject {
	byObject := webhook.CacheByObject(gateOptions(o))
	maps.Copy(byObject, janitor.CacheByObject(janitorOptions(o)))
	return byObject
}

func setupGate(ctx context.Context, mgr ctrl.Manager, o *options) error {
	if !o.enableWebhook {
		return nil
	}
	if err := webhook.Setup(ctx, mgr, gateOptions(o)); err != nil {
		return fmt.Errorf("setting up the webhook: %w", err)
	}
	return nil
}

func gateOptions(o *options) webhook.Options {
	return webhook.Options{LiqoNamespace: o.liqoNamespace, MinUnreachable: o.minUnreachable, ProbeTimeout: o.probeTimeout,
		LiqoUninstallerUsers: o.liqoUninstallers.value(), Storm: o.storm, Namespace: o.namespace}
}

// userList is a comma-separated list of usernames; not set or empty, nobody.
type userList struct {
	users []string
}

func (l *userList) String() string { return strings.Join(l.users, ",") }

func (l *userList) Set(v string) error {
	l.users = nil
	for u := range strings.SplitSeq(v, ",") {
		if u = strings.TrimSpace(u); u != "" {
			l.users = append(l.users, u)
		}
	}
	return nil
}

// value is the list for webhook.Options.
func (l *userList) value() []string { return l.users }

func janitorOptions(o *options) janitor.Options {
	return janitor.Options{
		GracePeriod: o.gracePeriod, DryRun: o.dryRun, ReleaseIdentitySecrets: o.releaseSecrets, Workers: o.workers,
		ObjectEvents: o.objectEvents, ReturnProbeInterval: o.returnProbe, ProbeTimeout: o.probeTimeout,
		LiqoNamespace: o.liqoNamespace, FabricSettle: o.fabricSettle, Namespace: o.namespace, Storm: o.storm,
	}
}

func setupJanitor(ctx context.Context, mgr ctrl.Manager, o *options) error {
	if !o.enableJanitor {
		return nil
	}
	if err := janitor.Setup(ctx, mgr, janitorOptions(o)); err != nil {
		return fmt.Errorf("setting up the janitor: %w", err)
	}
	if err := fencerenew.Setup(mgr, renewOptions(o)); err != nil {
		return fmt.Errorf("setting up the fence renewer: %w", err)
	}
	return nil
}

// renewOptions are the fence renewer's (janitor/fencerenew): it runs with the janitor, on its leader.
func renewOptions(o *options) fencerenew.Options {
	return fencerenew.Options{Namespace: o.namespace, LiqoNamespace: o.liqoNamespace, Interval: o.fenceRenew}
}

func addProbes(mgr ctrl.Manager, o *options, cm *certs.Manager) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding healthz check: %w", err)
	}
	ready := healthz.Ping
	if o.enableWebhook {
		// Ready only once the webhook server is serving TLS, so no admission call hits a cold replica (and,
		// with --cert-management=self, once what it serves verifies against the injected bundle).
		ready = readyChecker(mgr.GetWebhookServer().StartedChecker(), cm)
	}
	if err := mgr.AddReadyzCheck("readyz", ready); err != nil {
		return fmt.Errorf("adding readyz check: %w", err)
	}
	return nil
}
