package janitor_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	. "github.com/onsi/gomega"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

func TestOneOfThreeProvidersDies(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 3, PodsPerProvider: 20, OffloadedNamespaces: 2})
	dead, live := cons.Providers[0], cons.Providers[1:]

	// A ResourceSlice the dead peer replicated to us (not our copy) and a live Renew of the dead peer:
	// neither may be written, the first because it is not ours, the second because it is not terminating.
	pushed := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "pushed", Namespace: dead.TenantNS,
		Finalizers: []string{liqojanitor.ReplicatorFinalizer},
		Labels:     map[string]string{liqojanitor.RemoteClusterIDLabel: dead.ID, liqojanitor.ReplicationLabel: "false", "liqo.io/replicated": "true"}}}
	g.Expect(env.Client.Create(ctx, pushed)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, pushed)).To(Succeed())
	// A terminating copy labelled with the dead cluster's ID but routed to a live one (liqo.io/remoteID,
	// what the crdReplicator sends on): not the dead cluster's.
	misrouted := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "misrouted", Namespace: dead.TenantNS,
		Finalizers: []string{liqojanitor.ReplicatorFinalizer},
		Labels: map[string]string{liqojanitor.RemoteClusterIDLabel: dead.ID, liqojanitor.ReplicationLabel: "true",
			liqojanitor.RemoteIDLabel: live[0].ID}}}
	g.Expect(env.Client.Create(ctx, misrouted)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, misrouted)).To(Succeed())
	kill(t, dead)
	renew := &authv1beta1.Renew{ObjectMeta: metav1.ObjectMeta{Name: "permanent", Namespace: dead.TenantNS,
		Labels: map[string]string{liqojanitor.RemoteClusterIDLabel: dead.ID, liqojanitor.ReplicationLabel: "true"}}}
	g.Expect(env.Client.Create(ctx, renew)).To(Succeed())

	var untouched []client.Object
	for _, p := range live {
		untouched = append(untouched, p.Objects()...)
		untouched = append(untouched, p.ForeignCluster)
	}
	for _, nso := range cons.Offloadings {
		untouched = append(untouched, nso)
	}
	untouched = append(untouched, pushed, misrouted, renew, dead.VirtualNode, dead.IdentitySecret)
	before := rvs(t, untouched...)

	startJanitor(t, janitor.Options{})
	g.Expect(fixture.Mark(ctx, env.Client, dead)).To(Succeed())

	g.Eventually(cleanupAnnotation(t, dead)).WithTimeout(30 * time.Second).
		Should(Equal("pods 20/20, resourceslices 1/1, namespacemaps 1/1, renews 1/1"))
	for _, obj := range []client.Object{dead.ResourceSlice, dead.NamespaceMap, dead.Renew} {
		g.Expect(gone(t, obj)()).To(BeTrue(), "%T %s released", obj, obj.GetName())
	}
	g.Expect(podsLeft(t, dead)).To(BeZero())
	g.Expect(rvs(t, untouched...)).To(Equal(before), "nothing of the live providers, nothing not ours, nothing not terminating was written")
	g.Expect(get(t, dead.IdentitySecret).Finalizers).To(ConsistOf(liqojanitor.ReplicatorOperatorFinalizer), "identity Secrets are opt-in")
	g.Eventually(func() []string { return eventReasons(t, "ForeignCluster", dead.ForeignCluster.Name) }).
		Should(ContainElements("CleanupStarted", "CleanupDone"))
	g.Eventually(func() []string { return eventMessages(t, "ForeignCluster", dead.ForeignCluster.Name, "Released") }).WithTimeout(10*time.Second).
		Should(ContainElements(HavePrefix("Released 1 resourceslices of cluster "+dead.ID), HavePrefix("Released 1 namespacemaps of cluster "+dead.ID),
			HavePrefix(fmt.Sprintf("Released %d pods of cluster %s", len(dead.Pods), dead.ID))), "one event per kind per pass")
	g.Expect(eventReasons(t, "ResourceSlice", dead.ResourceSlice.Name)).To(BeEmpty(), "no event per object without --object-events")
}

