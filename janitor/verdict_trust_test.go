package janitor_test

import (
	"fmt"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// The janitor's trust boundaries and its rule to never get ahead of Liqo (the rules in the package
// documentation, janitor/doc.go), each against the real API server.

func mergePatch(format string, args ...any) client.Patch {
	return client.RawPatch(types.MergePatchType, fmt.Appendf(nil, format, args...))
}

// setSchedulingLabel puts (or, when on is false, removes) Liqo's liqo.io/scheduling-enabled label on ns.
func setSchedulingLabel(t *testing.T, ns string, on bool) {
	t.Helper()
	env := harness.Require(t)
	value := "null"
	if on {
		value = `"true"`
	}
	obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	NewWithT(t).Expect(env.Client.Patch(t.Context(), obj, mergePatch(`{"metadata":{"labels":{%q:%s}}}`, liqojanitor.SchedulingLabel, value))).To(Succeed())
}

// eventMessages lists the messages of the events about the object of that kind and name with that reason.
func eventMessages(t *testing.T, kind, name, reason string) []string {
	t.Helper()
	var msgs []string
	for _, e := range events(t) {
		if e.Regarding.Kind == kind && e.Regarding.Name == name && e.Reason == reason {
			msgs = append(msgs, e.Note)
		}
	}
	return msgs
}

func TestNamespaceOffloadingIsKeptWhileItsNamespaceCarriesTheSchedulingLabel(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 1, OffloadedNamespaces: 1})
	p, nso, ns := cons.Providers[0], cons.Offloadings[0], cons.Namespaces[0]
	setSchedulingLabel(t, ns, true) // Liqo's deletion has not run its first step (liqo-controller-manager down)
	kill(t, p)
	g.Expect(fixture.TerminateOffloadings(ctx, env.Client, cons)).To(Succeed())

	startJanitor(t, janitor.Options{})
	g.Expect(fixture.Mark(ctx, env.Client, p)).To(Succeed())
	g.Eventually(cleanupAnnotation(t, p)).WithTimeout(30*time.Second).
		Should(HaveSuffix("namespaceoffloadings 0/1, waiting for Liqo: "+ns), "the dead NamespaceMap is released, the offloading kept")
	g.Eventually(func() []string { return eventMessages(t, "ForeignCluster", p.ForeignCluster.Name, "WaitingForLiqo") }).
		Should(ContainElement(And(ContainSubstring(ns+"/offloading"), ContainSubstring("still carries liqo.io/scheduling-enabled"))))
	g.Expect(get(t, nso).Finalizers).To(ConsistOf(liqojanitor.NamespaceOffloadingFinalizer))

	// Liqo removes the label: the janitor sees it through its namespace watch, with no other event.
	setSchedulingLabel(t, ns, false)
	g.Eventually(gone(t, nso)).WithTimeout(30 * time.Second).Should(BeTrue())
	g.Eventually(cleanupAnnotation(t, p)).Should(HaveSuffix("namespaceoffloadings 1/1"))
}

func TestNamespaceOffloadingIsKeptWhileADeadNamespaceMapStillDesiresTheNamespace(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 1, OffloadedNamespaces: 1})
	p, nso, ns := cons.Providers[0], cons.Offloadings[0], cons.Namespaces[0]
	// The provider is dead and the namespace un-offloaded, but its NamespaceMap is not being deleted and
	// still lists the namespace: Liqo's second deletion step has not run.
	g.Expect(fixture.Kill(ctx, env.Client, p)).To(Succeed())
	g.Expect(fixture.TerminateOffloadings(ctx, env.Client, cons)).To(Succeed())

	startJanitor(t, janitor.Options{})
	g.Expect(fixture.Mark(ctx, env.Client, p)).To(Succeed())
	g.Eventually(cleanupAnnotation(t, p)).WithTimeout(30 * time.Second).Should(Equal("namespaceoffloadings 0/1, waiting for Liqo: " + ns))
	g.Eventually(func() []string { return eventMessages(t, "ForeignCluster", p.ForeignCluster.Name, "WaitingForLiqo") }).
		Should(ContainElement(ContainSubstring(fmt.Sprintf("NamespaceMap %s/%s (cluster %s) still lists namespace %s", p.TenantNS, p.NamespaceMap.Name, p.ID, ns))))
	g.Expect(get(t, nso).Finalizers).To(ConsistOf(liqojanitor.NamespaceOffloadingFinalizer))
	g.Expect(get(t, p.NamespaceMap).Finalizers).To(ConsistOf(liqojanitor.ReplicatorFinalizer), "a NamespaceMap not being deleted is never written")

	// Liqo removes the entry (a local patch, which works for a dead cluster too): the NamespaceMap watch
	// brings the janitor back, and the entry left for the dead cluster no longer holds the offloading.
	g.Expect(env.Client.Patch(ctx, p.NamespaceMap, mergePatch(`{"spec":{"desiredMapping":{%q:null}}}`, ns))).To(Succeed())
	g.Eventually(gone(t, nso)).WithTimeout(30 * time.Second).Should(BeTrue())
}

