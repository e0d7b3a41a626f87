package manifests_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// annotate merge-patches annotations as `kubectl annotate` does; a nil value removes the key.
func annotate(ctx context.Context, name string, kv map[string]*string, opts ...client.PatchOption) error {
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": kv}})
	if err != nil {
		return err
	}
	fc := &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	return env.Client.Patch(ctx, fc, client.RawPatch(types.MergePatchType, data), opts...)
}

func s(v string) *string { return &v }

// expectPolicyDenied asserts that the API server itself refused the request through the policy as
// invalid (422), with a message carrying each fragment.
func expectPolicyDenied(g Gomega, err error, fragments ...string) {
	expectPolicyRefused(g, err, http.StatusUnprocessableEntity, fragments...)
}

// expectPolicyForbidden asserts a refusal by the policy's break-glass check (403), with each fragment.
func expectPolicyForbidden(g Gomega, err error, fragments ...string) {
	expectPolicyRefused(g, err, http.StatusForbidden, fragments...)
}

func expectPolicyRefused(g Gomega, err error, code int32, fragments ...string) {
	var status *apierrors.StatusError
	g.Expect(errors.As(err, &status)).To(BeTrue(), "want a denial, got %v", err)
	g.Expect(status.ErrStatus.Code).To(Equal(code), "message: %s", status.ErrStatus.Message)
	g.Expect(status.ErrStatus.Message).To(ContainSubstring("ValidatingAdmissionPolicy '" + policyName + "'"))
	for _, f := range fragments {
		g.Expect(status.ErrStatus.Message).To(ContainSubstring(f))
	}
}

func TestPolicyRefusesUnconfirmedMarksWithoutTheGate(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	// No webhook of ours is registered: whatever is refused below, the API server refuses on its own.
	webhooks := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	g.Expect(env.Client.List(ctx, webhooks, client.MatchingLabels{nameLabel: appName})).To(Succeed())
	g.Expect(webhooks.Items).To(BeEmpty())
	mutating := &admissionregistrationv1.MutatingWebhookConfigurationList{}
	g.Expect(env.Client.List(ctx, mutating, client.MatchingLabels{nameLabel: appName})).To(Succeed())
	g.Expect(mutating.Items).To(BeEmpty())

	b := kustomize(t, policyDir)
	t.Cleanup(func() { deleteAll(b) })
	g.Expect(apply(t, b)).To(BeEmpty())

	const id = "provider-x"
	fc := &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: id},
		Spec: liqov1beta1.ForeignClusterSpec{ClusterID: id}}
	g.Expect(env.Client.Create(ctx, fc)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), fc) })

	// A new policy takes a moment to be enforced: wait for the first denial, with dry-run requests so
	// that an early success changes nothing.
	g.Eventually(func(g Gomega) {
		err := annotate(ctx, id, map[string]*string{liqojanitor.MarkAnnotation: s("true")}, client.DryRunAll)
		expectPolicyDenied(g, err)
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

	denied := map[string]struct {
		annotations map[string]*string
		fragments   []string
	}{
		"the mark without the confirmation": {
			annotations: map[string]*string{liqojanitor.MarkAnnotation: s("true")},
			fragments: []string{liqojanitor.ConfirmAnnotation, `spec.clusterID "provider-x"`,
				"kubectl annotate foreigncluster provider-x liqo-janitor.io/confirm-cluster-id=provider-x"},
		},
		"the mark with a confirmation that is not spec.clusterID": {
			annotations: map[string]*string{liqojanitor.MarkAnnotation: s("true"), liqojanitor.ConfirmAnnotation: s("provider-y")},
			fragments:   []string{liqojanitor.ConfirmAnnotation, `spec.clusterID "provider-x"`, "kubectl get foreignclusters"},
		},
		"a confirmed mark whose value is not exactly true": {
			annotations: map[string]*string{liqojanitor.MarkAnnotation: s("yes"), liqojanitor.ConfirmAnnotation: s(id)},
			fragments:   []string{liqojanitor.MarkAnnotation, `must be exactly "true"`},
		},
	}
	for name, tc := range denied {
		t.Run(name, func(t *testing.T) {
			expectPolicyDenied(NewWithT(t), annotate(t.Context(), id, tc.annotations), tc.fragments...)
		})
	}
	t.Run("creating a ForeignCluster already marked, without the confirmation", func(t *testing.T) {
		marked := &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: "provider-y",
			Annotations: map[string]string{liqojanitor.MarkAnnotation: "true"}},
			Spec: liqov1beta1.ForeignClusterSpec{ClusterID: "provider-y"}}
		expectPolicyDenied(NewWithT(t), env.Client.Create(t.Context(), marked, client.DryRunAll),
			"liqo-janitor.io/confirm-cluster-id=provider-y")
	})

	// Sequential steps on the same object: each one starts from the state the previous one left.
	steps := []struct {
		name        string
		annotations map[string]*string
		allowed     bool
	}{
		{"an annotation that is not the mark passes", map[string]*string{"example.com/owner": s("team-a")}, true},
		{"the confirmation alone passes", map[string]*string{liqojanitor.ConfirmAnnotation: s(id)}, true},
		{"the mark with the confirmation equal to spec.clusterID and value true passes",
			map[string]*string{liqojanitor.MarkAnnotation: s("true")}, true},
		{"on a marked cluster, other updates are not judged", map[string]*string{"example.com/owner": s("team-b")}, true},
		{"on a marked cluster, changing the mark to another value is refused",
			map[string]*string{liqojanitor.MarkAnnotation: s("yes")}, false},
		{"removing the mark passes", map[string]*string{liqojanitor.MarkAnnotation: nil}, true},
	}
	for _, step := range steps {
		err := annotate(ctx, id, step.annotations)
		if step.allowed {
			g.Expect(err).NotTo(HaveOccurred(), step.name)
		} else {
			expectPolicyDenied(g, err, `must be exactly "true"`)
		}
	}
	got := &liqov1beta1.ForeignCluster{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(fc), got)).To(Succeed())
	g.Expect(got.Annotations).To(Equal(map[string]string{"example.com/owner": "team-b", liqojanitor.ConfirmAnnotation: id}))
}