func TestTerminatingPodAppearingOnADeadNodeIsReleasedWithinSeconds(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	p := markedDead(t, fixture.Spec{PodsPerProvider: 2}, janitor.Options{})
	g.Eventually(cleanupAnnotation(t, p)).WithTimeout(30 * time.Second).Should(HavePrefix("pods 2/2"))

	// later, a pod is bound to the dead node (say, a controller that still believes in it) and deleted
	late := p.Pods[0].DeepCopy()
	late.ObjectMeta = metav1.ObjectMeta{Name: p.ID + "-late", Namespace: late.Namespace}
	g.Expect(env.Client.Create(ctx, late)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, late, client.GracePeriodSeconds(30))).To(Succeed())
	g.Eventually(gone(t, late)).WithTimeout(5*time.Second).Should(BeTrue(), "watched, not polled")
}

func TestNamespaceOffloadingSpanningADeadAndALiveProvider(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 2, OffloadedNamespaces: 1})
	dead, live, nso := cons.Providers[0], cons.Providers[1], cons.Offloadings[0]
	kill(t, dead)
	g.Expect(fixture.TerminateOffloadings(ctx, env.Client, cons)).To(Succeed())

	startJanitor(t, janitor.Options{})
	g.Expect(fixture.Mark(ctx, env.Client, dead)).To(Succeed())
	g.Eventually(cleanupAnnotation(t, dead)).WithTimeout(30*time.Second).Should(ContainSubstring("namespaceoffloadings 0/1"),
		"the pass saw the NamespaceOffloading and kept it")
	g.Expect(get(t, nso).Finalizers).To(ConsistOf(liqojanitor.NamespaceOffloadingFinalizer), "the live provider still has its entry")

	// Liqo's own deletion reaches the live provider: its desiredMapping entry and its condition go.
	g.Expect(env.Client.Patch(ctx, live.NamespaceMap, client.RawPatch(types.MergePatchType,
		fmt.Appendf(nil, `{"spec":{"desiredMapping":{%q:null}}}`, nso.Namespace)))).To(Succeed())
	latest := get(t, nso)
	delete(latest.Status.RemoteNamespacesConditions, live.NamespaceMap.Name)
	g.Expect(env.Client.Status().Update(ctx, latest)).To(Succeed())

	g.Eventually(gone(t, nso)).WithTimeout(30*time.Second).Should(BeTrue(), "released once no live entry is left")
	g.Expect(get(t, live.NamespaceMap).Finalizers).To(ConsistOf(liqojanitor.ReplicatorFinalizer), "the live NamespaceMap keeps its finalizer")
}

func TestForeignFinalizersSurviveAndAreCountedAsBlocked(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 3})
	dead := cons.Providers[0]
	g.Expect(env.Client.Patch(ctx, dead.ResourceSlice, client.RawPatch(types.JSONPatchType,
		fmt.Appendf(nil, `[{"op":"add","path":"/metadata/finalizers/-","value":%q}]`, fixture.ForeignFinalizer)))).To(Succeed())
	g.Expect(env.Client.Patch(ctx, dead.Pods[0], client.RawPatch(types.JSONPatchType,
		fmt.Appendf(nil, `[{"op":"add","path":"/metadata/finalizers","value":[%q]}]`, fixture.ForeignFinalizer)))).To(Succeed())
	kill(t, dead)
	startJanitor(t, janitor.Options{})
	g.Expect(fixture.Mark(ctx, env.Client, dead)).To(Succeed())

	g.Eventually(cleanupAnnotation(t, dead)).WithTimeout(30 * time.Second).
		Should(Equal("pods 2/3, resourceslices 0/1, namespacemaps 1/1, renews 1/1, blocked 2"))
	g.Expect(get(t, dead.ResourceSlice).Finalizers).To(Equal([]string{fixture.ForeignFinalizer}), "ours removed, theirs kept")
	pod := get(t, dead.Pods[0])
	g.Expect(pod.Finalizers).To(Equal([]string{fixture.ForeignFinalizer}), "a pod's finalizers are never stripped")
	g.Expect(pod.DeletionGracePeriodSeconds).To(HaveValue(BeZero()), "it goes as soon as its owner releases it")
	g.Expect(counter("liqo_janitor_blocked_objects", map[string]string{"kind": "Pod"})).To(BeNumerically(">=", 1))
	g.Expect(counter("liqo_janitor_pending_objects", map[string]string{"kind": "ResourceSlice"})).To(BeNumerically(">=", 1),
		"what is left counts as pending, for the alert on unfinished clean-ups")
	g.Eventually(func() []string { return eventReasons(t, "ForeignCluster", dead.ForeignCluster.Name) }).Should(ContainElement("CleanupBlocked"))

	// the owner releases its finalizers: both go, and the janitor reports the job done
	for _, obj := range []client.Object{dead.ResourceSlice, dead.Pods[0]} {
		g.Expect(env.Client.Patch(ctx, obj, client.RawPatch(types.JSONPatchType,
			[]byte(`[{"op":"remove","path":"/metadata/finalizers/0"}]`)))).To(Succeed())
		g.Eventually(gone(t, obj)).Should(BeTrue())
	}
	g.Eventually(cleanupAnnotation(t, dead)).WithTimeout(30 * time.Second).Should(Equal("pods 3/3, resourceslices 1/1, namespacemaps 1/1, renews 1/1"))
}

