package release_test

import (
	"errors"
	"fmt"
	"os"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor/internal/release"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

func TestMain(m *testing.M) {
	os.Exit(harness.Run(m, harness.Options{}, nil))
}

// TestAFinalizerPatchNeverTouchesARecreatedObject: the janitor holds a copy of a ResourceSlice that is
// then deleted and re-created under the same name, terminating again with the same finalizer at the same
// index. Its patch tests the UID, so the new object keeps its finalizer.
func TestAFinalizerPatchNeverTouchesARecreatedObject(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	get := func(rs *authv1beta1.ResourceSlice) *authv1beta1.ResourceSlice {
		fresh := &authv1beta1.ResourceSlice{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rs), fresh)).To(Succeed())
		return fresh
	}
	gone := func(rs *authv1beta1.ResourceSlice) func() bool {
		return func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(rs), &authv1beta1.ResourceSlice{}))
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "recreated-"}}
	g.Expect(env.Client.Create(ctx, ns)).To(Succeed())
	newSlice := func() *authv1beta1.ResourceSlice {
		rs := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "slice", Namespace: ns.Name,
			Finalizers: []string{liqojanitor.ReplicatorFinalizer}}}
		g.Expect(env.Client.Create(ctx, rs)).To(Succeed())
		g.Expect(env.Client.Delete(ctx, rs)).To(Succeed())
		return get(rs)
	}
	stale := newSlice()
	g.Expect(env.Client.Patch(ctx, stale.DeepCopy(), client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers/0"}]`)))).To(Succeed())
	g.Eventually(gone(stale)).Should(BeTrue())
	fresh := newSlice()
	g.Expect(fresh.UID).NotTo(Equal(stale.UID))

	o, err := release.RemoveFinalizer(ctx, env.Client, env.Client, stale, liqojanitor.ReplicatorFinalizer, false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o).To(Equal(release.Gone), "the object the janitor meant is gone")
	g.Expect(get(fresh).Finalizers).To(Equal([]string{liqojanitor.ReplicatorFinalizer}), "the new one is untouched")
	g.Expect(get(fresh).ResourceVersion).To(Equal(fresh.ResourceVersion))

	o, err = release.RemoveFinalizer(ctx, env.Client, env.Client, fresh, liqojanitor.ReplicatorFinalizer, false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o).To(Equal(release.Released), "with its own UID the same patch goes through")
	g.Eventually(gone(fresh)).Should(BeTrue())
}

// TestRefusingWebhook: the two errors the API server returns for a write an admission webhook stopped
// name the webhook, wrapped or not; any other error, and the same words outside an API status, do not.
func TestRefusingWebhook(t *testing.T) {
	slices := schema.GroupResource{Group: authv1beta1.GroupVersion.Group, Resource: "resourceslices"}
	// As k8s.io/apiserver builds them: ErrCallingWebhook under failurePolicy Fail becomes an internal
	// error, a denial a status error of its own (ToStatusErr).
	notCalled := apierrors.NewInternalError(errors.New(`failed calling webhook "fc.mutate.liqo.io": failed to call webhook: ` +
		`Post "https://liqo-webhook.liqo.svc:443/mutate/foreign-cluster?timeout=10s": no endpoints available for service "liqo-webhook"`))
	denied := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 400, Reason: metav1.StatusReasonBadRequest,
		Message: `admission webhook "resourceslice.validate.liqo.io" denied the request: the resource slice is in use`}}
	for name, tc := range map[string]struct {
		err     error
		webhook string
	}{
		"could not be called":       {err: notCalled, webhook: "fc.mutate.liqo.io"},
		"denied":                    {err: denied, webhook: "resourceslice.validate.liqo.io"},
		"wrapped":                   {err: fmt.Errorf("removing finalizer x: %w", denied), webhook: "resourceslice.validate.liqo.io"},
		"no error":                  {},
		"a conflict":                {err: apierrors.NewConflict(slices, "slice", errors.New("the object has been modified"))},
		"the words, not API status": {err: errors.New(`failed calling webhook "fc.mutate.liqo.io"`)},
	} {
		t.Run(name, func(t *testing.T) {
			webhook, refused := release.RefusingWebhook(tc.err)
			NewWithT(t).Expect([]any{webhook, refused}).To(Equal([]any{tc.webhook, tc.webhook != ""}))
		})
	}
}