// TestADuplicateForeignClusterNeverCondemnsALiveProvider: with the gate absent, a second ForeignCluster
// naming a live provider's cluster ID is marked and confirmed. It has no APIServerStatus (Liqo probes only
// one ForeignCluster per cluster ID), so on its own it would look dead; the live provider's unpeering has
// left objects terminating. The janitor writes nothing of them.
func TestADuplicateForeignClusterNeverCondemnsALiveProvider(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 5})
	live := cons.Providers[0]
	g.Expect(fixture.Terminate(ctx, env.Client, live)).To(Succeed())
	dup := &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: live.ID + "-copy",
		Labels: map[string]string{liqojanitor.RemoteClusterIDLabel: live.ID}}, // as Liqo's own webhook labels it
		Spec: liqov1beta1.ForeignClusterSpec{ClusterID: liqov1beta1.ClusterID(live.ID)}}
	g.Expect(env.Client.Create(ctx, dup)).To(Succeed())
	before := rvs(t, append(live.Objects(), live.ForeignCluster)...)

	duplicate := map[string]string{"reason": string(janitor.WaitDuplicate)}
	seen := counter("liqo_janitor_waits_total", duplicate)
	startJanitor(t, janitor.Options{})
	g.Expect(fixture.MarkCluster(ctx, env.Client, dup)).To(Succeed())
	g.Eventually(func() float64 { return counter("liqo_janitor_waits_total", duplicate) }).WithTimeout(30*time.Second).
		Should(BeNumerically(">", seen), "a pass saw the live duplicate")
	g.Eventually(func() []string { return eventMessages(t, "ForeignCluster", dup.Name, "Waiting") }).
		Should(ContainElement(ContainSubstring("ForeignCluster " + live.ForeignCluster.Name + " has the same cluster ID")))
	g.Expect(rvs(t, append(live.Objects(), live.ForeignCluster)...)).To(Equal(before), "nothing of the live provider was written")
	g.Expect(get(t, dup).Annotations).NotTo(HaveKey(liqojanitor.CleanupAnnotation), "nor the duplicate's ForeignCluster")
}

// TestPodsAreTiedToAClusterByTheirVirtualNodeNotByNodeLabels: a live provider labels its virtual Node with
// the dead provider's cluster ID (Liqo merges the provider's ResourceSlice nodeLabels over the Node's
// labels). Its terminating pods are not the dead cluster's: its VirtualNode names the live cluster.
func TestPodsAreTiedToAClusterByTheirVirtualNodeNotByNodeLabels(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 2, PodsPerProvider: 4})
	dead, liar := cons.Providers[0], cons.Providers[1]
	g.Expect(env.Client.Patch(ctx, liar.Node, mergePatch(`{"metadata":{"labels":{%q:%q}}}`, liqojanitor.RemoteClusterIDLabel, dead.ID))).To(Succeed())
	for _, pod := range liar.Pods {
		g.Expect(env.Client.Delete(ctx, pod, client.GracePeriodSeconds(30))).To(Succeed()) // its kubelet will finish them
	}
	kill(t, dead)
	var liars []client.Object
	for _, pod := range liar.Pods {
		liars = append(liars, pod)
	}
	before := rvs(t, liars...)

	startJanitor(t, janitor.Options{})
	g.Expect(fixture.Mark(ctx, env.Client, dead)).To(Succeed())
	g.Eventually(cleanupAnnotation(t, dead)).WithTimeout(30 * time.Second).Should(HavePrefix("pods 4/4,"))
	g.Expect(podsLeft(t, dead)).To(BeZero())
	g.Expect(rvs(t, liars...)).To(Equal(before), "the live provider's pods were not touched")
}

