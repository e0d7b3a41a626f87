package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

func main() {
	binary := flag.String("binary", "bin/liqo-janitor", "the liqo-janitor binary to run")
	keep := flag.Bool("keep", false, "leave the control plane and liqo-janitor running at the end, to explore with kubectl")
	pods := flag.Int("pods", 400, "offloaded pods per provider")
	grace := flag.Duration("grace-period", 5*time.Second, "liqo-janitor's --grace-period")
	flag.Parse()
	logf.SetLogger(logr.Discard())

	d := &demo{out: newScreen(os.Stdout), binary: *binary, keep: *keep, pods: *pods, grace: *grace}
	// Ctrl-C (or a closed terminal) stops the story, and the teardown below still runs; output piped into
	// a reader that quits early (| head) must not kill the demo before its teardown either.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	start := time.Now()
	err := d.run(ctx)
	if err != nil {
		d.out.fail(err, d.logs())
	}
	if !d.keep || err != nil {
		d.teardown()
	}
	if err != nil {
		os.Exit(1)
	}
	d.out.line("")
	d.out.line(fmt.Sprintf("Demo finished in %s.", time.Since(start).Round(100*time.Millisecond)))
	if d.keep {
		d.out.kept(d.env.KubeconfigPath)
	}
}

// demo holds the running pieces.
type demo struct {
	out    *screen
	binary string
	keep   bool
	pods   int
	grace  time.Duration

	env     *harness.Env
	janitor *exec.Cmd
	logDir  string
	cons    *fixture.Consumer
	before  map[string]string // resourceVersions of the live providers' objects
	marked  time.Time
}

func (d *demo) run(ctx context.Context) error {
	d.out.title("liqo-janitor demo: a Liqo consumer loses one of its three providers")
	steps := []struct {
		name string
		do   func(context.Context) error
	}{
		{"Starting a local control plane", d.startControlPlane},
		{"Starting liqo-janitor (gate + janitor)", d.startJanitor},
		{"Laying out a consumer peered with three providers", d.layout},
		{"A provider dies", d.killProvider},
		{"Declaring it dead", d.declare},
		{"The janitor at work", d.watchJanitor},
		{"Result", d.result},
	}
	for i, s := range steps {
		d.out.step(i+1, len(steps), s.name)
		if err := s.do(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return nil
}

func (d *demo) startControlPlane(context.Context) error {
	root, err := harness.RepoRoot()
	if err != nil {
		return err
	}
	t0 := time.Now()
	d.env, err = harness.Start(harness.Options{
		WebhookPaths:      []string{filepath.Join(root, "manifests", "webhook")},
		ControllerManager: true,
		Detached:          d.keep,
	})
	if err != nil {
		return err
	}
	d.out.done(fmt.Sprintf("etcd, kube-apiserver, kube-controller-manager v1.37.2 up in %s",
		time.Since(t0).Round(100*time.Millisecond)))
	d.out.done("Liqo v1.2.0 CRDs installed; liqo-janitor's webhooks registered")
	return nil
}

func (d *demo) startJanitor(ctx context.Context) error {
	if err := installLiqoBasics(ctx, d.env); err != nil {
		return err
	}
	var err error
	if d.logDir, err = os.MkdirTemp("", "liqo-janitor-demo-"); err != nil {
		return err
	}
	probe, metrics := freeAddr(), freeAddr()
	wo := d.env.WebhookOptions()
	logFile, err := os.Create(filepath.Join(d.logDir, "liqo-janitor.log"))
	if err != nil {
		return err
	}
	d.janitor = exec.Command(d.binary, "--kubeconfig="+d.env.KubeconfigPath,
		"--webhook-port="+strconv.Itoa(wo.Port), "--webhook-cert-dir="+wo.CertDir,
		"--health-probe-bind-address="+probe, "--metrics-bind-address="+metrics,
		"--grace-period="+d.grace.String(), "--min-unreachable=60s", "--zap-log-level=info")
	d.janitor.Stdout, d.janitor.Stderr = logFile, logFile
	if !d.keep {
		d.janitor.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM} // never outlive the demo
	}
	if err := d.janitor.Start(); err != nil {
		return fmt.Errorf("starting %s (run `make build` first): %w", d.binary, err)
	}
	if err := waitReady(ctx, "http://"+probe+"/readyz"); err != nil {
		return err
	}
	d.out.done(fmt.Sprintf("liqo-janitor ready (pid %d, --grace-period=%s, --min-unreachable=60s)", d.janitor.Process.Pid, d.grace))
	d.out.done("local cluster ID \"" + localClusterID + "\"; user \"alice\" may mark clusters dead")
	return nil
}

func (d *demo) logs() []string {
	var out []string
	if d.logDir != "" {
		out = append(out, filepath.Join(d.logDir, "liqo-janitor.log"))
	}
	if d.env != nil && d.env.ControllerManagerLog() != "" {
		out = append(out, d.env.ControllerManagerLog())
	}
	return out
}

// teardown stops liqo-janitor and the control plane and removes temporary files (logs stay on failure).
func (d *demo) teardown() {
	if d.janitor != nil && d.janitor.Process != nil {
		_ = d.janitor.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = d.janitor.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = d.janitor.Process.Kill()
		}
	}
	if d.env != nil {
		if err := d.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}
	if d.logDir != "" && !d.out.failed {
		_ = os.RemoveAll(d.logDir)
	}
}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:0"
	}
	defer l.Close()
	return l.Addr().String()
}

func waitReady(ctx context.Context, url string) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil //nolint:nilerr // not listening yet
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return errors.New("liqo-janitor did not become ready within 60s")
	}
	return nil
}
