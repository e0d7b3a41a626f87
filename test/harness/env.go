package harness

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// Options says what a test package needs from its control plane.
type Options struct {
	// WebhookPaths are files or directories of MutatingWebhookConfigurations and
	// ValidatingWebhookConfigurations (normally the generated ones under manifests/) that envtest registers
	// with the API server, rewritten to call the local webhook server described by Env.WebhookOptions.
	WebhookPaths []string
	// GeneratedWebhooks also registers the configurations `make manifests` generates from the gate's
	// markers (GeneratedWebhooksFile), as WebhookPaths would: what the gate's tests, the binary's and the
	// plugin's run against.
	GeneratedWebhooks bool
	// ControllerManager also starts kube-controller-manager (namespace and garbage-collector controllers),
	// for tests that need namespace deletion or owner-reference garbage collection to really happen.
	ControllerManager bool
	// LiqoVersion installs the CRDs of that Liqo release (e.g. "v1.0.3", read from its module, which the
	// module proxy serves) instead of those of the pinned one: a behaviour that differs by Liqo version is
	// tested against each supported version's own CRDs (SupportedLiqoVersions).
	LiqoVersion string
	// Detached lets kube-controller-manager and the binary of StartBinary outlive this process (`make demo
	// KEEP=1`); by default they die with it. What they need then (kubeconfig, logs, the built binaries)
	// lives in a directory under the checkout's bin/ rather than the system's temporary directory, where
	// `make demo-stop` finds what to stop and removes it.
	Detached bool
	// ServiceRouting makes the API server call a webhook configured with a Service at an endpoint of the
	// Service's EndpointSlices (kube-apiserver --enable-aggregator-routing, which sets the resolver of
	// webhooks too: buildServiceResolver in Kubernetes' cmd/kube-apiserver/app/server.go) rather than at its ClusterIP,
	// which leads nowhere without kube-proxy: a chart's webhook configurations and Service, unchanged, then
	// reach a process on this machine through ServiceRoute.
	ServiceRouting bool
	// AdvertiseAddress makes the control plane one that runs pods on a real node (the node lane,
	// test/e2e/node): the API server listens on this address of the machine, advertises it as the
	// kubernetes Service's endpoint, serves a certificate valid for that Service's ClusterIP and admits pods
	// with their ServiceAccount's token; kube-controller-manager, if started, runs all its default
	// controllers (Deployments, EndpointSlices, disruption budgets, the kube-root-ca.crt ConfigMap).
	AdvertiseAddress string
}

// dirPrefix begins the name of every Env's directory (kubeconfig, logs, built binaries); `make demo-stop`
// matches it under bin/ to find what a Detached Env left running.
const dirPrefix = liqojanitor.Name + "-harness-"

// Env is a running control plane.
type Env struct {
	// onStop runs first in Stop (a paused API server resumed).
	onStop []func() error
	// Config is an admin rest.Config for the API server.
	Config *rest.Config
	// Client is a client for Config that knows Kubernetes and Liqo types (uncached).
	Client client.Client
	// Scheme is the scheme Client uses.
	Scheme *runtime.Scheme
	// KubeconfigPath is an admin kubeconfig file for the API server, e.g. for kubectl or a child process.
	KubeconfigPath string
	// Root is the repository root.
	Root string

	env       *envtest.Environment
	kcm       *controllerManager
	dir       string
	pkiDir    string // the API server's certificates, for Options.AdvertiseAddress
	detached  bool
	keepFiles bool

	// services are the background processes of the test package (managers, webhook servers), stopped
	// before the control plane so none of them outlives its API server or certificate directory.
	ctx      context.Context //nolint:containedctx // the lifetime of Go services, cancelled by Stop
	cancel   context.CancelFunc
	services sync.WaitGroup
	mu       sync.Mutex // guards errs, binaries and denials
	errs     []error
	binaries map[string]*built
	// denials are the RBAC refusals of the product's ServiceAccount seen (recordDenials).
	denials map[string]bool

	// installOnce applies the rendered install's RBAC once (DefaultInstall); install and installErr are
	// what it gave.
	installOnce sync.Once
	install     *Install
	installErr  error
	// fenceInstallOnce does it for the provider fence's install (ProviderFenceInstall).
	fenceInstallOnce sync.Once
	fenceInstall     *Install
	fenceInstallErr  error
	// identitySecretsOnce applies the identity-Secrets component's RBAC once (InstallIdentitySecrets).
	identitySecretsOnce sync.Once
	identitySecretsErr  error
}