// TestRunningPodsOfADeadClustersDeletedVirtualNodeAreReleased: Liqo v1.0's drain of a deleted VirtualNode
// evicts, and a PodDisruptionBudget can refuse every eviction forever; the janitor force-deletes every pod
// bound to its Node, running or not, but DaemonSet pods. Before the VirtualNode is deleted, running pods
// are never written.
func TestRunningPodsOfADeadClustersDeletedVirtualNodeAreReleased(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 6})
	p := cons.Providers[0]
	ds := p.Pods[0]
	g.Expect(env.Client.Patch(ctx, ds, mergePatch(`{"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"DaemonSet","name":"kube-proxy","uid":"00000000-0000-0000-0000-000000000001"}]}}`))).To(Succeed())
	g.Expect(env.Client.Delete(ctx, p.Pods[1], client.GracePeriodSeconds(30))).To(Succeed()) // one already terminating
	g.Expect(fixture.Kill(ctx, env.Client, p)).To(Succeed())
	running := rvs(t, p.Pods[2], p.Pods[3], p.Pods[4], p.Pods[5], ds)

	startJanitor(t, janitor.Options{})
	g.Expect(fixture.Mark(ctx, env.Client, p)).To(Succeed())
	g.Eventually(cleanupAnnotation(t, p)).WithTimeout(30 * time.Second).Should(Equal("pods 1/1"))
	g.Expect(rvs(t, p.Pods[2], p.Pods[3], p.Pods[4], p.Pods[5], ds)).To(Equal(running), "running pods are left alone while the VirtualNode lives")

	g.Expect(env.Client.Delete(ctx, p.VirtualNode)).To(Succeed()) // Liqo's finalizer holds it: its drain runs
	g.Eventually(func() int { return podsLeft(t, p) }).WithTimeout(30*time.Second).Should(Equal(1), "all but the DaemonSet pod")
	g.Expect(gone(t, ds)()).To(BeFalse(), "a DaemonSet pod goes with the Node, as in Liqo's own drain")
	g.Expect(get(t, ds).DeletionTimestamp).To(BeNil())
	g.Eventually(cleanupAnnotation(t, p)).Should(Equal("pods 5/6, blocked 1"), "the DaemonSet pod Liqo's drain leaves is counted as blocked")
}

func TestTheOperatorsReasonIsQuotedInTheCleanupEvents(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 2})
	p := cons.Providers[0]
	kill(t, p)
	startJanitor(t, janitor.Options{})
	g.Expect(fixture.Mark(ctx, env.Client, p, liqojanitor.ReasonAnnotation, "data centre flooded")).To(Succeed())
	for _, reason := range []string{"CleanupStarted", "CleanupDone"} {
		g.Eventually(func() []string { return eventMessages(t, "ForeignCluster", p.ForeignCluster.Name, reason) }).
			WithTimeout(30*time.Second).Should(ContainElement(ContainSubstring(`"data centre flooded"`)), reason)
	}
	g.Eventually(func() []string { return eventMessages(t, "ForeignCluster", p.ForeignCluster.Name, "Released") }).
		Should(ContainElement(ContainSubstring(`"data centre flooded"`)), "the events per kind quote it too")
}

// TestEventsScale: one Released event per kind per pass on the ForeignCluster, with the count and the
// first and last object; an event on every released object only with --object-events.
func TestEventsScale(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 2, PodsPerProvider: 6})
	quiet, loud := cons.Providers[0], cons.Providers[1]
	kill(t, quiet)
	stop := startJanitor(t, janitor.Options{})
	g.Expect(fixture.Mark(ctx, env.Client, quiet)).To(Succeed())
	g.Eventually(func() int { return podsLeft(t, quiet) }).WithTimeout(30 * time.Second).Should(BeZero())
	g.Eventually(func() []string { return eventMessages(t, "ForeignCluster", quiet.ForeignCluster.Name, "Released") }).
		Should(ContainElement(MatchRegexp(`^Released 6 pods of cluster %s \(first \S+/\S+, last \S+/\S+\)$`, quiet.ID)))
	for _, pod := range quiet.Pods {
		g.Expect(eventReasons(t, "Pod", pod.Name)).To(BeEmpty(), "no event per pod")
	}
	g.Expect(eventReasons(t, "ResourceSlice", quiet.ResourceSlice.Name)).To(BeEmpty(), "no event per ResourceSlice")
	stop()

	kill(t, loud)
	startJanitor(t, janitor.Options{ObjectEvents: true})
	g.Expect(fixture.Mark(ctx, env.Client, loud)).To(Succeed())
	g.Eventually(func() []string { return eventReasons(t, "ResourceSlice", loud.ResourceSlice.Name) }).WithTimeout(time.Minute).
		Should(ContainElement("Released"), "--object-events: one per object")
	g.Eventually(func() []string { return eventReasons(t, "Pod", loud.Pods[0].Name) }).Should(ContainElement("Released"))
}

// TestAMarkedAtFromTheFutureIsIgnored (janitor rule 21): a marked-at a year ahead — written past the gate,
// which stamps its own clock — would hold the grace period until then; the janitor counts it as no stamp,
// so the grace period runs from its own first sight and the clean-up follows.
func TestAMarkedAtFromTheFutureIsIgnored(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	p := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 2}).Providers[0]
	kill(t, p)
	startJanitor(t, janitor.Options{GracePeriod: time.Second})
	future := time.Now().AddDate(1, 0, 0).UTC().Format(time.RFC3339)
	g.Expect(fixture.Mark(t.Context(), env.Client, p, liqojanitor.MarkedAtAnnotation, future)).To(Succeed())
	g.Eventually(cleanupAnnotation(t, p)).WithTimeout(30 * time.Second).Should(HavePrefix("pods 2/2"))
	ends, err := time.Parse(time.RFC3339, get(t, p.ForeignCluster).Annotations[liqojanitor.GraceEndsAnnotation])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ends).To(BeTemporally("<", time.Now().Add(time.Minute)), "the grace period ends by the janitor's clock, not the stamp's")
}
