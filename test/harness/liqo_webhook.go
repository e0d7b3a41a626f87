package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// LiqoWebhookBinary is Liqo's webhook (cmd/webhook of that release) as `make liqo-webhook` builds it,
// relative to the repository root.
const LiqoWebhookBinary = "bin/liqo/webhook"

// LiqoWebhook is Liqo's own admission webhook, the real binary, running against the Env's API server as
// Liqo's chart runs it, with the chart's webhook configurations (LiqoWebhookConfigurations) registered to
// call it. Stop takes it down as a crashed or evicted pod goes: its configurations stay registered, with
// failurePolicy Fail, so that every write they cover fails with `failed calling webhook "<name>"` until
// Start brings it back, on the same port and with the same certificate.
type LiqoWebhook struct {
	// Namespace is Liqo's namespace (--liqo-namespace), which holds its certificate Secret and default
	// VkOptionsTemplate.
	Namespace string
	// Port is the port it listens on (on every address, as in its pod); the configurations call
	// https://127.0.0.1:<Port>.
	Port int
	// Log is the path of its log, every run's one after the other.
	Log string

	env     *Env
	binary  string
	args    []string
	environ []string

	mu        sync.Mutex
	proc      *process        // nil while stopped
	held      int             // the port, bound while stopped so that nothing else takes it; -1 otherwise
	installed []client.Object // what StartLiqoWebhook created, in order
}

// StartLiqoWebhook installs what Liqo's chart installs for its webhook in Liqo's namespace ns (whose
// cluster-ID ConfigMap must exist: InstallLocalClusterID) and starts the webhook; it returns once the API
// server calls the webhook and gets answers. The webhook is stopped, and what was installed removed,
// by Remove or else by Env.Stop. One runs at a time per API server (the chart's names are fixed).
//
// Objects created before the webhook started were never mutated by it, and Liqo's webhooks may not
// expect that: its VirtualNode webhook refuses every update of a VirtualNode it did not mutate at
// creation (it dereferences spec.createNode, which it defaults then: pkg/webhooks/virtualnode,
// mutateNodeCreate; controller-runtime turns the panic into a denial). Start it before the fixture.
//
// The certificates: Liqo's webhook serves the certificate of the chart's Secret (LiqoWebhookSecret), and
// writes the Secret's CA into the caBundle of its configurations (both at start, in HandleSecret). Left
// empty, as the chart leaves it, the Secret would get a certificate for the Service's names only; the
// harness fills it with the certificate of its own local webhook server (valid for 127.0.0.1), which
// Liqo then keeps. Liqo writes the files it serves under a fixed /tmp/k8s-webhook-server, shared by
// every process on the machine (an emptyDir in its pod), and serves them from os.TempDir(): the process
// gets a TMPDIR of its own, where the harness writes the same files, so that webhooks of concurrent test
// processes do not serve each other's certificates.
func (e *Env) StartLiqoWebhook(ctx context.Context, ns string) (*LiqoWebhook, error) {
	w := &LiqoWebhook{Namespace: ns, Log: filepath.Join(e.dir, "liqo-webhook.log"), env: e, held: -1,
		binary: filepath.Join(e.Root, LiqoWebhookBinary)}
	if _, err := os.Stat(w.binary); err != nil {
		return nil, fmt.Errorf("no Liqo webhook to run: run make liqo-webhook: %w", err)
	}
	_, version, err := LiqoModule(e.Root)
	if err != nil {
		return nil, err
	}
	cm := ClusterIDConfigMap(ns, "")
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
		return nil, fmt.Errorf("reading Liqo's cluster ID (InstallLocalClusterID): %w", err)
	}
	addr, err := FreeLocalAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	if w.Port, err = strconv.Atoi(port); err != nil {
		return nil, err
	}
	tmp := filepath.Join(e.dir, "liqo-webhook")
	secret, err := w.serveCertificates(tmp)
	if err != nil {
		return nil, err
	}
	// The arguments of templates/liqo-webhook-deployment.yaml, the cluster ID and namespace as the pod gets
	// them (the ConfigMap, its own namespace), and --enable-resource-enforcement as the chart's default
	// values give it (controllerManager.config.enableResourceEnforcement: true): the ShadowPod webhooks then
	// stamp the creator's user name and refuse a ShadowPod of a user whose Quota is missing or cordoned
	// (pkg/webhooks/shadowpod). Its probe and metrics ports (8081, 8082) are off, as other processes of the
	// machine may have them.
	w.args = []string{"--webhook-port=" + port, "--cluster-id=" + cm.Data[liqojanitor.ClusterIDConfigMapKey],
		"--liqo-namespace=" + ns, "--secret-name=" + LiqoWebhookSecret, "--liqo-runtime-class=liqo",
		"--vk-options-default-template=" + ns + "/" + liqoVKOptionsTemplate, "--enable-resource-enforcement",
		"--health-probe-address=0", "--metrics-address=0"}
	w.environ = append(os.Environ(), "KUBECONFIG="+e.KubeconfigPath, "TMPDIR="+tmp)
	// Registered with the CA Liqo's webhook writes into them, as after its first start: the API server trusts
	// the webhook as soon as it knows the configurations.
	mutating, validating := LiqoWebhookConfigurations("https://"+addr, e.env.WebhookInstallOptions.LocalServingCAData)
	for _, obj := range []client.Object{secret, liqoVKOptions(ns, version), mutating, validating} {
		if err := e.Client.Create(ctx, obj); err != nil {
			return nil, errors.Join(fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err), w.Remove(ctx))
		}
		w.installed = append(w.installed, obj)
	}
	e.Go(func(ctx context.Context) error {
		<-ctx.Done()
		return w.Remove(context.Background())
	})
	if err := w.Start(ctx); err != nil {
		return nil, errors.Join(err, w.Remove(ctx))
	}
	return w, nil
}

