package node

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// KeepLogs is the environment variable that, set, makes Stop leave the node's directory (the processes'
// logs, NAME.log) behind, to read after a failed run; everything else is torn down all the same.
const KeepLogs = "NODE_LANE_KEEP_LOGS"

// The sysctls the node's plugins may change: the bridge CNI plugin turns on IP forwarding for its gateway.
var watchedSysctls = []string{"net/ipv4/ip_forward"}

// hostDirs are the directories the node's components create outside the node's own, at paths compiled
// into them: containerd's shim sockets and FIFOs (/run/containerd/s, /run/containerd/fifo), libcni's
// result cache, the kubelet's /var/log/containers symlinks.
var hostDirs = []string{"/run/containerd", "/var/lib/cni", "/var/log/containers"}

// kubeletCgroups are the cgroups the kubelet creates (cgroupsPerQOS) under each hierarchy.
var kubeletCgroups = []string{"kubepods"}

// snapshot records what Stop restores or leaves: sysctls, and the kubelet's cgroups, iptables chains and
// directories outside the node's own that already existed.
func (n *Node) snapshot() {
	n.sysctls = map[string]string{}
	for _, s := range watchedSysctls {
		if v, err := os.ReadFile(filepath.Join("/proc/sys", s)); err == nil {
			n.sysctls[s] = strings.TrimSpace(string(v))
		}
	}
	n.chainsBefore = chains()
	n.hostDirsBefore = map[string]bool{}
	for _, d := range hostDirs {
		_, err := os.Stat(d)
		n.hostDirsBefore[d] = err == nil
	}
	n.cgroupsBefore = map[string]bool{}
	for _, d := range cgroupDirs() {
		n.cgroupsBefore[d] = true
	}
}

// Stop tears the node down, whatever state it is in: the pods go first, through the kubelet, so that their
// sandboxes' networks are deleted by the CNI plugins as on a real node; then kube-proxy (and its iptables
// rules), the kubelet, kube-scheduler and containerd stop; what is left (containers, shims, mounts, the
// pods' network namespaces among them, the bridge, the kubelet's and the CNI plugin's iptables chains,
// cgroups, sysctls, files, directories at compiled-in paths) is removed.
func (n *Node) Stop(ctx context.Context, c client.Client) error {
	errs := []error{n.removePods(ctx, c)}
	errs = append(errs, n.proxy.stop(10*time.Second))
	if n.proxy != nil {
		_, err := run(filepath.Join(n.cfg.Bin, "kube-proxy"), "--cleanup", "--config="+n.path("kube-proxy.yaml"))
		errs = append(errs, err)
	}
	errs = append(errs, n.kubelet.stop(10*time.Second), n.scheduler.stop(10*time.Second))
	errs = append(errs, n.removeContainers(), n.containerd.stop(20*time.Second), n.killShims())
	errs = append(errs, unmountUnder(n.dir), deleteBridge(), n.removeChains(), n.removeCgroups(), n.restoreSysctls(),
		n.removeHostDirs())
	if os.Getenv(KeepLogs) == "" {
		errs = append(errs, os.RemoveAll(n.dir))
	}
	return errors.Join(errs...)
}

// removePods cordons the node and deletes its pods, waiting until the kubelet has stopped them; a
// Deployment's replacements stay Pending on the cordoned node.
func (n *Node) removePods(ctx context.Context, c client.Client) error {
	if !n.kubelet.running() {
		return nil
	}
	node := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: Name}, node); err != nil {
		return client.IgnoreNotFound(err)
	}
	patch := client.MergeFrom(node.DeepCopy())
	node.Spec.Unschedulable = true
	if err := c.Patch(ctx, node, patch); err != nil {
		return fmt.Errorf("cordoning the node: %w", err)
	}
	return wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := c.List(ctx, &pods); err != nil {
			return false, err
		}
		left := 0
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Spec.NodeName != Name {
				continue
			}
			left++
			if p.DeletionTimestamp == nil {
				if err := c.Delete(ctx, p, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
					return false, err
				}
			}
		}
		return left == 0, nil
	})
}

// removeContainers stops and removes what containerd still runs (a pod the kubelet did not get to).
func (n *Node) removeContainers() error {
	if !n.containerd.running() {
		return nil
	}
	out, err := n.ctr("containers", "list", "--quiet")
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range strings.Fields(out) {
		_, _ = n.ctr("tasks", "kill", "--signal", "SIGKILL", id)
		_, _ = n.ctr("tasks", "delete", "--force", id)
		if _, err := n.ctr("containers", "delete", id); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// killShims kills the runc shims of this node's containerd that outlived it (they detach from containerd
// and are found by the socket address on their command line).
func (n *Node) killShims() error {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if strings.HasSuffix(args[0], "containerd-shim-runc-v2") && slices.Contains(args, n.sock) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return nil
}

// unmountUnder unmounts every mount point under dir (the kubelet's volumes, containerd's rootfs and
// shm mounts), deepest first; a busy one is detached (MNT_DETACH).
func unmountUnder(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	var points []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) > 4 && (fields[4] == dir || strings.HasPrefix(fields[4], dir+"/")) {
			points = append(points, fields[4])
		}
	}
	slices.SortFunc(points, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// deleteBridge deletes the pods' bridge, if the CNI plugin created it.
func deleteBridge() error {
	if _, err := os.Stat(filepath.Join("/sys/class/net", Bridge)); os.IsNotExist(err) {
		return nil
	}
	_, err := run("ip", "link", "delete", Bridge)
	return err
}

// cgroupDirs returns the kubelet's top cgroups that exist now, in every hierarchy.
func cgroupDirs() []string {
	var out []string
	for _, c := range kubeletCgroups {
		matches, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", c))
		out = append(out, matches...)
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c)); err == nil {
			out = append(out, filepath.Join("/sys/fs/cgroup", c))
		}
	}
	return out
}

// removeCgroups removes the kubelet's cgroups created since Start, children first (a cgroup directory is
// removed with rmdir once it is empty of processes and children); a container process still in one (its
// shim killed before it) is killed first.
func (n *Node) removeCgroups() error {
	var errs []error
	for _, top := range cgroupDirs() {
		if n.cgroupsBefore[top] {
			continue
		}
		var dirs []string
		_ = filepath.WalkDir(top, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		slices.Reverse(dirs)
		for _, d := range dirs {
			killProcs(d)
		}
		for _, d := range dirs {
			if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("removing cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// removeHostDirs removes those of hostDirs that did not exist before Start. One that did is left as it
// is: another containerd, or a previous node, may use it.
func (n *Node) removeHostDirs() error {
	var errs []error
	for _, d := range hostDirs {
		if !n.hostDirsBefore[d] {
			errs = append(errs, os.RemoveAll(d))
		}
	}
	return errors.Join(errs...)
}

func (n *Node) restoreSysctls() error {
	var errs []error
	for s, v := range n.sysctls {
		errs = append(errs, os.WriteFile(filepath.Join("/proc/sys", s), []byte(v), 0o644))
	}
	return errors.Join(errs...)
}

// killProcs kills the processes in a cgroup directory and waits, briefly, for them to leave it.
func killProcs(dir string) {
	procs := func() []int {
		data, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		var pids []int
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return pids
	}
	for _, pid := range procs() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	_ = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 5*time.Second, true,
		func(context.Context) (bool, error) { return len(procs()) == 0, nil })
}
