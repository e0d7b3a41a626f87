package harness_test

import (
	"context"
	"fmt"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// startLiqoWebhook runs Liqo's real webhook, with its chart's configurations, for one test, in a Liqo
// namespace of the test's own.
func startLiqoWebhook(t *testing.T, env *harness.Env) *harness.LiqoWebhook {
	t.Helper()
	g := NewWithT(t)
	ns := fixture.Prefix("liqo-")
	g.Expect(env.InstallLocalClusterID(t.Context(), ns, "consumer")).To(Succeed())
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	w, err := env.StartLiqoWebhook(t.Context(), ns)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := w.Remove(context.Background()); err != nil {
			t.Errorf("removing Liqo's webhook: %v", err)
		}
	})
	return w
}

// answered is how many requests the API server has had answered with success by the webhook called name.
func answered(t *testing.T, env *harness.Env, name string) float64 {
	t.Helper()
	n, err := env.APIServerMetric(t.Context(), "apiserver_admission_webhook_request_total", map[string]string{"name": name, "code": "200"})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLiqosWebhookAllowsTheJanitorsWritesAndRefusesThemWhileDown: Liqo's real webhook, registered as its
// chart registers it, answers the janitor's writes to a peering's ForeignCluster (an annotation) and
// ResourceSlice (a finalizer's removal) and allows them; stopped (its pod down), its configurations make
// the API server refuse the same writes; started again, it allows them.
func TestLiqosWebhookAllowsTheJanitorsWritesAndRefusesThemWhileDown(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	const fcHook, sliceHook = "fc.mutate.liqo.io", "resourceslice.validate.liqo.io"
	w := startLiqoWebhook(t, env)
	p, err := fixture.Build(ctx, env.Client, fixture.Spec{Prefix: fixture.Prefix("lw-"), Providers: 1})
	g.Expect(err).NotTo(HaveOccurred(), "a peering is created through Liqo's webhook")
	p0 := p.Providers[0]
	annotate := func(v string) error {
		return fixture.Annotate(ctx, env.Client, p0.ForeignCluster, map[string]*string{"example.com/probe": ptr.To(v)})
	}
	slice := p0.ResourceSlice
	g.Expect(env.Client.Delete(ctx, slice)).To(Succeed(), "Liqo's ResourceSlice webhook does not see deletions")
	releaseSlice := func() error {
		patch := fmt.Sprintf(`[{"op":"test","path":"/metadata/finalizers/0","value":%q},{"op":"remove","path":"/metadata/finalizers/0"}]`,
			liqojanitor.ReplicatorFinalizer)
		return env.Client.Patch(ctx, &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: slice.Name, Namespace: slice.Namespace}},
			client.RawPatch(types.JSONPatchType, []byte(patch)))
	}

	before := answered(t, env, fcHook)
	g.Expect(annotate("up")).To(Succeed())
	g.Expect(answered(t, env, fcHook)).To(BeNumerically(">", before), "the patch went through Liqo's webhook")

	g.Expect(w.Stop()).To(Succeed())
	g.Expect(annotate("down")).To(MatchError(ContainSubstring(`failed calling webhook "` + fcHook + `"`)))
	g.Expect(releaseSlice()).To(MatchError(ContainSubstring(`failed calling webhook "` + sliceHook + `"`)))

	g.Expect(w.Start(ctx)).To(Succeed())
	before, beforeSlice := answered(t, env, fcHook), answered(t, env, sliceHook)
	g.Expect(annotate("back")).To(Succeed())
	g.Expect(releaseSlice()).To(Succeed())
	g.Expect(answered(t, env, fcHook)).To(BeNumerically(">", before), "the patch went through Liqo's webhook")
	g.Expect(answered(t, env, sliceHook)).To(BeNumerically(">", beforeSlice), "the finalizer's removal went through Liqo's webhook")
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(slice), &authv1beta1.ResourceSlice{})).
		To(Satisfy(apierrors.IsNotFound), "the ResourceSlice is gone with its finalizer")
}
