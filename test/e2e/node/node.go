package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Name is the node's name: the kubelet registers it, kube-proxy serves its Services.
const Name = "liqo-janitor-node"

// PodCIDR is the pods' subnet on the bridge; the bridge CNI plugin's host-local IPAM allocates from it.
const PodCIDR = "10.244.0.0/24"

// Bridge is the Linux bridge the CNI plugin creates for the pods and Stop deletes.
const Bridge = "ljnode0"

// cniNetwork names the CNI network (containerd's CNI cache keeps results under this name).
const cniNetwork = "liqo-janitor-node"

// sandboxImage is the pod sandbox image manifests/pause writes (`make node`) and containerd runs for every
// pod: the reference its tarball carries, containerd's sandbox_image.
const sandboxImage = "liqo-janitor.invalid/pause:node-lane"

// cniDir is where Debian's containernetworking-plugins package puts the plugins.
const cniDir = "/usr/lib/cni"

// Packages are the Debian packages the lane needs, for the message that names what to install.
const Packages = "containerd runc containernetworking-plugins iptables"

// Config says where the node finds its binaries and its control plane.
type Config struct {
	// Bin holds kubelet, kube-scheduler, kube-proxy and pause.tar (`make node`, bin/node).
	Bin string
	// Kubeconfig is an admin kubeconfig for the API server.
	Kubeconfig string
	// ClientCAFile is the CA of the API server's client certificates: the kubelet authenticates requests
	// by it.
	ClientCAFile string
	// Address is the machine's address the API server advertises; the kubelet registers it as the node's.
	Address string
	// Images are docker-loadable tarballs imported into containerd besides the sandbox image.
	Images []string
}

// Node is a running node: containerd, kube-scheduler, the kubelet and kube-proxy.
type Node struct {
	cfg        Config
	dir        string
	sock       string
	containerd *process
	scheduler  *process
	kubelet    *process
	proxy      *process
	// sysctls are the values before Start of the sysctls the node's plugins change (the bridge plugin turns
	// on IP forwarding), restored by Stop.
	sysctls map[string]string
	// cgroupsBefore says which of the kubelet's top cgroups existed before Start: Stop removes the others.
	cgroupsBefore map[string]bool
	// hostDirsBefore says which of hostDirs existed before Start: Stop removes the others.
	hostDirsBefore map[string]bool
	// chainsBefore are the iptables chains of the node's kind (chainPrefixes) that existed before Start:
	// Stop removes the others.
	chainsBefore map[string]bool
}

// Missing returns what the machine lacks for the lane, as messages that say what to do; nil if nothing.
func Missing(bin string, images ...string) []string {
	var missing []string
	if runtime.GOOS != "linux" {
		return []string{"the node lane runs on Linux only (runtime.GOOS is " + runtime.GOOS + ")"}
	}
	if os.Geteuid() != 0 {
		missing = append(missing, "the node lane needs root (it runs containerd, the kubelet and kube-proxy): run `sudo make e2e`")
	}
	var tools []string
	for _, t := range []string{"containerd", "containerd-shim-runc-v2", "ctr", "runc", "iptables", "ip"} {
		if _, err := exec.LookPath(t); err != nil {
			tools = append(tools, t)
		}
	}
	for _, p := range []string{"bridge", "host-local", "loopback", "portmap"} {
		if _, err := os.Stat(filepath.Join(cniDir, p)); err != nil {
			tools = append(tools, filepath.Join(cniDir, p))
		}
	}
	if len(tools) > 0 {
		missing = append(missing, fmt.Sprintf("missing %s: apt-get install -y %s (iproute2 for ip)", strings.Join(tools, ", "), Packages))
	}
	for _, f := range []string{"kubelet", "kube-scheduler", "kube-proxy", "pause.tar"} {
		if _, err := os.Stat(filepath.Join(bin, f)); err != nil {
			missing = append(missing, fmt.Sprintf("missing %s: run `make node`", filepath.Join(bin, f)))
		}
	}
	for _, f := range images {
		if _, err := os.Stat(f); err != nil {
			missing = append(missing, fmt.Sprintf("missing %s: run `make image`", f))
		}
	}
	return missing
}