// Start brings up etcd and kube-apiserver (and kube-controller-manager if asked), installs the Liqo CRDs
// and registers the given webhook configurations. Call Stop when done.
func Start(opts Options) (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	bins, err := binaryDir(root)
	if err != nil {
		return nil, err
	}
	crds, err := LiqoCRDDir(root)
	if opts.LiqoVersion != "" {
		crds, err = LiqoCRDDirOf(opts.LiqoVersion)
	}
	if err != nil {
		return nil, err
	}
	e := &Env{Root: root, Scheme: liqojanitor.NewScheme(), detached: opts.Detached, binaries: map[string]*built{}}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	webhooks := slices.Clone(opts.WebhookPaths)
	if opts.GeneratedWebhooks {
		webhooks = append(webhooks, filepath.Join(root, GeneratedWebhooksFile))
	}
	e.env = &envtest.Environment{
		BinaryAssetsDirectory: bins,
		CRDDirectoryPaths:     []string{crds},
		ErrorIfCRDPathMissing: true,
		Scheme:                e.Scheme,
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: webhooks},
	}
	// envtest gives etcd and kube-apiserver 20 s each to start, which a machine of two cores busy with other
	// test packages (and the builds of their binaries) can exceed; KUBEBUILDER_CONTROLPLANE_START_TIMEOUT
	// still decides when set.
	if os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT") == "" {
		e.env.ControlPlaneStartTimeout = time.Minute
	}
	if opts.ServiceRouting {
		e.env.ControlPlane.GetAPIServer().Configure().Set("enable-aggregator-routing", "true")
	}
	if opts.AdvertiseAddress != "" {
		e.pkiDir, err = servePods(e.env, opts.AdvertiseAddress)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("preparing an API server for pods: %w", err), os.RemoveAll(e.pkiDir))
		}
	}
	if e.Config, err = e.env.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("starting envtest (binaries %s, Liqo CRDs %s): %w", bins, crds, err),
			e.removePKI())
	}
	if err := e.afterStart(opts); err != nil {
		return nil, errors.Join(err, e.Stop())
	}
	return e, nil
}

func (e *Env) afterStart(opts Options) error {
	var err error
	if e.Client, err = client.New(e.Config, client.Options{Scheme: e.Scheme}); err != nil {
		return fmt.Errorf("creating the client: %w", err)
	}
	parent := "" // the system's temporary directory
	if opts.Detached {
		parent = filepath.Join(e.Root, "bin")
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return err
		}
	}
	if e.dir, err = os.MkdirTemp(parent, dirPrefix); err != nil {
		return err
	}
	e.KubeconfigPath = filepath.Join(e.dir, "kubeconfig")
	if err := os.WriteFile(e.KubeconfigPath, e.env.KubeConfig, 0o600); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	if opts.ControllerManager {
		controllers := []string{"--controllers=namespace-controller,garbage-collector-controller"}
		if opts.AdvertiseAddress != "" {
			controllers = []string{"--controllers=*",
				"--service-account-private-key-file=" + filepath.Join(e.pkiDir, saSignerKeyFile),
				"--root-ca-file=" + filepath.Join(e.pkiDir, caFile)}
		}
		if e.kcm, err = startControllerManager(filepath.Join(e.env.BinaryAssetsDirectory, "kube-controller-manager"),
			e.KubeconfigPath, e.dir, opts.Detached, controllers); err != nil {
			return err
		}
	}
	return nil
}