func TestProviderComingBackMidCleanupStopsTheJanitor(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	p := markedDead(t, fixture.Spec{PodsPerProvider: 300}, janitor.Options{Workers: 1, BatchSize: 5})
	g.Eventually(func() int { return podsLeft(t, p) }).WithPolling(10*time.Millisecond).WithTimeout(30*time.Second).
		Should(BeNumerically("<=", 290), "releasing has begun")

	reachable := map[string]string{"reason": string(janitor.WaitReturned)}
	seen := counter("liqo_janitor_waits_total", reachable)
	g.Expect(fixture.Revive(ctx, env.Client, p)).To(Succeed())
	g.Eventually(func() float64 { return counter("liqo_janitor_waits_total", reachable) }).Should(BeNumerically(">", seen),
		"a pass saw the provider answering")
	left := podsLeft(t, p)
	g.Expect(left).To(BeNumerically(">", 0), "it stopped before the end")

	seen = counter("liqo_janitor_waits_total", reachable)
	g.Expect(fixture.Annotate(ctx, env.Client, p.ForeignCluster, map[string]*string{"example.com/poke": ptr.To("1")})).To(Succeed())
	g.Eventually(func() float64 { return counter("liqo_janitor_waits_total", reachable) }).Should(BeNumerically(">", seen))
	g.Expect(podsLeft(t, p)).To(Equal(left), "nothing more is written while the provider answers")
	g.Expect(eventReasons(t, "ForeignCluster", p.ForeignCluster.Name)).To(ContainElements("CleanupStopped", "ProviderReturned"))
	g.Expect(cleanupAnnotation(t, p)()).To(HavePrefix(liqojanitor.ReturnedPrefix))
}

func TestMarkRemovedDuringTheGracePeriodWritesNothing(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 2, PodsPerProvider: 5})
	undone, control := cons.Providers[0], cons.Providers[1]
	kill(t, undone)
	kill(t, control)
	startJanitor(t, janitor.Options{GracePeriod: 3 * time.Second})
	g.Expect(fixture.Mark(ctx, env.Client, undone, markedAtNow()...)).To(Succeed())
	g.Expect(fixture.Mark(ctx, env.Client, control, markedAtNow()...)).To(Succeed())
	g.Expect(fixture.Annotate(ctx, env.Client, undone.ForeignCluster, map[string]*string{liqojanitor.MarkAnnotation: nil})).To(Succeed())
	before := rvs(t, append(undone.Objects(), undone.ForeignCluster)...)

	// the control cluster, marked at the same moment with the same grace period, is released once it ends
	g.Eventually(cleanupAnnotation(t, control)).WithTimeout(30 * time.Second).Should(HavePrefix("pods 5/5"))
	g.Expect(rvs(t, append(undone.Objects(), undone.ForeignCluster)...)).To(Equal(before))
}

