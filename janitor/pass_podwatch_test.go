package janitor_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// podWatchEvents is how many pod events the API server has sent to watchers so far.
func podWatchEvents(t *testing.T) float64 {
	t.Helper()
	env := harness.Require(t)
	n, err := env.APIServerMetric(t.Context(), "apiserver_watch_events_total", map[string]string{"resource": "pods"})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return n
}

// Each pod a pass force-deletes would be two watch events (MODIFIED, DELETED) to the janitor's own watch
// of the node's pods: at thousands of pods more than the API server's watch buffer holds, so it closes
// the watch and serves a re-watch (test/e2e/bench/REPORT.md). A pass does not watch its own writes: its
// deletes cost the API server's watchers no more events than the same deletes sent by a plain client, plus
// the node's list.
func TestAPassDoesNotWatchItsOwnPodDeletes(t *testing.T) {
	g := NewWithT(t)
	env := harness.Require(t)
	ctx := t.Context()
	const pods = 400
	cons := build(t, fixture.Spec{Providers: 2, PodsPerProvider: pods})
	byJanitor, byHand := cons.Providers[0], cons.Providers[1]
	kill(t, byJanitor)
	kill(t, byHand)

	// The API server has watchers of its own (the Node authorizer's graph watches every pod): what the
	// same force-deletes cost without the janitor is the baseline.
	before := podWatchEvents(t)
	for _, pod := range byHand.Pods {
		g.Expect(env.Client.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID})).To(Succeed())
	}
	g.Eventually(func() int { return podsLeft(t, byHand) }).Should(BeZero())
	baseline := podWatchEvents(t) - before

	startJanitor(t, janitor.Options{})
	before = podWatchEvents(t)
	g.Expect(fixture.Mark(ctx, env.Client, byJanitor)).To(Succeed())
	g.Eventually(cleanupAnnotation(t, byJanitor)).WithTimeout(60 * time.Second).Should(HavePrefix(fmt.Sprintf("pods %d/%d", pods, pods)))
	g.Expect(podsLeft(t, byJanitor)).To(BeZero())
	// The janitor's one cost is listing the node when its watch starts: client-go streams that list as
	// watch events (WatchListClient, on by default since 1.35), one per pod. Its own deletes streamed
	// back would add two per pod.
	g.Expect(podWatchEvents(t)-before-baseline).To(BeNumerically("<", pods*3/2),
		"the pass's own deletes must not stream back to it")
}

// The pods a pass leaves on purpose — one a foreign finalizer keeps, a pod on the node that Liqo's drain
// would not select is not even listed — must not start pass after pass when the node's watch resumes.
func TestPodsLeftOnPurposeStartNoPasses(t *testing.T) {
	g := NewWithT(t)
	env := harness.Require(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 3})
	dead := cons.Providers[0]
	g.Expect(env.Client.Patch(ctx, dead.Pods[0], client.RawPatch(types.JSONPatchType,
		fmt.Appendf(nil, `[{"op":"add","path":"/metadata/finalizers","value":[%q]}]`, fixture.ForeignFinalizer)))).To(Succeed())
	kill(t, dead)
	startJanitor(t, janitor.Options{})
	g.Expect(fixture.Mark(ctx, env.Client, dead)).To(Succeed())
	g.Eventually(cleanupAnnotation(t, dead)).WithTimeout(30 * time.Second).Should(HavePrefix("pods 2/3"))

	passes := func() float64 {
		return counter("controller_runtime_reconcile_total", map[string]string{"controller": "liqo-janitor"})
	}
	// The force-deleted pod's deletion changed it after the pass listed it: one more pass (writing
	// nothing) sees it as it now is; from then on its watch has no news.
	g.Eventually(func(g Gomega) {
		n := passes()
		g.Consistently(passes).WithTimeout(time.Second).Should(Equal(n))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	g.Consistently(passes).WithTimeout(3*time.Second).Should(Equal(passes()), "no pass without news")
	g.Expect(get(t, dead.Pods[0]).Finalizers).To(Equal([]string{fixture.ForeignFinalizer}))
}

// While a pass writes, the node's pods are not watched; a terminating pod bound to the node meanwhile is
// found when the watch resumes and released by the next pass.
func TestAPodBoundDuringAPassIsReleasedAfterIt(t *testing.T) {
	g := NewWithT(t)
	env := harness.Require(t)
	ctx := t.Context()
	const pods = 500
	dead := build(t, fixture.Spec{Providers: 1, PodsPerProvider: pods}).Providers[0]
	kill(t, dead)
	cs, err := kubernetes.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	w, err := cs.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + dead.Node.Name})
	g.Expect(err).NotTo(HaveOccurred())
	defer w.Stop()
	startJanitor(t, janitor.Options{})
	g.Expect(fixture.Mark(ctx, env.Client, dead)).To(Succeed())

	// the first force-delete: the pass has listed the node's pods and is writing
	for ev := range w.ResultChan() {
		if ev.Type == watch.Deleted {
			break
		}
	}
	late := fixture.NewPod(dead, "default", dead.ID+"-late", true)
	g.Expect(env.Client.Create(ctx, late)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, late, client.GracePeriodSeconds(30))).To(Succeed())
	var onNode corev1.PodList
	g.Expect(env.Client.List(ctx, &onNode, client.MatchingFields{"spec.nodeName": dead.Node.Name})).To(Succeed())
	g.Expect(len(onNode.Items)).To(BeNumerically(">", 1), "bound while the pass was still deleting")

	g.Eventually(gone(t, late)).WithTimeout(30*time.Second).Should(BeTrue(), "found when the watch resumed")
	g.Eventually(cleanupAnnotation(t, dead)).WithTimeout(30 * time.Second).Should(HavePrefix(fmt.Sprintf("pods %d/%d", pods+1, pods+1)))
}
