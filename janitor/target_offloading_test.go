package janitor_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// NamespaceOffloadings are decided on a fresh world (janitor rule 4, target_offloading.go): each attempt at
// removing the finalizer — conflict retries included — re-reads the NamespaceOffloading, its namespace
// and the NamespaceMaps live and takes the current dead set, which the pass's live re-check refreshes
// before every batch and before every retry. The changes are interleaved with the janitor's writes
// deterministically: a client wrapper changes the real world on the API server right before it lets the
// janitor's first finalizer patch of a NamespaceOffloading through.

// onFirstOffloadingPatch wraps a client so that fn runs (on the real API server, through env.Client) right
// before the first patch of a NamespaceOffloading is sent; it returns the client and how many such patches
// were sent.
func onFirstOffloadingPatch(t *testing.T, fn func(ctx context.Context, nso client.Object)) (client.Client, *atomic.Int64) {
	t.Helper()
	env := harness.Require(t)
	base, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	var patches atomic.Int64
	c := interceptor.NewClient(base, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*offloadingv1beta1.NamespaceOffloading); ok && patches.Add(1) == 1 {
				fn(ctx, obj)
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	return c, &patches
}

func metadataClient(t *testing.T) metadata.Interface {
	t.Helper()
	env := harness.Require(t)
	mc, err := metadata.NewForConfig(env.Config)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return mc
}

// addForeignFinalizerFirst puts someone else's finalizer before ours on the NamespaceOffloading (before
// it is deleted: the API server refuses new finalizers on an object being deleted).
func addForeignFinalizerFirst(t *testing.T, nso *offloadingv1beta1.NamespaceOffloading) {
	t.Helper()
	env := harness.Require(t)
	NewWithT(t).Expect(env.Client.Patch(t.Context(), nso, client.RawPatch(types.JSONPatchType,
		fmt.Appendf(nil, `[{"op":"add","path":"/metadata/finalizers/0","value":%q}]`, fixture.ForeignFinalizer)))).To(Succeed())
}

// dropForeignFinalizer removes that finalizer again (its owner is done): the index of ours moves, so a
// patch computed before fails its test op and is retried.
func dropForeignFinalizer(ctx context.Context, t *testing.T, nso client.Object) {
	t.Helper()
	env := harness.Require(t)
	NewWithT(t).Expect(env.Client.Patch(ctx, nso, client.RawPatch(types.JSONPatchType,
		fmt.Appendf(nil, `[{"op":"test","path":"/metadata/finalizers/0","value":%q},{"op":"remove","path":"/metadata/finalizers/0"}]`,
			fixture.ForeignFinalizer)))).To(Succeed())
}

// lostRace lays out one NamespaceOffloading spanning two dead providers, holding a foreign finalizer
// ahead of the janitor's, and runs one pass of the first provider whose first NamespaceOffloading patch
// loses its race: right before it, unmark (if not nil) is unmarked and the foreign finalizer goes, so the
// patch fails its test op and is retried. It returns the NamespaceOffloading, the pass's result and how
// many NamespaceOffloading patches were sent.
func lostRace(t *testing.T, unmark func(a, b *fixture.Provider) *fixture.Provider) (client.Object, janitor.PassResult, int64) {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 2, OffloadedNamespaces: 1})
	addForeignFinalizerFirst(t, cons.Offloadings[0])
	a, b := spanTwoDeadProviders(t, cons)
	c, patches := onFirstOffloadingPatch(t, func(ctx context.Context, obj client.Object) {
		if p := unmark(a, b); p != nil {
			g.Expect(fixture.Annotate(ctx, env.Client, p.ForeignCluster, map[string]*string{liqojanitor.MarkAnnotation: nil})).To(Succeed())
		}
		dropForeignFinalizer(ctx, t, obj)
	})
	res, err := janitor.Pass(ctx, c, env.Client, metadataClient(t), a.ForeignCluster.Name, janitor.Options{})
	g.Expect(err).NotTo(HaveOccurred(), "a lost race is retried, and a stop is no failure")
	return cons.Offloadings[0], res, patches.Load()
}

