package node

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/liqo-janitor/liqo-janitor/manifests"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// replicas returns the chart's pods.
func replicas(t *testing.T, c client.Client) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	NewWithT(t).Expect(c.List(t.Context(), &pods, client.InNamespace(manifests.ReleaseNamespace),
		client.MatchingLabels{"app.kubernetes.io/name": manifests.ReleaseName})).To(Succeed())
	return pods.Items
}

// TestReplicasRunReadyAsTheChartConfinesThem: both replicas are Ready (the chart's readiness probe answers
// through the kubelet), run from the imported image, and each container's process is confined as the
// chart's security context says, read from the kernel rather than from the pod spec: the nonroot user,
// no capabilities, no privilege escalation, a seccomp filter and a read-only root filesystem.
func TestReplicasRunReadyAsTheChartConfinesThem(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	g.Expect(waitAvailable(t.Context(), env.Client)).To(Succeed())
	pods := replicas(t, env.Client)
	g.Expect(pods).To(HaveLen(2))
	for _, p := range pods {
		g.Expect(podReady(&p)).To(BeTrue(), "pod %s Ready", p.Name)
		g.Expect(p.Status.ContainerStatuses).To(HaveLen(1))
		cs := p.Status.ContainerStatuses[0]
		g.Expect(cs.Image).To(Equal(lane.image), "pod %s runs the imported image", p.Name)
		status := procStatus(t, containerPID(t, cs.ContainerID))
		g.Expect(status["Uid"]).To(Equal("65532\t65532\t65532\t65532"), "pod %s: the nonroot user", p.Name)
		g.Expect(status["CapEff"]).To(Equal("0000000000000000"), "pod %s: no capabilities", p.Name)
		g.Expect(status["NoNewPrivs"]).To(Equal("1"), "pod %s: no privilege escalation", p.Name)
		g.Expect(status["Seccomp"]).To(Equal("2"), "pod %s: a seccomp filter (RuntimeDefault)", p.Name)
		g.Expect(rootMountOptions(t, containerPID(t, cs.ContainerID))).To(ContainElement("ro"), "pod %s: read-only root filesystem", p.Name)
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// containerPID returns the host PID of a container's process: what the runc shim wrote for containerd
// (its task state directory's init.pid).
func containerPID(t *testing.T, containerID string) string {
	t.Helper()
	id := strings.TrimPrefix(containerID, "containerd://")
	data, err := os.ReadFile(filepath.Join(lane.node.Dir(), "containerd", "state", "io.containerd.runtime.v2.task", "k8s.io", id, "init.pid"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), "the container's PID")
	return strings.TrimSpace(string(data))
}

// procStatus reads /proc/PID/status into a map of its fields.
func procStatus(t *testing.T, pid string) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join("/proc", pid, "status"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	defer func() { _ = f.Close() }()
	out := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, _ := strings.Cut(s.Text(), ":")
		out[k] = strings.TrimSpace(v)
	}
	return out
}

// rootMountOptions returns the mount options of the process's root filesystem.
func rootMountOptions(t *testing.T, pid string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("/proc", pid, "mountinfo"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 5 && f[4] == "/" {
			return strings.Split(f[5], ",")
		}
	}
	t.Fatalf("no root mount in /proc/%s/mountinfo", pid)
	return nil
}

// logReplicasOnFailure logs the end of each replica's log (the kubelet's log files) if the test fails: what
// the installed janitor did is not in the test's output otherwise.
func logReplicasOnFailure(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		logs, _ := filepath.Glob(filepath.Join(lane.node.PodLogs(), manifests.ReleaseNamespace+"_*", "*", "*.log"))
		for _, l := range logs {
			data, err := os.ReadFile(l)
			if err != nil {
				continue
			}
			if len(data) > 8000 {
				data = data[len(data)-8000:]
			}
			t.Logf("%s (end):\n%s", l, data)
		}
	})
}
