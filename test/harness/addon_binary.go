package harness

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// StartBinary runs the liqo-janitor binary (built from this checkout by Binary) against this control
// plane until Stop, serving the webhook configurations registered through Options.WebhookPaths, with the
// given extra flags; it returns once the binary reports ready. Its log is BinaryLog.
func (e *Env) StartBinary(args ...string) error {
	_, err := e.StartReplica("liqo-janitor", args...)
	return err
}

// Replica is one running liqo-janitor process started by StartReplica.
type Replica struct {
	// Name names the replica (its log file is <Name>.log in the harness directory).
	Name string
	// Probe and Metrics are the host:port of its health probes and of its Prometheus metrics.
	Probe, Metrics string
	// WebhookPort is the port its webhook server listens on.
	WebhookPort int
	// Log is the path of its log.
	Log string

	*process
}

// StartReplica runs one more liqo-janitor process named name until Stop, Kill or Terminate, as a pod of
// the rendered install would run (DefaultInstall, StartReplicaOf), with the given extra flags after the
// harness's own (a later flag wins, so args may override --webhook-port); it returns once the process
// reports ready (/readyz). Each replica has probe and metrics addresses of its own; by default its webhook
// server takes the port the registered configurations call.
func (e *Env) StartReplica(name string, args ...string) (*Replica, error) {
	inst, err := e.DefaultInstall()
	if err != nil {
		return nil, err
	}
	return e.StartReplicaOf(inst, name, args...)
}

// StartReplicaOf runs one more liqo-janitor process named name as a pod of inst would run: as its
// ServiceAccount (a token of the TokenRequest API), with its container's arguments and environment
// (Install.processEnv), but for what a process on this machine needs instead (replicaFlags), then the
// given extra flags. See StartReplica.
func (e *Env) StartReplicaOf(inst *Install, name string, args ...string) (*Replica, error) {
	binary, err := e.Binary("liqo-janitor")
	if err != nil {
		return nil, err
	}
	probe, err := FreeLocalAddr()
	if err != nil {
		return nil, err
	}
	metrics, err := FreeLocalAddr()
	if err != nil {
		return nil, err
	}
	wo := e.WebhookOptions()
	r := &Replica{Name: name, Probe: probe, Metrics: metrics, WebhookPort: wo.Port, Log: filepath.Join(e.dir, name+".log")}
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--webhook-port="); ok {
			if r.WebhookPort, err = strconv.Atoi(v); err != nil {
				return nil, fmt.Errorf("replica %s: %s: %w", name, a, err)
			}
		}
	}
	kubeconfig, err := e.ServiceAccountKubeconfig(inst.Namespace, inst.ServiceAccount)
	if err != nil {
		return nil, err
	}
	env, err := inst.processEnv(name)
	if err != nil {
		return nil, fmt.Errorf("replica %s: %w", name, err)
	}
	own := replicaFlags{kubeconfig: kubeconfig, webhookPort: wo.Port, webhookCertDir: wo.CertDir, probe: probe, metrics: metrics}
	cmd := exec.Command(binary, append(own.args(inst), args...)...)
	cmd.Env = append(os.Environ(), env...)
	if r.process, err = e.startProcess("replica "+name, r.Log, cmd); err != nil {
		return nil, err
	}
	// its log, once it has exited (Stop waits for this too), for the refusals of its ServiceAccount
	e.Go(func(context.Context) error {
		<-r.exited
		e.recordLogDenials(inst.User(), r.Log)
		return nil
	})
	if err := r.awaitReady(); err != nil {
		return nil, err
	}
	return r, nil
}

// awaitReady returns once the replica reports ready and its metrics server listens.
func (r *Replica) awaitReady() error {
	if err := waitHTTPOK(context.Background(), "http://"+r.Probe+"/readyz"); err != nil {
		return fmt.Errorf("replica %s did not become ready (log: %s): %w", r.Name, r.Log, err)
	}
	// controller-runtime starts the metrics server beside the probe server (both HTTPServers runnables),
	// so /readyz can answer before the metrics listener is bound: a scrape right after would be refused.
	if err := waitListening(context.Background(), r.Metrics); err != nil {
		return fmt.Errorf("replica %s: its metrics server did not listen on %s (log: %s): %w", r.Name, r.Metrics, r.Log, err)
	}
	return nil
}