// TestUnmarkingAnotherClusterMidPassStopsTheRetriedReleaseOfANamespaceOffloading: the janitor decides to
// release a NamespaceOffloading spanning two dead clusters; right before its patch reaches the API server,
// the other cluster is unmarked and the NamespaceOffloading changes (its other finalizer goes), so the
// patch fails and is retried. The retry re-decides on the world as it is now: the other cluster is live,
// its remote namespace is not known to be gone, and the finalizer stays.
func TestUnmarkingAnotherClusterMidPassStopsTheRetriedReleaseOfANamespaceOffloading(t *testing.T) {
	g := NewWithT(t)
	var other *fixture.Provider
	nso, res, patches := lostRace(t, func(_, b *fixture.Provider) *fixture.Provider { other = b; return b })
	g.Expect(patches).To(BeEquivalentTo(1), "one patch was sent and lost its race; the retry wrote nothing")
	g.Expect(get(t, nso).GetFinalizers()).To(Equal([]string{liqojanitor.NamespaceOffloadingFinalizer}),
		"the other cluster is live again: the NamespaceOffloading keeps its finalizer")
	g.Expect(res.Kinds).To(Equal(map[string]janitor.PassCounts{"NamespaceOffloading": {Waiting: 1}}))
	g.Expect(res.Waiting).To(HaveKeyWithValue(nso.GetNamespace(), ContainSubstring("live cluster "+other.ID)))
}

// TestARetriedReleaseOfANamespaceOffloadingGoesThroughWhenTheWorldStillAllowsIt is the control of the test
// above: the same lost race, with both clusters still dead, ends with the finalizer removed on the retry.
func TestARetriedReleaseOfANamespaceOffloadingGoesThroughWhenTheWorldStillAllowsIt(t *testing.T) {
	g := NewWithT(t)
	nso, res, patches := lostRace(t, func(_, _ *fixture.Provider) *fixture.Provider { return nil })
	g.Expect(patches).To(BeEquivalentTo(2), "the first patch lost its race, the retry went through")
	g.Expect(gone(t, nso)()).To(BeTrue())
	g.Expect(res.Kinds).To(Equal(map[string]janitor.PassCounts{"NamespaceOffloading": {Released: 1}}))
}

// TestTheDeadSetIsReReadBeforeEveryBatch: two NamespaceOffloadings spanning two dead clusters, released
// one per batch. The other cluster is unmarked while the first is released (that decision stands: it was
// taken when both were dead); the live re-check before the second batch sees it, and the second
// NamespaceOffloading keeps its finalizer.
func TestTheDeadSetIsReReadBeforeEveryBatch(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 2, OffloadedNamespaces: 2})
	a, b := spanTwoDeadProviders(t, cons)

	c, patches := onFirstOffloadingPatch(t, func(ctx context.Context, _ client.Object) {
		g.Expect(fixture.Annotate(ctx, env.Client, b.ForeignCluster, map[string]*string{liqojanitor.MarkAnnotation: nil})).To(Succeed())
	})
	res, err := janitor.Pass(ctx, c, env.Client, metadataClient(t), a.ForeignCluster.Name, janitor.Options{Workers: 1, BatchSize: 1})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(patches.Load()).To(BeEquivalentTo(1), "one NamespaceOffloading released, no write for the other")
	var left []string
	for _, nso := range cons.Offloadings {
		if !gone(t, nso)() {
			g.Expect(get(t, nso).Finalizers).To(Equal([]string{liqojanitor.NamespaceOffloadingFinalizer}))
			left = append(left, nso.Namespace)
		}
	}
	g.Expect(left).To(HaveLen(1), "the one decided after the other cluster was unmarked is kept")
	g.Expect(res.Kinds).To(Equal(map[string]janitor.PassCounts{"NamespaceOffloading": {Released: 1, Waiting: 1}}))
	g.Expect(res.Waiting).To(HaveKeyWithValue(left[0], ContainSubstring("live cluster "+b.ID)))
}

