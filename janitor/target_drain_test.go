package janitor_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// The drain does exactly what Liqo's does (janitor rule 4, target_pods.go listPods): on the Node of a dead
// cluster's VirtualNode that is being deleted, the pods that are not terminating are force-deleted only
// when Liqo's own drain selects them (virtualnode-controller/drain.go getPodsForDeletion: labelled
// liqo.io/shadowPod=true, not DaemonSet, not mirror pods). Every other such pod is left alone and counted
// as blocked; terminating pods go whatever they are.

// notLiqosPods binds to p's virtual node one pod of each kind Liqo's drain does not select, not
// terminating: one not labelled liqo.io/shadowPod=true, and two labelled so but owned by a DaemonSet and a
// mirror pod; and one more unlabelled pod that is terminating.
func notLiqosPods(t *testing.T, p *fixture.Provider) (alone []*corev1.Pod, terminating *corev1.Pod) {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	stranger, err := fixture.BindPod(ctx, env.Client, p, "default", p.ID+"-stranger", false)
	g.Expect(err).NotTo(HaveOccurred())
	ds := fixture.NewPod(p, "default", p.ID+"-daemon", true)
	ds.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "00000000-0000-0000-0000-000000000002"}}
	g.Expect(env.Client.Create(ctx, ds)).To(Succeed())
	mirror := fixture.NewPod(p, "default", p.ID+"-mirror", true)
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "0123456789abcdef"}
	g.Expect(env.Client.Create(ctx, mirror)).To(Succeed())
	terminating, err = fixture.BindPod(ctx, env.Client, p, "default", p.ID+"-leaving", false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Client.Delete(ctx, terminating, client.GracePeriodSeconds(30))).To(Succeed())
	return []*corev1.Pod{stranger, ds, mirror}, terminating
}

func objects(pods []*corev1.Pod) []client.Object {
	out := make([]client.Object, 0, len(pods))
	for _, pod := range pods {
		out = append(out, pod)
	}
	return out
}

func TestTheDrainDeletesOnlyThePodsLiqosDrainSelects(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	p := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 3}).Providers[0]
	alone, terminating := notLiqosPods(t, p)
	g.Expect(fixture.Kill(ctx, env.Client, p)).To(Succeed())
	before := rvs(t, objects(alone)...)

	startJanitor(t, janitor.Options{})
	g.Expect(fixture.Mark(ctx, env.Client, p)).To(Succeed())
	g.Eventually(cleanupAnnotation(t, p)).WithTimeout(30*time.Second).Should(Equal("pods 1/1"),
		"a terminating pod goes, Liqo's or not")
	g.Expect(gone(t, terminating)()).To(BeTrue())

	g.Expect(env.Client.Delete(ctx, p.VirtualNode)).To(Succeed()) // Liqo's finalizer holds it: its drain runs
	g.Eventually(func() int { return podsLeft(t, p) }).WithTimeout(30*time.Second).Should(BeZero(), "Liqo's offloaded pods go")
	g.Eventually(cleanupAnnotation(t, p)).Should(Equal("pods 4/7, blocked 3"), "the pods Liqo's drain leaves are counted as blocked")
	g.Expect(rvs(t, objects(alone)...)).To(Equal(before), "and never written")
	g.Expect(counter("liqo_janitor_blocked_objects", map[string]string{"kind": "Pod"})).To(BeNumerically(">=", 3))
}

// TestPodsLiqosDrainLeavesAreLoggedWithTheirReason: one pass over the same layout, its log captured.
func TestPodsLiqosDrainLeavesAreLoggedWithTheirReason(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	p := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 2}).Providers[0]
	alone, _ := notLiqosPods(t, p)
	g.Expect(fixture.Kill(t.Context(), env.Client, p)).To(Succeed())
	g.Expect(env.Client.Delete(t.Context(), p.VirtualNode)).To(Succeed())
	g.Expect(fixture.Mark(t.Context(), env.Client, p)).To(Succeed())
	before := rvs(t, objects(alone)...)

	var mu sync.Mutex
	var lines []string
	log := funcr.New(func(_, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})
	ctx := ctrl.LoggerInto(t.Context(), log)
	res, err := janitor.Pass(ctx, env.Client, env.Client, metadataClient(t), p.ForeignCluster.Name, janitor.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Kinds).To(Equal(map[string]janitor.PassCounts{"Pod": {Released: 3, Blocked: 3}}))
	g.Expect(podsLeft(t, p)).To(BeZero())
	g.Expect(rvs(t, objects(alone)...)).To(Equal(before))

	mu.Lock()
	defer mu.Unlock()
	for pod, why := range map[string]string{
		alone[0].Name: `"reason"="not labelled liqo.io/shadowPod=true`,
		alone[1].Name: `"reason"="owned by a DaemonSet`,
		alone[2].Name: `"reason"="a mirror pod`,
	} {
		g.Expect(slices.ContainsFunc(lines, func(l string) bool {
			return strings.Contains(l, `"name"="`+pod+`"`) && strings.Contains(l, "Liqo's drain does not select it") && strings.Contains(l, why)
		})).To(BeTrue(), "a log line names %s and why it is left alone (%s); got %v", pod, why, lines)
	}
}
