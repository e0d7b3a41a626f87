package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// LiqoControllerManagerBinary is Liqo's controller manager (cmd/liqo-controller-manager of that release) as
// `make liqo-controller-manager` builds it, relative to the repository root.
const LiqoControllerManagerBinary = "bin/liqo/controller-manager"

// LiqoControllers are the controllers of Liqo's controller manager that a provider's side of a consumer's
// offloading runs on (their names in its metrics and logs, pkg/consts/controllers.go, the same in v1.0.3 to
// v1.2.0): StartLiqoControllerManager returns once each has started.
//
//   - tenant: the Tenant's finalizer, and its tenantCondition: Cordoned annotates the consumer's
//     ResourceSlices liqo.io/cordon-tenant, Active removes the annotation, Drained deletes the
//     ResourceSlices and NamespaceMaps (authentication/tenant-controller, Reconcile: before it looks at the
//     handshake);
//   - resourceslice_quotacreator: a Quota per replicated ResourceSlice whose Resources condition is
//     Accepted, named and for the user of the slice's identity, spec.cordoned while the slice carries
//     liqo.io/cordon or liqo.io/cordon-tenant (quotacreator-controller);
//   - namespacemap: the remote namespaces of a replicated NamespaceMap and their RoleBinding of
//     liqo-virtual-kubelet-remote to the consumer's group (offloading/namespacemap-controller,
//     enforcement.go);
//   - shadowpod: a pod per ShadowPod, controller-owned by it, re-created whenever it is deleted while the
//     ShadowPod exists (offloading/shadowpod-controller).
var LiqoControllers = []string{"tenant", "resourceslice_quotacreator", "namespacemap", "shadowpod"}

// LiqoControllerManager is Liqo's controller manager, the real binary, running against the Env's API
// server as a provider's runs it, with its authentication and offloading modules (without its networking
// one: no IPAM, no gateways, no virtual kubelet), as Liqo's admin kubeconfig rather than its chart's
// ServiceAccount. Stop takes it down as a crashed pod goes, and Start brings it back.
type LiqoControllerManager struct {
	// Namespace is Liqo's namespace (--liqo-namespace), which holds its cluster-ID ConfigMap and the
	// authentication keys it creates at start.
	Namespace string
	// Log is the path of its log, every run's one after the other.
	Log string

	env     *Env
	binary  string
	args    []string
	environ []string
	metrics string // the URL of its /metrics

	mu   sync.Mutex
	proc *process // nil while stopped
}

