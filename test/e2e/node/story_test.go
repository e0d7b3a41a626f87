package node

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// TestTheInstalledJanitorReleasesADeadProvider plays the dead-provider story against the installed pods:
// a consumer peered with two providers loses one, whose unpeering leaves its pods and replicated objects
// Terminating; the admin marks it dead with the kubectl plugin (through the gate's Service), and the
// leading replica, as the chart's ServiceAccount, releases them after the chart's grace period. The live
// provider's objects are not written (its pods are compared by deletion only: kube-controller-manager's
// node lifecycle controller marks the pods of a virtual node that posts no status not ready).
func TestTheInstalledJanitorReleasesADeadProvider(t *testing.T) {
	env := harness.Require(t)
	logReplicasOnFailure(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons, err := fixture.Build(ctx, env.Client, fixture.Spec{Prefix: "node", Providers: 2, PodsPerProvider: 5, OffloadedNamespaces: 1})
	g.Expect(err).NotTo(HaveOccurred())
	dead, live := cons.Providers[0], cons.Providers[1]
	liveObjects := []client.Object{live.ResourceSlice, live.NamespaceMap, live.Renew, live.VirtualNode, live.IdentitySecret}
	before, err := fixture.ResourceVersions(ctx, env.Client, liveObjects...)
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(fixture.Kill(ctx, env.Client, dead)).To(Succeed())
	g.Expect(fixture.Terminate(ctx, env.Client, dead)).To(Succeed())
	plugin, err := env.Binary("kubectl-liqo_janitor")
	g.Expect(err).NotTo(HaveOccurred())
	cmd := exec.CommandContext(ctx, plugin, "mark", dead.ID, "--reason", "node lane", "--yes")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.KubeconfigPath)
	out, err := cmd.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "kubectl liqo-janitor mark: %s", out)

	stuck := []client.Object{dead.ResourceSlice, dead.NamespaceMap, dead.Renew}
	for _, p := range dead.Pods {
		stuck = append(stuck, p)
	}
	var left map[string]string
	g.Expect(wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		rvs, err := fixture.ResourceVersions(ctx, env.Client, stuck...)
		if err != nil {
			return false, nil //nolint:nilerr // a slow API server: poll again, keep the last answer
		}
		left = map[string]string{}
		for k, rv := range rvs {
			if rv != "<gone>" {
				left[k] = rv
			}
		}
		return len(left) == 0, nil
	})).To(Succeed(), "the janitor releases what the dead provider left Terminating; left: %v", left)

	after, err := fixture.ResourceVersions(ctx, env.Client, liveObjects...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after).To(Equal(before), "the live provider's objects are not written")
	for _, p := range live.Pods {
		var pod corev1.Pod
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(p), &pod)).To(Succeed())
		g.Expect(pod.DeletionTimestamp).To(BeNil(), "the live provider's pod %s", pod.Name)
	}
}