// Start brings the node up and waits for it to be Ready. On an error it tears down what it started.
func Start(ctx context.Context, c client.Client, cfg Config) (*Node, error) {
	dir, err := os.MkdirTemp("", "liqo-janitor-node-")
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, dir: dir, sock: filepath.Join(dir, "containerd.sock")}
	n.snapshot()
	if err := n.start(ctx, c); err != nil {
		return nil, errors.Join(err, n.Stop(context.WithoutCancel(ctx), c))
	}
	return n, nil
}

func (n *Node) start(ctx context.Context, c client.Client) error {
	steps := []struct {
		name string
		do   func(context.Context) error
	}{
		{"containerd", n.startContainerd},
		{"images", n.importImages},
		{"CNI", n.writeCNI},
		{"kube-scheduler", n.startScheduler},
		{"kubelet", n.startKubelet},
		{"kube-proxy", n.startProxy},
	}
	for _, s := range steps {
		if err := s.do(ctx); err != nil {
			return fmt.Errorf("node: %s: %w", s.name, err)
		}
	}
	return n.waitReady(ctx, c)
}

// Dir is the node's directory: the processes' logs (NAME.log) and state.
func (n *Node) Dir() string { return n.dir }

// PodLogs is the kubelet's directory of the containers' logs (NAMESPACE_POD_UID/CONTAINER/N.log).
func (n *Node) PodLogs() string { return n.path("pod-logs") }

// Socket is containerd's socket.
func (n *Node) Socket() string { return n.sock }

// Exited returns an error for each node process that has exited.
func (n *Node) Exited() error {
	var errs []error
	for _, p := range []*process{n.containerd, n.scheduler, n.kubelet, n.proxy} {
		if p != nil {
			errs = append(errs, p.exited())
		}
	}
	return errors.Join(errs...)
}

func (n *Node) path(elem ...string) string { return filepath.Join(append([]string{n.dir}, elem...)...) }

// freePort returns a TCP port free on 127.0.0.1 now, for a process's health or metrics endpoint.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Close() }()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}

func (n *Node) startContainerd(ctx context.Context) error {
	config := fmt.Sprintf(containerdConfig, n.path("containerd", "root"), n.path("containerd", "state"), n.sock,
		n.path("containerd", "opt"), sandboxImage, n.path("runc"), cniDir, n.path("cni"))
	if err := writeFile(n.path("containerd.toml"), config); err != nil {
		return err
	}
	var err error
	if n.containerd, err = start(n.dir, "containerd", "containerd", "--config", n.path("containerd.toml")); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		if err := n.containerd.exited(); err != nil {
			return false, err
		}
		_, err := n.ctr("version")
		return err == nil, nil
	})
}

// containerdConfig is containerd 1.6's configuration (version 2): its own root, state (the pods' network
// namespaces too, rather than /run/netns), socket and CNI configuration; runc through the runc v2 shim,
// with its own state directory and cgroupfs as the kubelet's cgroupDriver; the sandbox image built here, never pulled.
// restrict_oom_score_adj: containerd gives a sandbox an oom_score_adj of -998 (defaultSandboxOOMAdj),
// which only a process with CAP_SYS_RESOURCE may set, and the root of a CI machine that is itself a
// container or a sandboxed VM may lack it (runc then fails with "failed to update /proc/self/oom_score_adj:
// Permission denied"); restricted, a value below the caller's own becomes the caller's own.
const containerdConfig = `version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = %q

[plugins."io.containerd.internal.v1.opt"]
  path = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  netns_mounts_under_state_dir = true
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
    max_conf_num = 1
`

func (n *Node) ctr(args ...string) (string, error) {
	return run("ctr", append([]string{"--address", n.sock, "--namespace", "k8s.io"}, args...)...)
}

func (n *Node) importImages(context.Context) error {
	for _, f := range append([]string{filepath.Join(n.cfg.Bin, "pause.tar")}, n.cfg.Images...) {
		if _, err := n.ctr("images", "import", f); err != nil {
			return err
		}
	}
	return nil
}