// TestPolicyEnforcesTheBreakGlassVerbWithoutTheGate: with the webhook absent, the policy asks the API
// server's authorizer for verb mark-unreachable when a request sets or removes the mark, or unpauses a
// marked cluster. bob may update ForeignClusters; alice may, and holds the verb.
func TestPolicyEnforcesTheBreakGlassVerbWithoutTheGate(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	b := kustomize(t, policyDir)
	t.Cleanup(func() { deleteAll(b) })
	g.Expect(apply(t, b)).To(BeEmpty())

	const editor, marker = "policy-editor", "policy-marker"
	roles := []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: editor}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"core.liqo.io"}, Resources: []string{"foreignclusters"}, Verbs: []string{"get", "update", "patch"}}}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: marker}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"core.liqo.io"}, Resources: []string{"foreignclusters"}, Verbs: []string{"mark-unreachable"}}}},
		harness.ClusterRoleBinding(editor, editor, "alice", "bob"),
		harness.ClusterRoleBinding(marker, marker, "alice"),
	}
	for _, o := range roles {
		g.Expect(env.Client.Create(ctx, o)).To(Succeed())
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
	}
	as := func(user string) client.Client {
		c, err := env.NewClient(func(c *rest.Config) { c.Impersonate.UserName = user })
		g.Expect(err).NotTo(HaveOccurred())
		return c
	}
	alice, bob := as("alice"), as("bob")

	const id = "provider-z"
	fc := &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: id}, Spec: liqov1beta1.ForeignClusterSpec{ClusterID: id}}
	g.Expect(env.Client.Create(ctx, fc)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), fc) })
	confirmedMark := map[string]*string{liqojanitor.ConfirmAnnotation: s(id), liqojanitor.MarkAnnotation: s("true")}

	// wait until the new policy is enforced (dry-run, so an early success changes nothing)
	g.Eventually(func(g Gomega) {
		expectPolicyForbidden(g, fixture.Annotate(ctx, bob, fc, confirmedMark, client.DryRunAll), `user "bob" may not mark it`)
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

	steps := []struct {
		name        string
		by          client.Client
		annotations map[string]*string
		refused     string // a fragment of the refusal; "" means allowed
	}{
		{"bob may not set a confirmed mark", bob, confirmedMark, `user "bob" may not mark it permanently unreachable`},
		{"alice may", alice, confirmedMark, ""},
		{"bob may pause the janitor", bob, map[string]*string{liqojanitor.PausedAnnotation: s("true")}, ""},
		{"bob may not unpause it", bob, map[string]*string{liqojanitor.PausedAnnotation: nil}, `user "bob" may not unpause it`},
		{"alice may", alice, map[string]*string{liqojanitor.PausedAnnotation: nil}, ""},
		{"bob may not remove the mark", bob, map[string]*string{liqojanitor.MarkAnnotation: nil}, `user "bob" may not remove its permanently-unreachable mark`},
		{"alice may", alice, map[string]*string{liqojanitor.MarkAnnotation: nil}, ""},
		{"on an unmarked cluster bob may pause and unpause", bob, map[string]*string{liqojanitor.PausedAnnotation: s("true")}, ""},
		{"and unpause", bob, map[string]*string{liqojanitor.PausedAnnotation: nil}, ""},
	}
	for _, step := range steps {
		err := fixture.Annotate(ctx, step.by, fc, step.annotations)
		if step.refused == "" {
			g.Expect(err).NotTo(HaveOccurred(), step.name)
			continue
		}
		expectPolicyForbidden(g, err, step.refused, "--clusterrole=liqo-janitor:mark-unreachable --user=bob")
	}
	got := &liqov1beta1.ForeignCluster{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(fc), got)).To(Succeed())
	g.Expect(got.Annotations).To(Equal(map[string]string{liqojanitor.ConfirmAnnotation: id}))
}
