package podwatch_test

import (
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/liqo-janitor/liqo-janitor/janitor/internal/podwatch"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

func TestMain(m *testing.M) {
	os.Exit(harness.Run(m, harness.Options{}, nil))
}

// A pod watch resumed after a pass enqueues its cluster for what changed while it was paused — a pod
// bound to the node, a pod the pass left that went — and for nothing else.
func TestAResumedPodWatchReportsOnlyWhatChanged(t *testing.T) {
	g := NewWithT(t)
	env := harness.Require(t)
	ctx := t.Context()
	cons, err := fixture.Build(ctx, env.Client, fixture.Spec{Prefix: "podwatch", Providers: 1, PodsPerProvider: 3})
	g.Expect(err).NotTo(HaveOccurred())
	dead := cons.Providers[0]
	g.Expect(fixture.Kill(ctx, env.Client, dead)).To(Succeed())
	g.Expect(fixture.Terminate(ctx, env.Client, dead)).To(Succeed())
	mc, err := metadata.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	pw := podwatch.New(mc)
	go func() { _ = pw.Start(ctx) }()
	cluster, node := dead.ForeignCluster.Name, dead.Node.Name
	left, err := pw.Pods(ctx, cluster, node, false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(left).To(HaveLen(3))
	noNews := func() { g.Consistently(pw.Events()).WithTimeout(2 * time.Second).ShouldNot(Receive()) }
	news := func(why string) { g.Eventually(pw.Events()).WithTimeout(10*time.Second).Should(Receive(), why) }
	// resume gives the watch what a pass left on node: the pods as listed.
	resume := func(left []client.Object) {
		onNode := podwatch.Left{node: {}}
		for _, pod := range left {
			onNode[node][pod.GetUID()] = pod.GetResourceVersion()
		}
		pw.Resume(cluster, onNode)
	}
	noNews()

	pw.Pause(cluster)
	resume(left)
	noNews() // the pods as the pass left them: no pass

	pw.Pause(cluster)
	late := fixture.NewPod(dead, "default", dead.ID+"-late", true)
	g.Expect(env.Client.Create(ctx, late)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, late, client.GracePeriodSeconds(30))).To(Succeed())
	resume(left)
	news("a terminating pod bound while paused")
	noNews()

	left, err = pw.Pods(ctx, cluster, node, false)
	g.Expect(err).NotTo(HaveOccurred())
	pw.Pause(cluster)
	uid := left[0].GetUID()
	g.Expect(env.Client.Delete(ctx, left[0], client.GracePeriodSeconds(0), client.Preconditions{UID: &uid})).To(Succeed())
	resume(left)
	news("a pod the pass left went while paused")
	noNews()
}
