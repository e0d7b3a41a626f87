package fence

import (
	"io"
	"os"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/liqotech/liqo/pkg/consts"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// TestMain: the engine's tests that need an API server get one, as the provider (harness.Require); the
// command's tests, with the consumer, the gate and a provider, are the plugin's (package main).
func TestMain(m *testing.M) {
	os.Exit(harness.Run(m, harness.Options{}, nil))
}

func TestStepLinesAndCounts(t *testing.T) {
	steps := []*Step{
		{Where: "namespace app", DeletedKind: "shadowpods", Deleted: 3, Kind: "pods", Before: 3, Left: 1},
		{Where: "tenant namespace t", DeletedKind: "resourceslices", Deleted: 1, Kind: "resourceslices", Before: 1},
		{Where: "remote namespaces", Kind: "namespaces", Before: 2},
	}
	for i, want := range []string{
		"namespace app: shadowpods 3 deleted, pods 3 → 1 left",
		"tenant namespace t: resourceslices 1 deleted, 1 → 0 left",
		"remote namespaces: namespaces 2 → 0 left",
	} {
		if got := steps[i].line(); got != want {
			t.Errorf("line %d: got %q, want %q", i, got, want)
		}
	}
	if got, want := countsOf(steps[:1], false), "shadowpods 3, pods 2"; got != want {
		t.Errorf("counts: got %q, want %q", got, want)
	}
	if got, want := countsOf(steps, true), "shadowpods 3, pods 2, resourceslices 1, namespacemaps 0, renews 0, namespaces 2"; got != want {
		t.Errorf("counts --all: got %q, want %q", got, want)
	}
}

// TestDeleteCopiesLeavesAloneWhatChangedSinceThePlan: fence deletes an object of its plan only as the plan
// showed it (UID and resourceVersion preconditions), re-checked on the object itself; one whose labels
// changed or that was re-created since is left alone and said so, one already gone is no error.
func TestDeleteCopiesLeavesAloneWhatChangedSinceThePlan(t *testing.T) {
	g := NewWithT(t)
	env := harness.Require(t)
	ctx, c, ns := t.Context(), env.Client, env.Namespace(t)
	planned := func(name string) *authv1beta1.Renew {
		renew := &authv1beta1.Renew{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels: map[string]string{consts.ReplicationStatusLabel: "true", consts.ReplicationOriginLabel: "consumer"}}}
		g.Expect(c.Create(ctx, renew)).To(Succeed())
		return renew.DeepCopy() // as the plan listed it
	}
	unchanged, relabelled, recreated, gone := planned("unchanged"), planned("relabelled"), planned("recreated"), planned("gone")

	now := relabelled.DeepCopy()
	now.Labels[consts.ReplicationOriginLabel] = "another-consumer"
	g.Expect(c.Update(ctx, now)).To(Succeed())
	g.Expect(c.Delete(ctx, recreated.DeepCopy())).To(Succeed())
	again := recreated.DeepCopy()
	again.ResourceVersion, again.UID = "", ""
	g.Expect(c.Create(ctx, again)).To(Succeed())
	g.Expect(c.Delete(ctx, gone.DeepCopy())).To(Succeed())

	s := &scope{localID: "consumer", provider: &providerConn{c: c}}
	st, err := deleteCopies(ctx, s, ns, "renews", []client.Object{unchanged, relabelled, recreated, gone})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Deleted).To(Equal(1))
	g.Expect(st.LeftAlone).To(ConsistOf(
		"Renew "+ns+"/relabelled: its labels changed, or it was re-created, since the plan",
		"Renew "+ns+"/recreated: its labels changed, or it was re-created, since the plan"))

	res := &Result{}
	g.Expect(await(ctx, io.Discard, []*Step{st}, time.Minute, res)).To(Succeed())
	g.Expect(st.Left).To(BeZero())
	g.Expect(apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(unchanged), &authv1beta1.Renew{}))).To(BeTrue(), "deleted")
	fresh := &authv1beta1.Renew{}
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(relabelled), fresh)).To(Succeed())
	g.Expect(fresh.Labels).To(HaveKeyWithValue(consts.ReplicationOriginLabel, "another-consumer"), "another consumer's now: kept")
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(recreated), fresh)).To(Succeed())
	g.Expect(fresh.UID).To(Equal(again.UID), "the re-created one is kept")
}