// removePKI removes the certificate directory of Options.AdvertiseAddress, if any.
func (e *Env) removePKI() error {
	if e.pkiDir == "" {
		return nil
	}
	return os.RemoveAll(e.pkiDir)
}

// Go runs a background service of the test package, such as a manager or a webhook server, until Stop.
// The service must return when ctx is cancelled; an error it returns then fails Stop.
func (e *Env) Go(service func(ctx context.Context) error) {
	e.services.Go(func() {
		if err := service(e.ctx); err != nil {
			e.mu.Lock()
			e.errs = append(e.errs, err)
			e.mu.Unlock()
		}
	})
}

// Stop stops the services started with Go, then every process Start started, and removes its temporary
// files.
func (e *Env) Stop() error {
	for _, f := range e.onStop {
		e.errs = append(e.errs, f())
	}
	e.cancel()
	e.services.Wait()
	errs := e.errs
	if e.kcm != nil {
		errs = append(errs, e.kcm.stop())
	}
	errs = append(errs, e.env.Stop())
	if e.dir != "" && !e.keepFiles {
		errs = append(errs, os.RemoveAll(e.dir), e.removePKI())
	}
	return errors.Join(errs...)
}

// KeepFiles makes Stop leave the temporary files (kubeconfig, logs) in place, e.g. to read the logs of a
// failed run.
func (e *Env) KeepFiles() { e.keepFiles = true }

// ControllerManagerLog returns the path of kube-controller-manager's log, or "" if it was not started.
func (e *Env) ControllerManagerLog() string {
	if e.kcm == nil {
		return ""
	}
	return e.kcm.logPath
}

// WebhookOptions are the options for a webhook server that the API server calls for the configurations
// registered through Options.WebhookPaths (host, port and a certificate the API server trusts).
func (e *Env) WebhookOptions() webhook.Options {
	wo := e.env.WebhookInstallOptions
	return webhook.Options{Host: wo.LocalServingHost, Port: wo.LocalServingPort, CertDir: wo.LocalServingCertDir}
}

// WaitForWebhookServer blocks until the webhook server of WebhookOptions accepts TLS connections, so that
// no request with failurePolicy Fail reaches it before it listens.
func (e *Env) WaitForWebhookServer(ctx context.Context) error {
	wo := e.env.WebhookInstallOptions
	addr := net.JoinHostPort(wo.LocalServingHost, strconv.Itoa(wo.LocalServingPort))
	dialer := &tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // a reachability probe only
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		conn, err := dialer.DialContext(ctx, "tcp", addr)
		if err != nil {
			return false, nil //nolint:nilerr // not listening yet: poll again
		}
		return true, conn.Close()
	})
}

// Namespace creates a fresh namespace for one test and deletes it when the test ends (it only really
// disappears when kube-controller-manager runs; a terminating namespace left behind is harmless).
func (e *Env) Namespace(tb testing.TB) string {
	tb.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		tb.Fatalf("creating a test namespace: %v", err)
	}
	tb.Cleanup(func() { _ = e.Client.Delete(context.Background(), ns) })
	return ns.Name
}

// NeedsAPIServer is the message a test that needs the control plane skips with in the unit lane.
const NeedsAPIServer = "needs the API server: run make test"

// lane is the control plane of the test package whose TestMain called Run: started by the first Require,
// stopped by Run once the tests are done.
type lane struct {
	opts  Options
	ready func(*Env) error
	once  sync.Once
	env   *Env
	err   error
}

// pkgLane is set by Run before any test runs and read by Require from the tests' goroutines.
var pkgLane *lane