// writeCNI writes the bridge network: pods on Bridge with addresses from PodCIDR, the bridge their gateway,
// their traffic to the outside masqueraded, and hairpin mode so that a pod reaches itself through a
// Service.
func (n *Node) writeCNI(context.Context) error {
	conf := fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": %q,
  "plugins": [
    {"type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}], "dataDir": %q}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, cniNetwork, Bridge, PodCIDR, n.path("cni-ipam"))
	return writeFile(n.path("cni", "10-liqo-janitor-node.conflist"), conf)
}

func (n *Node) startScheduler(context.Context) error {
	var err error
	n.scheduler, err = start(n.dir, "kube-scheduler", filepath.Join(n.cfg.Bin, "kube-scheduler"),
		"--kubeconfig="+n.cfg.Kubeconfig, "--leader-elect=false", "--secure-port=0", "--v=1")
	return err
}

// kubeletConfig is the kubelet's configuration. failCgroupV1 false: the kubelet refuses cgroup v1 by default
// since 1.35 (pkg/kubelet/apis/config/validation/validation_linux.go), and still runs on it when told so.
// Files go under the node's directory rather than /var/log/pods and /usr/libexec; eviction thresholds are
// low so that a busy CI machine does not evict the pods under test.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://%s
address: %s
port: %s
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %s}
authorization: {mode: AlwaysAllow}
failSwapOn: false
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
podLogsDir: %s
volumePluginDir: %s
evictionHard: {memory.available: 50Mi, nodefs.available: 1%%, imagefs.available: 1%%, nodefs.inodesFree: 1%%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
registerNode: true
`

func (n *Node) startKubelet(context.Context) error {
	port, err := freePortOn(n.cfg.Address)
	if err != nil {
		return err
	}
	config := fmt.Sprintf(kubeletConfig, n.sock, n.cfg.Address, port, n.cfg.ClientCAFile, n.PodLogs(),
		n.path("volume-plugins"))
	if err := writeFile(n.path("kubelet.yaml"), config); err != nil {
		return err
	}
	n.kubelet, err = start(n.dir, "kubelet", filepath.Join(n.cfg.Bin, "kubelet"),
		"--config="+n.path("kubelet.yaml"), "--kubeconfig="+n.cfg.Kubeconfig, "--root-dir="+n.path("kubelet"),
		"--hostname-override="+Name, "--node-ip="+n.cfg.Address, "--v=2")
	return err
}

func freePortOn(addr string) (string, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Close() }()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}

// proxyConfig is kube-proxy's configuration in iptables mode. Conntrack limits and timeouts are left as
// the machine has them (zero: kube-proxy writes no sysctl), and localhost NodePorts are off (they set
// route_localnet).
const proxyConfig = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: %s}
hostnameOverride: %s
clusterCIDR: %s
healthzBindAddress: 127.0.0.1:%s
metricsBindAddress: 127.0.0.1:%s
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {localhostNodePorts: false}
`

func (n *Node) startProxy(context.Context) error {
	healthz, err := freePort()
	if err != nil {
		return err
	}
	metrics, err := freePort()
	if err != nil {
		return err
	}
	if err := writeFile(n.path("kube-proxy.yaml"), fmt.Sprintf(proxyConfig, n.cfg.Kubeconfig, Name, PodCIDR, healthz, metrics)); err != nil {
		return err
	}
	n.proxy, err = start(n.dir, "kube-proxy", filepath.Join(n.cfg.Bin, "kube-proxy"), "--config="+n.path("kube-proxy.yaml"), "--v=1")
	return err
}

// waitReady waits for the node to register and report Ready (its runtime and network are up).
func (n *Node) waitReady(ctx context.Context, c client.Client) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := n.Exited(); err != nil {
			return false, err
		}
		var node corev1.Node
		if err := c.Get(ctx, types.NamespacedName{Name: Name}, &node); err != nil {
			last = err.Error()
			return false, nil //nolint:nilerr // not registered yet
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				last = fmt.Sprintf("Ready=%s: %s", cond.Status, cond.Message)
				return cond.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for node %s to be Ready (last: %s; logs in %s): %w", Name, last, n.dir, err)
	}
	return nil
}

func writeFile(path, data string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(data), 0o644)
}