// serveCertificates writes the harness's local webhook serving certificate where Liqo's webhook, with
// TMPDIR tmp, serves it from, and returns the chart's Secret holding it.
func (w *LiqoWebhook) serveCertificates(tmp string) (*corev1.Secret, error) {
	wo := w.env.env.WebhookInstallOptions
	dir := filepath.Join(tmp, "k8s-webhook-server", "serving-certs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	data := map[string][]byte{"ca": wo.LocalServingCAData}
	for _, name := range []string{"tls.crt", "tls.key"} {
		pem, err := os.ReadFile(filepath.Join(wo.LocalServingCertDir, name))
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, name), pem, 0o600); err != nil {
			return nil, err
		}
		data[name] = pem
	}
	return LiqoWebhookSecretFor(w.Namespace, data), nil
}

// Start (re)starts the webhook on its port, if stopped, and returns once the API server calls it and gets
// answers (its ForeignCluster and ResourceSlice webhooks, which every API server request of a probe
// reaches).
func (w *LiqoWebhook) Start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.proc != nil {
		return nil
	}
	before, err := w.answered(ctx)
	if err != nil {
		return err
	}
	w.release()
	cmd := exec.Command(w.binary, w.args...)
	cmd.Env = w.environ
	if w.proc, err = w.env.startProcess("Liqo's webhook", w.Log, cmd); err != nil {
		return err
	}
	if err := w.waitAnswering(ctx, before); err != nil {
		return fmt.Errorf("the API server got no answer from Liqo's webhook (log: %s): %w", w.Log, err)
	}
	return nil
}

// Stop takes the webhook down (SIGTERM, then it is waited for), leaving its configurations registered:
// Liqo's webhook pod is down. Its port stays taken meanwhile (the API server's connections are refused).
func (w *LiqoWebhook) Stop() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.proc == nil {
		return nil
	}
	err := w.proc.Terminate(30 * time.Second)
	w.proc = nil
	w.held = holdAddr(net.JoinHostPort("127.0.0.1", strconv.Itoa(w.Port)))
	return err
}

// Remove stops the webhook and deletes what StartLiqoWebhook installed, in the reverse order: its
// configurations first (so that nothing is left failing), then its VkOptionsTemplate and Secret. It may
// be called more than once.
func (w *LiqoWebhook) Remove(ctx context.Context) error {
	errs := []error{w.Stop()}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.release()
	for i := len(w.installed) - 1; i >= 0; i-- {
		errs = append(errs, client.IgnoreNotFound(w.env.Client.Delete(ctx, w.installed[i])))
	}
	w.installed = nil
	return errors.Join(errs...)
}

// release frees the port Stop held. w.mu must be held.
func (w *LiqoWebhook) release() {
	if w.held >= 0 {
		_ = syscall.Close(w.held)
		w.held = -1
	}
}

// liqoProbeHooks are the webhooks whose answers tell that the API server reaches Liqo's webhook: one of
// each configuration (the API server watches each kind of configuration apart).
var liqoProbeHooks = []string{"fc.mutate.liqo.io", "resourceslice.validate.liqo.io"}

// answered is how many requests each of liqoProbeHooks has answered with success so far, by the API
// server's count.
func (w *LiqoWebhook) answered(ctx context.Context) ([]float64, error) {
	counts := make([]float64, len(liqoProbeHooks))
	for i, name := range liqoProbeHooks {
		n, err := w.env.APIServerMetric(ctx, "apiserver_admission_webhook_request_total", map[string]string{"name": name, "code": "200"})
		if err != nil {
			return nil, err
		}
		counts[i] = n
	}
	return counts, nil
}

// waitAnswering sends the API server dry-run creations of a ForeignCluster and of a ResourceSlice until
// each of liqoProbeHooks has answered one more request with success than before: until the API server
// knows the configurations, and the webhook listens and its certificate is trusted.
func (w *LiqoWebhook) waitAnswering(ctx context.Context, before []float64) error {
	const probe = "liqo-webhook-probe"
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, readyTimeout, true, func(ctx context.Context) (bool, error) {
		select {
		case <-w.proc.Exited():
			return false, fmt.Errorf("it exited: %w", w.proc.err)
		default:
		}
		// Their outcome is in the counts (an answer may still refuse them, or the objects exist).
		_ = w.env.Client.Create(ctx, &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: probe},
			Spec: liqov1beta1.ForeignClusterSpec{ClusterID: probe}}, client.DryRunAll)
		_ = w.env.Client.Create(ctx, &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: probe, Namespace: w.Namespace}},
			client.DryRunAll)
		now, err := w.answered(ctx)
		if err != nil {
			return false, err
		}
		for i := range now {
			if now[i] <= before[i] {
				return false, nil
			}
		}
		return true, nil
	})
}