// Run is a TestMain body: it runs the tests, then stops the control plane if one of them started it
// (Require) and fails the run if any controller-runtime reconciler or webhook panicked, or if the API
// server refused the install's ServiceAccount anything by RBAC (RBACDenials). It returns the exit code
// for os.Exit.
//
// The control plane starts on the first Require, not here, so that a package's pure tests never wait for
// etcd: `go test -run TestDecide ./webhook` starts nothing, nor does a fuzz worker. Started, it is handed
// to ready, if not nil (which typically installs what the package's tests share, or starts managers or
// webhook servers), before Require returns it.
func Run(m *testing.M, opts Options, ready func(*Env) error) int {
	logf.SetLogger(testLogger())
	l := &lane{opts: opts, ready: ready}
	pkgLane = l
	code := m.Run()
	// Once more through the Once, so that reading env here happens after a start in a test's goroutine.
	l.once.Do(func() {})
	if l.env != nil {
		if err := l.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "harness: stopping the control plane:", err)
		}
	}
	if err := CheckPanics(); err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		code = 1
	}
	if err := l.checkDenials(); err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		code = 1
	}
	return code
}

// checkDenials returns an error if the API server refused the product's ServiceAccount anything by RBAC
// (RBACDenials): the code needs a permission the chart does not grant, even where no test's assertion
// noticed (a refused Event, a watch retried in the background).
func (l *lane) checkDenials() error {
	if l.env == nil {
		return nil
	}
	if d := l.env.RBACDenials(); len(d) > 0 {
		return fmt.Errorf("the API server refused the install's ServiceAccount what the code asked for: grant it in the chart "+
			"(RBAC markers or manifests/chart/liqo-janitor/templates, then make manifests), or, in a namespace a test gave "+
			"the janitor as its own, grant it there as in the release namespace (Env.OwnNamespace):\n  %s", strings.Join(d, "\n  "))
	}
	return nil
}

// Require returns the test package's control plane, starting it (and running Run's ready) on the first
// call; every test that needs the API server gets its Env this way, so none can forget to skip in the unit
// lane: under `go test -short` (make test-unit) Require skips the test with NeedsAPIServer instead. A
// control plane that did not start fails every test that requires it, with the reason. A benchmark calls
// it before it times anything (the start itself is not timed).
func Require(tb testing.TB) *Env {
	tb.Helper()
	if testing.Short() {
		tb.Skip(NeedsAPIServer)
	}
	l := pkgLane
	if l == nil {
		tb.Fatal("harness.Require: the test package's TestMain does not call harness.Run")
	}
	l.once.Do(func() {
		if b, ok := tb.(*testing.B); ok { // the start is not what a benchmark measures
			b.StopTimer()
			defer b.StartTimer()
		}
		l.start()
	})
	if l.err != nil {
		tb.Fatalf("harness: %v", l.err)
	}
	return l.env
}

func (l *lane) start() {
	env, err := Start(l.opts)
	if err != nil {
		l.err = err
		return
	}
	l.env = env // stopped by Run even if ready fails
	if l.ready == nil {
		return
	}
	if err := l.ready(env); err != nil {
		l.err = fmt.Errorf("setting up the test package: %w", err)
	}
}

// testLogger logs errors only, unless HARNESS_LOG=debug asks for everything (to read a failing test's story).
func testLogger() logr.Logger {
	opts := zap.Options{Development: true, DestWriter: os.Stderr}
	if os.Getenv("HARNESS_LOG") != "debug" {
		opts.Level = zapcore.ErrorLevel
	}
	return zap.New(zap.UseFlagOptions(&opts))
}

// NewClient returns a client for a copy of Config changed by configure, e.g. to impersonate a user
// (cfg.Impersonate) or to record the API server's warnings (cfg.WarningHandlerWithContext).
func (e *Env) NewClient(configure func(cfg *rest.Config)) (client.Client, error) {
	cfg := rest.CopyConfig(e.Config)
	configure(cfg)
	return client.New(cfg, client.Options{Scheme: e.Scheme})
}

// WarningRecorder collects the warnings the API server returns (admission webhook warnings among them).
type WarningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

// HandleWarningHeaderWithContext implements rest.WarningHandlerWithContext.
func (w *WarningRecorder) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

// Warnings returns the warnings recorded so far.
func (w *WarningRecorder) Warnings() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.warnings...)
}