// StartLiqoControllerManager installs the ClusterRoles of Liqo's chart that its controllers bind
// (InstallLiqoRemoteRoles) and starts Liqo's controller manager for Liqo's namespace ns (whose cluster-ID
// ConfigMap must exist: InstallLocalClusterID), with the arguments of its chart's Deployment for a cluster
// that only offloads (the cluster ID, the namespace, --default-limits-enforcement=None, storage off, the
// networking module off) and args after them (a later flag wins); it returns once every controller of
// LiqoControllers has started. "--enable-storage=true" in args runs its storage provisioner too, as its chart
// does by default (storage.enabled), with the flags' defaults the chart's values share (class liqo, storage
// namespace liqo-storage, no real class): a sig-storage-lib-external-provisioner controller
// (cmd/liqo-controller-manager/modules/offloading.go of Liqo), not a controller-runtime one, which the
// return does not wait for. It is stopped by Stop, or else by Env.Stop. One runs at a time per API
// server: a provider cluster runs one.
//
// The networking module is off because it needs Liqo's IPAM server and the fabric; the offloading module's
// other controllers (virtual nodes, NamespaceOffloadings, ShadowEndpointSlices, pod status, the CSR approver
// of virtual kubelets) and the authentication module's (nonces, identities, ResourceSlices of this cluster
// as a consumer) run too, and find nothing to do on a provider's side without networking. Run it on an Env
// of its own (harness.Start), the provider's: its foreigncluster controller reconciles every ForeignCluster
// of the API server it runs against.
func (e *Env) StartLiqoControllerManager(ctx context.Context, ns string, args ...string) (*LiqoControllerManager, error) {
	m := &LiqoControllerManager{Namespace: ns, Log: filepath.Join(e.dir, "liqo-controller-manager.log"), env: e,
		binary: filepath.Join(e.Root, LiqoControllerManagerBinary)}
	if _, err := os.Stat(m.binary); err != nil {
		return nil, fmt.Errorf("no Liqo controller manager to run: run make liqo-controller-manager: %w", err)
	}
	cm := ClusterIDConfigMap(ns, "")
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
		return nil, fmt.Errorf("reading Liqo's cluster ID (InstallLocalClusterID): %w", err)
	}
	if err := e.InstallLiqoRemoteRoles(ctx); err != nil {
		return nil, err
	}
	metricsAddr, err := FreeLocalAddr()
	if err != nil {
		return nil, err
	}
	webhookAddr, err := FreeLocalAddr()
	if err != nil {
		return nil, err
	}
	_, webhookPort, _ := net.SplitHostPort(webhookAddr)
	m.metrics = "http://" + metricsAddr + "/metrics"
	// Those of the arguments of templates/liqo-controller-manager-deployment.yaml that matter here, with the
	// chart's default values but for networking.enabled (and the API server's IP remapping, a networking
	// feature) and storage.enabled (on in the chart); the rest configure networking, storage classes or what
	// a virtual node advertises. Its
	// probes are off, and its metrics and webhook ports (8082, 9443) are free ones of this machine's
	// loopback, where other processes of the machine may hold the defaults.
	m.args = append([]string{"--cluster-id=" + cm.Data[liqojanitor.ClusterIDConfigMapKey], "--liqo-namespace=" + ns,
		"--networking-enabled=false", "--authentication-enabled=true", "--offloading-enabled=true",
		"--default-limits-enforcement=None", "--enable-storage=false", "--enable-api-server-ip-remapping=false",
		"--webhook-port=" + webhookPort, "--metrics-address=" + metricsAddr, "--health-probe-address=0"}, args...)
	m.environ = append(os.Environ(), "KUBECONFIG="+e.KubeconfigPath)
	if err := m.Start(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// Start (re)starts the controller manager, if stopped, and returns once every controller of
// LiqoControllers has started (its metrics have its series) or it has exited.
func (m *LiqoControllerManager) Start(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc != nil {
		return nil
	}
	cmd := exec.Command(m.binary, m.args...)
	cmd.Env = m.environ
	var err error
	if m.proc, err = m.env.startProcess("Liqo's controller manager", m.Log, cmd); err != nil {
		return err
	}
	if err := m.waitStarted(ctx); err != nil {
		return errors.Join(fmt.Errorf("the controllers of Liqo's controller manager did not start (log: %s): %w", m.Log, err),
			m.stopLocked())
	}
	return nil
}

// Stop takes the controller manager down (SIGTERM, then it is waited for), as its pod going down.
func (m *LiqoControllerManager) Stop() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stopLocked()
}

// stopLocked stops the process, if running. m.mu must be held.
func (m *LiqoControllerManager) stopLocked() error {
	if m.proc == nil {
		return nil
	}
	err := m.proc.Terminate(30 * time.Second)
	m.proc = nil
	return err
}

// waitStarted polls the controller manager's metrics until each of LiqoControllers has its
// controller_runtime_reconcile_total series (controller-runtime creates them as the controller starts, before
// its caches sync: an object created from then on is reconciled). m.mu must be held.
func (m *LiqoControllerManager) waitStarted(ctx context.Context) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, readyTimeout, true, func(ctx context.Context) (bool, error) {
		select {
		case <-m.proc.Exited():
			return false, fmt.Errorf("it exited: %w", m.proc.err)
		default:
		}
		families, err := m.metricFamilies(ctx)
		if err != nil {
			return false, nil //nolint:nilerr // not serving yet
		}
		started := map[string]bool{}
		for _, s := range families["controller_runtime_reconcile_total"].GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "controller" {
					started[l.GetValue()] = true
				}
			}
		}
		for _, name := range LiqoControllers {
			if !started[name] {
				return false, nil
			}
		}
		return true, nil
	})
}