func TestPausedClusterIsLeftAlone(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 5})
	p := cons.Providers[0]
	kill(t, p)
	paused := map[string]string{"reason": string(janitor.WaitPaused)}
	seen := counter("liqo_janitor_waits_total", paused)
	startJanitor(t, janitor.Options{})
	g.Expect(fixture.Mark(ctx, env.Client, p, liqojanitor.PausedAnnotation, "true")).To(Succeed())
	before := rvs(t, append(p.Objects(), p.ForeignCluster)...)
	g.Eventually(func() float64 { return counter("liqo_janitor_waits_total", paused) }).WithTimeout(30 * time.Second).Should(BeNumerically(">", seen))
	g.Expect(rvs(t, append(p.Objects(), p.ForeignCluster)...)).To(Equal(before))
	g.Expect(eventReasons(t, "ForeignCluster", p.ForeignCluster.Name)).To(ContainElement("Waiting"))

	g.Expect(fixture.Annotate(ctx, env.Client, p.ForeignCluster, map[string]*string{liqojanitor.PausedAnnotation: nil})).To(Succeed())
	g.Eventually(func() int { return podsLeft(t, p) }).WithTimeout(30*time.Second).Should(BeZero(), "unpaused, it proceeds")
}

func TestDryRunWritesNothingButEvents(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 5})
	p := cons.Providers[0]
	kill(t, p)
	dry := map[string]string{"result": "dry_run"}
	seen := counter("liqo_janitor_objects_total", dry)
	startJanitor(t, janitor.Options{DryRun: true})
	g.Expect(fixture.Mark(ctx, env.Client, p)).To(Succeed())
	before := rvs(t, append(p.Objects(), p.ForeignCluster)...)
	g.Eventually(func() float64 { return counter("liqo_janitor_objects_total", dry) }).WithTimeout(30*time.Second).
		Should(BeNumerically(">=", seen+8), "5 pods, a ResourceSlice, a NamespaceMap and a Renew would be released")
	g.Expect(rvs(t, append(p.Objects(), p.ForeignCluster)...)).To(Equal(before))
	g.Eventually(func() []string { return eventMessages(t, "ForeignCluster", p.ForeignCluster.Name, "WouldRelease") }).
		Should(ContainElement(HavePrefix("Dry run: would release 5 pods of cluster " + p.ID)))
}

// TestConcurrentFinalizerWriterLosesNothing: while the janitor removes its finalizer from a ResourceSlice,
// another controller removes its own finalizers from the same list as fast as it can (the API server
// forbids adding finalizers to an object being deleted). Every write either of them makes must leave all
// of the other's entries in place.
func TestConcurrentFinalizerWriterLosesNothing(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 1})
	p := cons.Providers[0]
	var theirs []string
	for i := range 200 {
		theirs = append(theirs, fmt.Sprintf("example.com/writer-%03d", i))
	}
	// our finalizer sits behind 100 of theirs, so each of their removals moves its index
	list := slices.Concat(theirs[:100], []string{liqojanitor.ReplicatorFinalizer}, theirs[100:])
	patch, _ := json.Marshal([]map[string]any{{"op": "replace", "path": "/metadata/finalizers", "value": list}})
	g.Expect(env.Client.Patch(ctx, p.ResourceSlice, client.RawPatch(types.JSONPatchType, patch))).To(Succeed())
	kill(t, p)

	startJanitor(t, janitor.Options{Workers: 1})
	writerDone := make(chan []string)
	go func() { writerDone <- removeOwnFinalizers(t, p.ResourceSlice, theirs[:150]) }()
	g.Expect(fixture.Mark(ctx, env.Client, p)).To(Succeed())
	violations := <-writerDone
	g.Expect(violations).To(BeEmpty())

	g.Eventually(func() []string { return get(t, p.ResourceSlice).Finalizers }).WithTimeout(30*time.Second).
		Should(Equal(theirs[150:]), "ours is gone; every entry of theirs not removed by them is there, in order")
}

// removeOwnFinalizers removes each of mine, one write at a time with a test op on the exact entry, and
// checks after every write that all of mine not yet removed are still there; it returns violations.
func removeOwnFinalizers(t *testing.T, rs *authv1beta1.ResourceSlice, mine []string) []string {
	t.Helper()
	env := harness.Require(t)
	ctx := t.Context()
	var violations []string
	remaining := slices.Clone(mine)
	for len(remaining) > 0 {
		cur := &authv1beta1.ResourceSlice{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(rs), cur); err != nil {
			return append(violations, err.Error())
		}
		i := slices.Index(cur.Finalizers, remaining[0])
		if i < 0 {
			return append(violations, "lost "+remaining[0])
		}
		patch := fmt.Appendf(nil, `[{"op":"test","path":"/metadata/finalizers/%d","value":%q},{"op":"remove","path":"/metadata/finalizers/%d"}]`,
			i, remaining[0], i)
		if err := env.Client.Patch(ctx, cur, client.RawPatch(types.JSONPatchType, patch)); err != nil {
			continue // the janitor moved the list: re-read and retry
		}
		remaining = remaining[1:]
		for _, f := range append(slices.Clone(remaining), mine[len(mine):]...) {
			if !slices.Contains(cur.Finalizers, f) {
				violations = append(violations, "after a write, missing "+f)
			}
		}
	}
	return violations
}