// spanTwoDeadProviders makes the two providers of cons dead and marked, and each NamespaceOffloading of
// cons (spanning both) terminating with Liqo's local part done (no scheduling label, no desiredMapping
// entry left): a pass over either cluster releases them at once, as long as both are dead.
func spanTwoDeadProviders(t *testing.T, cons *fixture.Consumer) (a, b *fixture.Provider) {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	a, b = cons.Providers[0], cons.Providers[1]
	for _, p := range cons.Providers {
		g.Expect(fixture.Kill(ctx, env.Client, p)).To(Succeed())
		for _, ns := range cons.Namespaces {
			g.Expect(env.Client.Patch(ctx, p.NamespaceMap, mergePatch(`{"spec":{"desiredMapping":{%q:null}}}`, ns))).To(Succeed())
		}
	}
	g.Expect(fixture.TerminateOffloadings(ctx, env.Client, cons)).To(Succeed())
	g.Expect(fixture.Mark(ctx, env.Client, a)).To(Succeed())
	g.Expect(fixture.Mark(ctx, env.Client, b)).To(Succeed())
	return a, b
}

// TestANamespaceOffloadingIsDecidedOnItsLiveVersion: the list the janitor works from (its cache) shows a
// NamespaceOffloading whose only remote namespaces are on dead clusters, but on the API server it has
// meanwhile gained an entry for a live cluster. The janitor decides on the live version, and waits.
func TestANamespaceOffloadingIsDecidedOnItsLiveVersion(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 3, OffloadedNamespaces: 1})
	live, nso := cons.Providers[2], cons.Offloadings[0]
	entry := get(t, nso).Status.RemoteNamespacesConditions[live.NamespaceMap.Name]
	setEntry := func(on bool) {
		latest := get(t, nso)
		if on {
			latest.Status.RemoteNamespacesConditions[live.NamespaceMap.Name] = entry
		} else {
			delete(latest.Status.RemoteNamespacesConditions, live.NamespaceMap.Name)
		}
		g.Expect(env.Client.Status().Update(ctx, latest)).To(Succeed())
	}
	setEntry(false)
	g.Expect(env.Client.Patch(ctx, live.NamespaceMap, mergePatch(`{"spec":{"desiredMapping":{%q:null}}}`, nso.Namespace))).To(Succeed())
	cons.Providers = cons.Providers[:2]
	a, _ := spanTwoDeadProviders(t, cons)

	base, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	c := interceptor.NewClient(base, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			err := c.List(ctx, list, opts...)
			if _, ok := list.(*offloadingv1beta1.NamespaceOffloadingList); ok && err == nil {
				setEntry(true) // after the list was read: the list lags behind the API server
			}
			return err
		},
	})
	res, err := janitor.Pass(ctx, c, env.Client, metadataClient(t), a.ForeignCluster.Name, janitor.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(get(t, nso).Finalizers).To(Equal([]string{liqojanitor.NamespaceOffloadingFinalizer}))
	g.Expect(res.Waiting).To(HaveKeyWithValue(nso.Namespace, ContainSubstring("live cluster "+live.ID)))
}

// TestUnmarkingTheClusterItselfBeforeARetryStopsThePass: the same lost race, but it is the pass's own
// cluster that is unmarked: the retry's live re-check stops the pass, as a batch's re-check would, and
// nothing is written.
func TestUnmarkingTheClusterItselfBeforeARetryStopsThePass(t *testing.T) {
	g := NewWithT(t)
	nso, res, patches := lostRace(t, func(a, _ *fixture.Provider) *fixture.Provider { return a })
	g.Expect(res.Stopped).To(BeTrue(), "stopped, not failed")
	g.Expect(patches).To(BeEquivalentTo(1))
	g.Expect(get(t, nso).GetFinalizers()).To(Equal([]string{liqojanitor.NamespaceOffloadingFinalizer}))
}