// replicaFlags are the flags in which a replica differs from a pod of the install: what a process on this
// machine needs instead.
type replicaFlags struct {
	kubeconfig, webhookCertDir, probe, metrics string
	webhookPort                                int
}

// overridden are the flags of the Deployment's container the harness replaces, and why:
//
//   - --kubeconfig: a pod finds the API server and its ServiceAccount's token in its environment and
//     mounts; the process gets a kubeconfig with a token of the same ServiceAccount.
//   - --webhook-port, --webhook-cert-dir, --cert-management: a pod serves on the container port behind the
//     chart's Service with the certificate it keeps itself (the chart's default, --cert-management=self) or
//     cert-manager's, mounted; the API server of the harness calls the configurations registered through
//     Options.WebhookPaths on a local port, trusting the harness's certificate, which the process serves
//     from --webhook-cert-dir as it would a mounted one (--cert-management=none). The binary's own
//     certificates are tested where they are the subject (cmd/liqo-janitor's certs tests, test/e2e), which
//     pass --cert-management=self after.
//   - --health-probe-bind-address, --metrics-bind-address: every pod has its own network namespace, the
//     replicas here share the machine's: each takes free loopback ports.
//   - --metrics-secure: the harness's scrapes (Replica.Metric) are plain HTTP; the tests of the secure
//     endpoint pass --metrics-secure=true after.
var overridden = map[string]bool{"--kubeconfig": true, "--webhook-port": true, "--webhook-cert-dir": true,
	"--cert-management": true, "--health-probe-bind-address": true, "--metrics-bind-address": true, "--metrics-secure": true}

// ownNamespaceFlags default, in a pod, to the pod's namespace, read from its ServiceAccount's namespace
// file (/var/run/secrets/kubernetes.io/serviceaccount/namespace), which a process here does not have: the
// harness gives the release namespace by hand, unless the Deployment sets them (the chart sets
// --namespace; the Lease's and the certificates' namespaces default to it).
var ownNamespaceFlags = []string{"--namespace"}

// args are the Deployment container's arguments without the overridden flags, then the harness's.
func (f replicaFlags) args(inst *Install) []string {
	var out []string
	set := map[string]bool{}
	for _, a := range inst.Container.Args {
		flag, _, _ := strings.Cut(a, "=")
		set[flag] = true
		if !overridden[flag] {
			out = append(out, a)
		}
	}
	for _, flag := range ownNamespaceFlags {
		if !set[flag] {
			out = append(out, flag+"="+inst.Namespace)
		}
	}
	return append(out, "--kubeconfig="+f.kubeconfig,
		"--webhook-port="+strconv.Itoa(f.webhookPort), "--webhook-cert-dir="+f.webhookCertDir, "--cert-management=none",
		"--health-probe-bind-address="+f.probe, "--metrics-bind-address="+f.metrics, "--metrics-secure=false")
}

// process is a child process of the test process, started by startProcess.
type process struct {
	what, log string
	cmd       *exec.Cmd
	exited    chan struct{}
	err       error
	// sigterm sends the one SIGTERM of Terminate: a second one makes a controller-runtime program exit 1
	// at once (ctrl.SetupSignalHandler), and Env.Stop and its owner's own stop may both terminate it.
	sigterm sync.Once
}

// startProcess starts cmd, named what in errors, with its output appended to the file log, until Env.Stop
// terminates it (or Kill or Terminate ends it before): unless the Env is Detached, it dies with the test
// process too.
func (e *Env) startProcess(what, log string, cmd *exec.Cmd) (*process, error) {
	logFile, err := os.OpenFile(log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	p := &process{what: what, log: log, cmd: cmd, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if !e.detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive this process
	}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.exited)
	}()
	e.Go(func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return p.Terminate(30 * time.Second)
		case <-p.exited:
			return nil
		}
	})
	return p, nil
}

