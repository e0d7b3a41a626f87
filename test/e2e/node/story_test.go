package node

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// TestTheInstalledJanitorReleasesADeadProvider plays the dead-provider story against the installed pods:
// a consumer peered with two providers loses one — a partition: the provider's API server (a second
// control plane, behind a proxy on this machine's address, which the pods reach) runs on with this
// consumer's ShadowPods and another consumer's — and its unpeering leaves its pods and replicated objects
// Terminating; the admin marks it dead with the kubectl plugin (through the gate's Service), and the
// leading replica, as the chart's ServiceAccount, releases them after the chart's grace period. The live
// provider's objects are not written (its pods are compared by deletion only: kube-controller-manager's
// node lifecycle controller marks the pods of a virtual node that posts no status not ready). Then the
// partition heals: the janitor's return probe (every minute, the chart's default) hears the provider, the
// janitor reports the return, the admin fences the provider with the plugin, through the gate, and the
// janitor answers the fence record; on the provider, this consumer's copies are gone and the other
// consumer's untouched.
func TestTheInstalledJanitorReleasesADeadProvider(t *testing.T) {
	env := harness.Require(t)
	logReplicasOnFailure(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons, err := fixture.Build(ctx, env.Client, fixture.Spec{Prefix: "node", Providers: 2, PodsPerProvider: 5, OffloadedNamespaces: 1})
	g.Expect(err).NotTo(HaveOccurred())
	dead, live := cons.Providers[0], cons.Providers[1]
	fixture.RetireAtEnd(t, env.Client, dead.ForeignCluster, live.ForeignCluster) // later tests' marks count no storm with them
	link, remote := partitionedProvider(t, dead)
	liveObjects := []client.Object{live.ResourceSlice, live.NamespaceMap, live.Renew, live.VirtualNode, live.IdentitySecret}
	before, err := fixture.ResourceVersions(ctx, env.Client, liveObjects...)
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(fixture.Kill(ctx, env.Client, dead)).To(Succeed())
	g.Expect(fixture.Terminate(ctx, env.Client, dead)).To(Succeed())
	plugin, err := env.Binary("kubectl-liqo_janitor")
	g.Expect(err).NotTo(HaveOccurred())
	runPlugin(t, plugin, "", "mark", dead.ID, "--reason", "node lane", "--yes")

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

	g.Expect(link.Up()).To(Succeed())
	g.Expect(awaitReasons(ctx, env.Client, dead.ForeignCluster, "ProviderReturned", 3*time.Minute)).To(Succeed(),
		"the janitor reports the return within its probe interval")
	fc := dead.ForeignCluster.DeepCopy()
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(fc), fc)).To(Succeed())
	g.Expect(fc.Annotations[liqojanitor.CleanupAnnotation]).To(HavePrefix(liqojanitor.ReturnedPrefix))

	runPlugin(t, plugin, dead.ID+"\n", "fence", dead.ID, "--provider-kubeconfig", link.Kubeconfig)
	g.Expect(awaitReasons(ctx, env.Client, dead.ForeignCluster, "Fenced", time.Minute)).To(Succeed(),
		"the janitor answers the fence record")
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(fc), fc)).To(Succeed())
	g.Expect(fc.Annotations).To(HaveKey(liqojanitor.FencedAnnotation), "the gate keeps the fence record")
	mine, err := fixture.ResourceVersions(ctx, remote.env.Client, remote.laid.Mine...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fixture.Gone(mine)).To(Equal(len(mine)), "this consumer's ShadowPods and pods are gone from the provider: %v", mine)
	theirs, err := fixture.ResourceVersions(ctx, remote.env.Client, remote.laid.Theirs...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(theirs).To(Equal(remote.laid.TheirsBefore), "the other consumer's ShadowPods and pods are untouched")
}

// provider is the dead provider's own side: its control plane and what runs there.
type provider struct {
	env  *harness.Env
	laid *fixture.Remote
}

// partitionedProvider starts p's own control plane (with kube-controller-manager, whose garbage collector
// deletes the pods of deleted ShadowPods), lays out what runs there (Liqo's cluster-ID ConfigMap, this
// consumer's ShadowPods and pods, another consumer's), puts it behind a proxy on this machine's address
// and names that proxy in the status of p's ForeignCluster, as Liqo's foreigncluster controller writes it,
// and in p's control-plane Identity with the provider's CA, as Liqo's authentication module does;
// the proxy is down (a partition) until the test brings it Up.
func partitionedProvider(t *testing.T, p *fixture.Provider) (*harness.Outage, *provider) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	host, err := harness.HostAddress()
	g.Expect(err).NotTo(HaveOccurred())
	// on this machine's address, with a certificate for it: the janitor's pods probe it, and fence verifies
	// it, against the CA Liqo's Identity names
	env, err := harness.Start(harness.Options{ControllerManager: true, AdvertiseAddress: host.String()})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if t.Failed() {
			env.KeepFiles()
		}
		g.Expect(env.Stop()).To(Succeed())
	})
	g.Expect(env.InstallLocalClusterID(ctx, "liqo", p.ID)).To(Succeed())
	laid, err := fixture.LayOutRemote(ctx, env.Client, p, localClusterID, "another-consumer")
	g.Expect(err).NotTo(HaveOccurred())
	link, err := env.NewOutageOn("partition", host)
	g.Expect(err).NotTo(HaveOccurred())
	link.Down()
	consumer := harness.Require(t).Client
	g.Expect(fixture.SetControlPlaneIdentity(ctx, consumer, p, "https://"+link.Addr, env.Config.CAData)).To(Succeed())
	g.Expect(fixture.SetAPIServerURL(ctx, consumer, p.ForeignCluster, "https://"+link.Addr)).To(Succeed())
	return link, &provider{env: env, laid: laid}
}

// runPlugin runs the kubectl plugin as the consumer's admin, with stdin (what the admin types), fails the
// test if it fails, and returns what it printed.
func runPlugin(t *testing.T, plugin, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), plugin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+harness.Require(t).KubeconfigPath)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), "kubectl liqo-janitor %s: %s", strings.Join(args, " "), out)
	return string(out)
}

// awaitReasons waits until an event with reason regards fc.
func awaitReasons(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster, reason string, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		var list eventsv1.EventList
		if err := c.List(ctx, &list); err != nil {
			return false, nil //nolint:nilerr // a slow API server: poll again
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == "ForeignCluster" && e.Regarding.Name == fc.Name && e.Reason == reason {
				return true, nil
			}
		}
		return false, nil
	})
}
