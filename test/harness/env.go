package harness

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
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
	// ControllerManager also starts kube-controller-manager (namespace and garbage-collector controllers),
	// for tests that need namespace deletion or owner-reference garbage collection to really happen.
	ControllerManager bool
	// Detached lets kube-controller-manager and the binary of StartBinary outlive this process (`make demo
	// KEEP=1`); by default they die with it.
	Detached bool
}

// Env is a running control plane.
type Env struct {
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
	detached  bool
	keepFiles bool

	// services are the background processes of the test package (managers, webhook servers), stopped
	// before the control plane so none of them outlives its API server or certificate directory.
	ctx      context.Context //nolint:containedctx // the lifetime of Go services, cancelled by Stop
	cancel   context.CancelFunc
	services sync.WaitGroup
	mu       sync.Mutex
	errs     []error
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
	if err != nil {
		return nil, err
	}
	e := &Env{Root: root, Scheme: liqojanitor.NewScheme(), detached: opts.Detached}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	e.env = &envtest.Environment{
		BinaryAssetsDirectory: bins,
		CRDDirectoryPaths:     []string{crds},
		ErrorIfCRDPathMissing: true,
		Scheme:                e.Scheme,
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: opts.WebhookPaths},
	}
	if e.Config, err = e.env.Start(); err != nil {
		return nil, fmt.Errorf("starting envtest (binaries %s, Liqo CRDs %s): %w", bins, crds, err)
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
	if e.dir, err = os.MkdirTemp("", "liqo-janitor-harness-"); err != nil {
		return err
	}
	e.KubeconfigPath = filepath.Join(e.dir, "kubeconfig")
	if err := os.WriteFile(e.KubeconfigPath, e.env.KubeConfig, 0o600); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	if opts.ControllerManager {
		if e.kcm, err = startControllerManager(filepath.Join(e.env.BinaryAssetsDirectory, "kube-controller-manager"),
			e.KubeconfigPath, e.dir, opts.Detached); err != nil {
			return err
		}
	}
	return nil
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
	e.cancel()
	e.services.Wait()
	errs := e.errs
	if e.kcm != nil {
		errs = append(errs, e.kcm.stop())
	}
	errs = append(errs, e.env.Stop())
	if e.dir != "" && !e.keepFiles {
		errs = append(errs, os.RemoveAll(e.dir))
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

// Run is a TestMain body: it starts the control plane, hands it to ready (which typically stores it and
// starts managers or webhook servers), runs the tests, stops everything and fails the run if any
// controller-runtime reconciler or webhook panicked. It returns the exit code for os.Exit.
//
// When the package is being fuzzed (go test -fuzz), Run starts nothing: fuzz targets are pure, and each fuzz
// worker process would otherwise start a control plane of its own.
func Run(m *testing.M, opts Options, ready func(*Env) error) int {
	logf.SetLogger(testLogger())
	flag.Parse()
	if fuzzing() {
		return m.Run()
	}
	env, err := Start(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		return 1
	}
	code := 1
	if err := ready(env); err != nil {
		fmt.Fprintln(os.Stderr, "harness: setting up the test package:", err)
	} else {
		code = m.Run()
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "harness: stopping the control plane:", err)
	}
	if err := CheckPanics(); err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		code = 1
	}
	return code
}

func fuzzing() bool {
	f := flag.Lookup("test.fuzz")
	return f != nil && f.Value.String() != ""
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