func TestRestartedJanitorFinishesTheJob(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 400})
	p := cons.Providers[0]
	kill(t, p)
	stop := startJanitor(t, janitor.Options{Workers: 1, BatchSize: 5})
	g.Expect(fixture.Mark(ctx, env.Client, p)).To(Succeed())
	g.Eventually(func() int { return podsLeft(t, p) }).WithPolling(5 * time.Millisecond).WithTimeout(30 * time.Second).
		Should(BeNumerically("<=", 390))
	stop() // killed mid-job
	g.Expect(podsLeft(t, p)).To(BeNumerically(">", 0), "the first janitor did not finish")

	startJanitor(t, janitor.Options{})
	g.Eventually(func() int { return podsLeft(t, p) }).WithTimeout(60 * time.Second).Should(BeZero())
	g.Eventually(gone(t, p.ResourceSlice)).Should(BeTrue())
}

// TestLiqoV10LeftoverStateIsReleasedByTheJanitorAlone: Liqo v1.0 ignores the mark. A VirtualNode deletion
// drained its node by evicting the pods and now waits forever for them; the ResourceSlice and NamespaceMap
// hang on the replicator. The janitor releases all of it; the VirtualNode's own finalizer stays Liqo's.
func TestLiqoV10LeftoverStateIsReleasedByTheJanitorAlone(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 4})
	p := cons.Providers[0]
	g.Expect(fixture.Kill(ctx, env.Client, p)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, p.VirtualNode)).To(Succeed())
	for _, pod := range p.Pods {
		g.Expect(env.Client.SubResource("eviction").Create(ctx, pod, &policyv1.Eviction{})).To(Succeed())
		g.Expect(get(t, pod).DeletionTimestamp).NotTo(BeNil(), "evicted, and no kubelet will confirm it")
	}
	g.Expect(env.Client.Delete(ctx, p.ResourceSlice)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, p.NamespaceMap)).To(Succeed())
	vn := rvs(t, p.VirtualNode)

	startJanitor(t, janitor.Options{})
	g.Expect(fixture.Mark(ctx, env.Client, p)).To(Succeed())
	g.Eventually(func() int { return podsLeft(t, p) }).WithTimeout(30 * time.Second).Should(BeZero())
	g.Eventually(gone(t, p.ResourceSlice)).Should(BeTrue())
	g.Eventually(gone(t, p.NamespaceMap)).Should(BeTrue())
	g.Expect(rvs(t, p.VirtualNode)).To(Equal(vn), "Liqo's drain continues once its pods are gone; its finalizer is not ours")
}

func TestIdentitySecretIsReleasedLastAndOnlyWhenOptedIn(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 1})
	p := cons.Providers[0]
	g.Expect(env.Client.Patch(ctx, p.Renew, client.RawPatch(types.JSONPatchType,
		fmt.Appendf(nil, `[{"op":"add","path":"/metadata/finalizers/-","value":%q}]`, fixture.ForeignFinalizer)))).To(Succeed())
	kill(t, p)
	startJanitor(t, janitor.Options{ReleaseIdentitySecrets: true})
	g.Expect(fixture.Mark(ctx, env.Client, p)).To(Succeed())

	g.Eventually(cleanupAnnotation(t, p)).WithTimeout(30*time.Second).Should(ContainSubstring("secrets 0/1"),
		"a Renew of the cluster is left in the tenant namespace: the identity Secret waits")
	g.Expect(get(t, p.IdentitySecret).Finalizers).To(ConsistOf(liqojanitor.ReplicatorOperatorFinalizer))

	g.Expect(env.Client.Patch(ctx, p.Renew, client.RawPatch(types.JSONPatchType,
		[]byte(`[{"op":"remove","path":"/metadata/finalizers/0"}]`)))).To(Succeed())
	g.Eventually(gone(t, p.IdentitySecret)).WithTimeout(30 * time.Second).Should(BeTrue())
}