// Metric sums the counters or gauges called name in the controller manager's own metrics (controller-runtime's
// and Liqo's) whose labels match every given label, e.g. controller_runtime_reconcile_total of controller
// shadowpod.
func (m *LiqoControllerManager) Metric(ctx context.Context, name string, labels map[string]string) (float64, error) {
	families, err := m.metricFamilies(ctx)
	if err != nil {
		return 0, err
	}
	return sumSamples([]*dto.MetricFamily{families[name]}, name, labels), nil
}

// metricFamilies reads and parses the controller manager's /metrics, by family name.
func (m *LiqoControllerManager) metricFamilies(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.metrics, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading %s: %s", m.metrics, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(bytes.NewReader(data))
}

// liqoRemoteRoles are the ClusterRoles of Liqo's chart that its controllers grant a peered consumer on a
// provider, by name, with the app.kubernetes.io/name of their labels (liqo.selectorLabels of
// templates/_helpers.tpl: the tenant controller finds the first and third by it, ensureSetup) and their
// rules in files/<name>-ClusterRole.yaml: the same three in v1.0.3 to v1.2.0.
var liqoRemoteRoles = []struct{ name, app string }{
	// Bound in the tenant namespace to User <consumer> (the control-plane identity, CN <consumer>, O
	// liqo.io) by the tenant controller (tenantNamespace.BindClusterRoles): ResourceSlices, Renews,
	// NamespaceMaps, their status; no Tenants.
	{"liqo-remote-controlplane", "remote-controlplane"},
	// Bound in each remote namespace to Group <consumer> (the ResourceSlice identities of the virtual
	// kubelets, O <consumer>) by the namespacemap controller (RoleBinding named after the tenant namespace):
	// ShadowPods, ShadowEndpointSlices, Services, ConfigMaps, Secrets, PVCs; pods read-only.
	{liqoVirtualKubeletRemoteRole, "virtual-kubelet-remote"},
	// Bound cluster-wide to Group <consumer> by the tenant controller (BindClusterRolesClusterWide): the
	// metrics of the virtual kubelet.
	{"liqo-virtual-kubelet-remote-clusterwide", "virtual-kubelet-remote-clusterwide"},
}

// liqoVirtualKubeletRemoteRole is the ClusterRole Liqo binds to a consumer in its remote namespaces
// (consts.RemoteNamespaceClusterRoleName).
const liqoVirtualKubeletRemoteRole = "liqo-virtual-kubelet-remote"

// InstallLiqoRemoteRoles creates, unless they exist, the ClusterRoles of the chart of the Liqo release the
// tools module pins that Liqo grants a peered consumer on a provider (liqoRemoteRoles), with the labels its
// tenant controller selects them by. Without the controller manager, a fixture that lays out a consumer's
// side on a provider (fixture.LayOutTenant) binds them as Liqo would.
func (e *Env) InstallLiqoRemoteRoles(ctx context.Context) error {
	dir, _, err := LiqoModule(e.Root)
	if err != nil {
		return err
	}
	for _, r := range liqoRemoteRoles {
		data, err := os.ReadFile(filepath.Join(dir, "deployments", "liqo", "files", r.name+"-ClusterRole.yaml"))
		if err != nil {
			return err
		}
		role := &rbacv1.ClusterRole{}
		if err := yaml.UnmarshalStrict(data, role); err != nil {
			return fmt.Errorf("reading Liqo's ClusterRole %s: %w", r.name, err)
		}
		role.ObjectMeta = metav1.ObjectMeta{Name: r.name, Labels: map[string]string{
			"app.kubernetes.io/name": r.app, "app.kubernetes.io/instance": "liqo-" + r.app}}
		if err := e.Client.Create(ctx, role); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Liqo's ClusterRole %s: %w", r.name, err)
		}
	}
	return nil
}