// RSS is the replica's resident memory now (VmRSS), in bytes.
func (r *Replica) RSS() (int64, error) { return r.status("VmRSS") }

// PeakRSS is the most resident memory the replica has had (VmHWM), in bytes.
func (r *Replica) PeakRSS() (int64, error) { return r.status("VmHWM") }

// status reads a memory field of the replica's /proc/<pid>/status, in bytes.
func (r *Replica) status(field string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", r.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, r.cmd.Process.Pid)
}

// Exited is closed once the process has exited.
func (p *process) Exited() <-chan struct{} { return p.exited }

// Kill ends the process with SIGKILL, as a node failure would, and waits for it to be gone.
func (p *process) Kill() error {
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-p.exited
	return nil
}

// Terminate sends SIGTERM (a graceful stop, as the kubelet sends) and waits up to timeout for the process
// to exit; it returns an error if the process did not exit on its own, or exited with a failure.
func (p *process) Terminate(timeout time.Duration) error {
	var err error
	p.sigterm.Do(func() { err = p.cmd.Process.Signal(syscall.SIGTERM) })
	if err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-p.exited:
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%s did not stop within %s of SIGTERM (log: %s)", p.what, timeout, p.log)
	}
	var exit *exec.ExitError
	if errors.As(p.err, &exit) && exit.ExitCode() != 0 {
		return fmt.Errorf("%s exited after SIGTERM (log: %s): %w", p.what, p.log, p.err)
	}
	return nil
}

// Metric scrapes the replica's /metrics and sums the samples called name whose labels match every given
// label (counters and gauges).
func (r *Replica) Metric(name string, labels map[string]string) (float64, error) {
	resp, err := http.Get("http://" + r.Metrics + "/metrics") //nolint:noctx // a scrape in a test
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("parsing the metrics of replica %s: %w", r.Name, err)
	}
	return sumSamples(slices.Collect(maps.Values(families)), name, labels), nil
}

// Review sends an AdmissionReview straight to the replica's webhook server at path (over TLS, trusting
// the harness's webhook CA), as the API server would, and returns its response.
func (e *Env) Review(r *Replica, path string, review *admissionv1.AdmissionReview) (*admissionv1.AdmissionResponse, error) {
	pool, err := e.WebhookCA()
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(review)
	if err != nil {
		return nil, err
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	url := fmt.Sprintf("https://%s%s", net.JoinHostPort(e.WebhookOptions().Host, strconv.Itoa(r.WebhookPort)), path)
	resp, err := c.Post(url, "application/json", bytes.NewReader(body)) //nolint:noctx // a request in a test
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := &admissionv1.AdmissionReview{}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return nil, fmt.Errorf("decoding the answer of replica %s (HTTP %d): %w", r.Name, resp.StatusCode, err)
	}
	if out.Response == nil {
		return nil, fmt.Errorf("replica %s answered no response", r.Name)
	}
	return out.Response, nil
}

// WebhookCA is the certificate authority of the webhook serving certificate the harness gives the binary
// (--webhook-cert-dir).
func (e *Env) WebhookCA() (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(e.env.WebhookInstallOptions.LocalServingCAData) {
		return nil, errors.New("the harness's webhook CA is not PEM")
	}
	return pool, nil
}

// FreeLocalAddr returns a loopback address with a port nothing listens on at the moment.
func FreeLocalAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// readyTimeout is how long a started replica may take to report ready.
const readyTimeout = time.Minute

func waitHTTPOK(ctx context.Context, url string) error {
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, readyTimeout, true, func(ctx context.Context) (bool, error) {
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
}

// waitListening polls until addr accepts a TCP connection.
func waitListening(ctx context.Context, addr string) error {
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, readyTimeout, true, func(ctx context.Context) (bool, error) {
		conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return false, nil //nolint:nilerr // not listening yet
		}
		_ = conn.Close()
		return true, nil
	})
}

// BinaryLog is the path of the log of the binary StartBinary started.
func (e *Env) BinaryLog() string { return filepath.Join(e.dir, "liqo-janitor.log") }
