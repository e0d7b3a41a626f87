package manifests_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
	"github.com/liqo-janitor/liqo-janitor/webhook"
)

// annotate merge-patches annotations as `kubectl annotate` does; a nil value removes the key.
func annotate(ctx context.Context, c client.Client, name string, kv map[string]*string, opts ...client.PatchOption) error {
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": kv}})
	if err != nil {
		return err
	}
	fc := &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	return c.Patch(ctx, fc, client.RawPatch(types.MergePatchType, data), opts...)
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
	expectRefusedByPolicy(g, err, policyName, code, fragments...)
}

// expectRefusedByPolicy asserts that the ValidatingAdmissionPolicy named policy refused the request with
// the HTTP code, with a message carrying each fragment.
func expectRefusedByPolicy(g Gomega, err error, policy string, code int32, fragments ...string) {
	var status *apierrors.StatusError
	g.Expect(errors.As(err, &status)).To(BeTrue(), "want a denial, got %v", err)
	g.Expect(status.ErrStatus.Code).To(Equal(code), "message: %s", status.ErrStatus.Message)
	g.Expect(status.ErrStatus.Message).To(ContainSubstring("ValidatingAdmissionPolicy '" + policy + "'"))
	for _, f := range fragments {
		g.Expect(status.ErrStatus.Message).To(ContainSubstring(f))
	}
}

// janitorUser is the username of the install's ServiceAccount, the janitor's own identity.
const janitorUser = "system:serviceaccount:" + installNS + ":" + appName

// impersonate returns a client that acts as user.
func impersonate(t *testing.T, user string) client.Client {
	t.Helper()
	env := harness.Require(t)
	c, err := env.NewClient(func(c *rest.Config) { c.Impersonate.UserName = user })
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return c
}

// grantRole creates a ClusterRole with rules bound to users, removed when the test ends.
func grantRole(t *testing.T, name string, rules []rbacv1.PolicyRule, users ...string) {
	t.Helper()
	env := harness.Require(t)
	for _, o := range []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules},
		harness.ClusterRoleBinding(name, name, users...),
	} {
		NewWithT(t).Expect(env.Client.Create(t.Context(), o)).To(Succeed())
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
	}
}

// applyPolicyFallback applies manifests/policy (the gate's fallback, without the webhook) until the test
// ends, and waits until the API server enforces it.
func applyPolicyFallback(t *testing.T) {
	t.Helper()
	env := harness.Require(t)
	b := kustomize(t, policyDir)
	t.Cleanup(func() { deleteAll(env.Client, b) })
	NewWithT(t).Expect(apply(t, b)).To(BeEmpty())
	// A new policy takes a moment to be enforced: wait for the first denial, with a dry-run request so
	// that an early success changes nothing.
	probe := &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: "policy-probe",
		Annotations: map[string]string{liqojanitor.MarkAnnotation: "yes"}}, Spec: liqov1beta1.ForeignClusterSpec{ClusterID: "policy-probe"}}
	NewWithT(t).Eventually(func(g Gomega) {
		expectPolicyDenied(g, env.Client.Create(t.Context(), probe.DeepCopy(), client.DryRunAll))
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
}

// createForeignCluster creates a ForeignCluster named after its cluster ID (Liqo's own naming), with labels,
// deleted when the test ends.
func createForeignCluster(t *testing.T, id string, labels map[string]string) *liqov1beta1.ForeignCluster {
	t.Helper()
	env := harness.Require(t)
	fc := &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: id, Labels: labels},
		Spec: liqov1beta1.ForeignClusterSpec{ClusterID: liqov1beta1.ClusterID(id)}}
	NewWithT(t).Expect(env.Client.Create(t.Context(), fc)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), fc) })
	return fc
}

// patchMeta merge-patches the ForeignCluster's labels and annotations in one request, as
// `kubectl patch --type=merge` does (a nil value removes the key).
func patchMeta(ctx context.Context, c client.Client, name string, labels, annotations map[string]*string) error {
	meta := map[string]any{}
	if labels != nil {
		meta["labels"] = labels
	}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	data, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return err
	}
	return c.Patch(ctx, &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType, data))
}

// annotationsOf reads the ForeignCluster's annotations from the API server.
func annotationsOf(ctx context.Context, g Gomega, c client.Client, name string) map[string]string {
	fc := &liqov1beta1.ForeignCluster{}
	g.Expect(c.Get(ctx, client.ObjectKey{Name: name}, fc)).To(Succeed())
	return fc.Annotations
}

func TestPolicyRefusesUnconfirmedMarksWithoutTheGate(t *testing.T) {
	env := harness.Require(t)
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
	t.Cleanup(func() { deleteAll(env.Client, b) })
	g.Expect(apply(t, b)).To(BeEmpty())

	const id = "provider-x"
	fc := &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: id},
		Spec: liqov1beta1.ForeignClusterSpec{ClusterID: id}}
	g.Expect(env.Client.Create(ctx, fc)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), fc) })

	// A new policy takes a moment to be enforced: wait for the first denial, with dry-run requests so
	// that an early success changes nothing.
	g.Eventually(func(g Gomega) {
		err := annotate(ctx, env.Client, id, map[string]*string{liqojanitor.MarkAnnotation: s("true")}, client.DryRunAll)
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
			expectPolicyDenied(NewWithT(t), annotate(t.Context(), env.Client, id, tc.annotations), tc.fragments...)
		})
	}
	t.Run("creating a ForeignCluster already marked, without the confirmation", func(t *testing.T) {
		marked := &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: "provider-y",
			Annotations: map[string]string{liqojanitor.MarkAnnotation: "true"}},
			Spec: liqov1beta1.ForeignClusterSpec{ClusterID: "provider-y"}}
		expectPolicyDenied(NewWithT(t), env.Client.Create(t.Context(), marked, client.DryRunAll),
			"cannot be created already marked", "liqo-janitor.io/confirm-cluster-id=provider-y")
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
		err := annotate(ctx, env.Client, id, step.annotations)
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
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	b := kustomize(t, policyDir)
	t.Cleanup(func() { deleteAll(env.Client, b) })
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
	grantRole(t, "policy-janitor-z", []rbacv1.PolicyRule{{APIGroups: []string{"core.liqo.io"},
		Resources: []string{"foreignclusters"}, Verbs: []string{"get", "patch"}}}, janitorUser)
	janitor := impersonate(t, janitorUser)
	returned := liqojanitor.ReturnRecord{At: time.Date(2026, 3, 1, 10, 5, 0, 0, time.UTC), How: "Liqo's APIServerStatus turned Established"}.String()

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
		{"the janitor records a return", janitor, map[string]*string{liqojanitor.CleanupAnnotation: &returned}, ""},
		{"bob may not record a fence", bob, map[string]*string{liqojanitor.FencedAnnotation: s(liqojanitor.FenceRecord{At: time.Now(), By: "bob", Counts: "shadowpods 1"}.String())},
			`user "bob" may not record a fence (liqo-janitor.io/fenced)`},
		{"alice may, in her own name", alice, map[string]*string{liqojanitor.FencedAnnotation: s(liqojanitor.FenceRecord{At: time.Now(), By: "alice", Counts: "shadowpods 1"}.String())}, ""},
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
		expectPolicyForbidden(g, err, step.refused, "--clusterrole="+liqojanitor.MarkRoleName+" --user=bob")
	}
	// alice marks again; a fence record in another's name is refused, even to her
	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.MarkAnnotation: s("true"), liqojanitor.FencedAnnotation: nil})).To(Succeed())
	err := fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.FencedAnnotation: s(liqojanitor.FenceRecord{At: time.Now(), By: "bob", Counts: "shadowpods 1"}.String())})
	expectPolicyDenied(g, err, `one naming another user is refused`)
	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.MarkAnnotation: nil})).To(Succeed())
	got := &liqov1beta1.ForeignCluster{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(fc), got)).To(Succeed())
	g.Expect(got.Annotations).To(Equal(map[string]string{liqojanitor.ConfirmAnnotation: id, liqojanitor.CleanupAnnotation: returned}))
}

// TestPolicyKeepsTheKeysAheadOfTheMarkWithoutTheGate: gate rules 12, 15 and 19 as CEL can. Ahead of the
// mark, the confirmation and the reason come from a holder of the verb only, the no-evidence key and a
// fence record from nobody; a mark does not start with a fence record or a no-evidence key set before it; a
// fence on a marked cluster needs a return the janitor recorded.
func TestPolicyKeepsTheKeysAheadOfTheMarkWithoutTheGate(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	applyPolicyFallback(t)
	grantRole(t, "policy-armers", []rbacv1.PolicyRule{{APIGroups: []string{"core.liqo.io"},
		Resources: []string{"foreignclusters"}, Verbs: []string{"get", "update", "patch"}}}, "alice", "bob", janitorUser)
	grantRole(t, "policy-armer-marker", []rbacv1.PolicyRule{{APIGroups: []string{"core.liqo.io"},
		Resources: []string{"foreignclusters"}, Verbs: []string{"mark-unreachable"}}}, "alice")
	alice, bob, janitor := impersonate(t, "alice"), impersonate(t, "bob"), impersonate(t, janitorUser)
	const id = "provider-armed"
	fc := createForeignCluster(t, id, nil)
	fence := func(user string) *string {
		return s(liqojanitor.FenceRecord{At: time.Now(), By: user, Counts: "shadowpods 1"}.String())
	}
	// wait until the verb is granted (an early success of the dry run changes nothing)
	g.Eventually(func() error {
		return annotate(ctx, alice, id, map[string]*string{liqojanitor.ConfirmAnnotation: s(id)}, client.DryRunAll)
	}).Should(Succeed())

	steps := []struct {
		name        string
		by          client.Client
		annotations map[string]*string
		code        int32    // 0: allowed
		refused     []string // fragments of the refusal
	}{
		{"bob may not confirm ahead of the mark", bob, map[string]*string{liqojanitor.ConfirmAnnotation: s(id)}, http.StatusForbidden,
			[]string{`user "bob" may not set liqo-janitor.io/confirm-cluster-id or liqo-janitor.io/reason ahead of the mark`,
				"liqoctl force unpeer", "--clusterrole=" + liqojanitor.MarkRoleName + " --user=bob"}},
		{"nor give the reason", bob, map[string]*string{liqojanitor.ReasonAnnotation: s("gone")}, http.StatusForbidden,
			[]string{`user "bob" may not set`}},
		{"nobody gives the no-evidence key ahead of the mark", alice, map[string]*string{liqojanitor.NoEvidenceAnnotation: s(id)},
			http.StatusUnprocessableEntity, []string{"counts only in the request that sets the mark", "give it with the mark"}},
		{"nobody records a fence on an unmarked cluster", alice, map[string]*string{liqojanitor.FencedAnnotation: fence("alice")},
			http.StatusUnprocessableEntity, []string{"there is nothing to fence", "kubectl annotate foreigncluster " + id + " liqo-janitor.io/fenced-"}},
		{"alice confirms and gives the reason ahead of the mark", alice, map[string]*string{
			liqojanitor.ConfirmAnnotation: s(id), liqojanitor.ReasonAnnotation: s("data centre lost")}, 0, nil},
		{"bob may not change her reason", bob, map[string]*string{liqojanitor.ReasonAnnotation: s("bob's")}, http.StatusForbidden,
			[]string{`user "bob" may not set`}},
		{"but may remove it", bob, map[string]*string{liqojanitor.ReasonAnnotation: nil}, 0, nil},
		{"alice marks, with the no-evidence key in the marking request", alice, map[string]*string{
			liqojanitor.MarkAnnotation: s("true"), liqojanitor.NoEvidenceAnnotation: s(id)}, 0, nil},
		{"a fence with no recorded return is refused", alice, map[string]*string{liqojanitor.FencedAnnotation: fence("alice")},
			http.StatusUnprocessableEntity, []string{"nothing to fence: the janitor has recorded no return", "kubectl liqo-janitor status " + id}},
		{"the janitor records a return", janitor, map[string]*string{liqojanitor.CleanupAnnotation: s(liqojanitor.ReturnRecord{At: time.Date(2026, 3, 1, 10, 5, 0, 0, time.UTC), How: "x"}.String())}, 0, nil},
		{"then alice fences", alice, map[string]*string{liqojanitor.FencedAnnotation: fence("alice")}, 0, nil},
		{"alice unmarks (with the webhook absent the keys stay)", alice, map[string]*string{liqojanitor.MarkAnnotation: nil}, 0, nil},
		{"a mark does not start fenced, nor with a no-evidence key set before it", alice, map[string]*string{liqojanitor.MarkAnnotation: s("true")},
			http.StatusUnprocessableEntity, []string{"a mark never starts fenced", "remove it first: kubectl annotate foreigncluster " + id + " liqo-janitor.io/fenced-"}},
		{"anyone removes the fence record of an unmarked cluster", bob, map[string]*string{liqojanitor.FencedAnnotation: nil}, 0, nil},
		{"the no-evidence key set before the mark does not count", alice, map[string]*string{liqojanitor.MarkAnnotation: s("true")},
			http.StatusUnprocessableEntity, []string{"this one was set before: remove it (kubectl annotate foreigncluster " + id + " liqo-janitor.io/no-reachability-evidence-)"}},
		{"removed, the mark passes", alice, map[string]*string{liqojanitor.NoEvidenceAnnotation: nil}, 0, nil},
		{"alice marks again", alice, map[string]*string{liqojanitor.MarkAnnotation: s("true")}, 0, nil},
	}
	for _, step := range steps {
		err := annotate(ctx, step.by, fc.Name, step.annotations)
		if step.code == 0 {
			g.Expect(err).NotTo(HaveOccurred(), step.name)
			continue
		}
		expectPolicyRefused(g, err, step.code, step.refused...)
	}
}

// TestPolicyRefusesForeignClustersCreatedMarkedWithoutTheGate: gate rule 13. A ForeignCluster cannot be
// born dead, not even confirmed and created by a cluster admin (who holds every verb): it is created
// unmarked, and marked afterwards.
func TestPolicyRefusesForeignClustersCreatedMarkedWithoutTheGate(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	applyPolicyFallback(t)

	const id = "provider-born-dead"
	born := &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: id,
		Annotations: map[string]string{liqojanitor.ConfirmAnnotation: id, liqojanitor.MarkAnnotation: liqojanitor.MarkValue}},
		Spec: liqov1beta1.ForeignClusterSpec{ClusterID: id}}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), born) })
	expectPolicyDenied(g, env.Client.Create(ctx, born.DeepCopy()), "ForeignCluster "+id+" cannot be created already marked",
		"kubectl annotate foreigncluster "+id+" liqo-janitor.io/confirm-cluster-id="+id+" "+liqojanitor.MarkAnnotation+"=true")
	g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Name: id}, &liqov1beta1.ForeignCluster{}))).To(BeTrue(),
		"nothing was created")

	// The next step the message gives works: create it unmarked, then confirm and mark it.
	createForeignCluster(t, id, nil)
	g.Expect(fixture.MarkCluster(ctx, env.Client, born)).To(Succeed())
	g.Expect(annotationsOf(ctx, g, env.Client, id)).To(Equal(map[string]string{liqojanitor.ConfirmAnnotation: id, liqojanitor.MarkAnnotation: "true"}))
}

// TestPolicyKeepsTheMarkRecordWhileMarkedWithoutTheGate: gate rules 6 and 14. While the mark is set, the
// confirmation, the stamps and the operator's reason cannot be added, removed or changed by anyone (a
// hand-written marked-at must never shorten the grace period); before the mark, and once it is removed,
// they are free.
func TestPolicyKeepsTheMarkRecordWhileMarkedWithoutTheGate(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	applyPolicyFallback(t)

	const id, bare = "provider-record", "provider-record-bare"
	createForeignCluster(t, id, nil)
	createForeignCluster(t, bare, nil)

	// Unmarked, the operator may write and rewrite the confirmation and the reason.
	for _, kv := range []map[string]*string{
		{liqojanitor.ReasonAnnotation: s("datacentre lost"), liqojanitor.ConfirmAnnotation: s("provider-typo")},
		{liqojanitor.ReasonAnnotation: s("datacentre eu-1 lost"), liqojanitor.ConfirmAnnotation: s(id)},
	} {
		g.Expect(annotate(ctx, env.Client, id, kv)).To(Succeed())
	}
	// The marking request carries the stamps, as the gate's mutating webhook writes them into it, naming its
	// requester.
	stamps := map[string]*string{liqojanitor.MarkAnnotation: s("true"),
		liqojanitor.MarkedByAnnotation: s(whoAmI(t, env.Client)), liqojanitor.MarkedAtAnnotation: s("2026-03-01T10:00:00Z")}
	g.Expect(annotate(ctx, env.Client, id, stamps)).To(Succeed())
	g.Expect(annotate(ctx, env.Client, bare, map[string]*string{liqojanitor.ConfirmAnnotation: s(bare), liqojanitor.MarkAnnotation: s("true")})).To(Succeed())

	denied := map[string]struct {
		name string
		kv   map[string]*string
		key  string
	}{
		"changing the confirmation":                        {id, map[string]*string{liqojanitor.ConfirmAnnotation: s("provider-other")}, liqojanitor.ConfirmAnnotation},
		"removing the confirmation":                        {id, map[string]*string{liqojanitor.ConfirmAnnotation: nil}, liqojanitor.ConfirmAnnotation},
		"changing marked-by":                               {id, map[string]*string{liqojanitor.MarkedByAnnotation: s("bob")}, liqojanitor.MarkedByAnnotation},
		"removing marked-by":                               {id, map[string]*string{liqojanitor.MarkedByAnnotation: nil}, liqojanitor.MarkedByAnnotation},
		"moving marked-at back, which would shorten grace": {id, map[string]*string{liqojanitor.MarkedAtAnnotation: s("2026-01-01T00:00:00Z")}, liqojanitor.MarkedAtAnnotation},
		"removing marked-at":                               {id, map[string]*string{liqojanitor.MarkedAtAnnotation: nil}, liqojanitor.MarkedAtAnnotation},
		"changing the reason":                              {id, map[string]*string{liqojanitor.ReasonAnnotation: s("nothing happened")}, liqojanitor.ReasonAnnotation},
		"removing the reason":                              {id, map[string]*string{liqojanitor.ReasonAnnotation: nil}, liqojanitor.ReasonAnnotation},
		"adding marked-at to an unstamped mark":            {bare, map[string]*string{liqojanitor.MarkedAtAnnotation: s("2026-01-01T00:00:00Z")}, liqojanitor.MarkedAtAnnotation},
		"adding marked-by to an unstamped mark":            {bare, map[string]*string{liqojanitor.MarkedByAnnotation: s("alice")}, liqojanitor.MarkedByAnnotation},
		"adding a reason to a marked cluster":              {bare, map[string]*string{liqojanitor.ReasonAnnotation: s("an afterthought")}, liqojanitor.ReasonAnnotation},
	}
	for name, tc := range denied {
		t.Run(name, func(t *testing.T) {
			expectPolicyDenied(NewWithT(t), annotate(t.Context(), env.Client, tc.name, tc.kv),
				"ForeignCluster "+tc.name+" is marked permanently unreachable: "+tc.key+" cannot be added, removed or changed",
				"kubectl annotate foreigncluster "+tc.name+" "+liqojanitor.MarkAnnotation+"-")
		})
	}

	// What is not the record stays open on a marked cluster; removing the mark removes the record with it.
	g.Expect(annotate(ctx, env.Client, id, map[string]*string{"example.com/ticket": s("INC-42"), liqojanitor.PausedAnnotation: s("true")})).To(Succeed())
	g.Expect(annotate(ctx, env.Client, id, map[string]*string{liqojanitor.MarkAnnotation: nil, liqojanitor.ConfirmAnnotation: nil,
		liqojanitor.MarkedByAnnotation: nil, liqojanitor.MarkedAtAnnotation: nil})).To(Succeed())
	g.Expect(annotate(ctx, env.Client, id, map[string]*string{liqojanitor.ReasonAnnotation: s("false alarm")})).To(Succeed(), "unmarked, the reason is free again")

	g.Expect(annotationsOf(ctx, g, env.Client, id)).To(Equal(map[string]string{"example.com/ticket": "INC-42",
		liqojanitor.PausedAnnotation: "true", liqojanitor.ReasonAnnotation: "false alarm"}))
	g.Expect(annotationsOf(ctx, g, env.Client, bare)).To(Equal(map[string]string{liqojanitor.ConfirmAnnotation: bare, liqojanitor.MarkAnnotation: "true"}))
}

// TestPolicyLocksLiqoLabelsWhileMarkedWithoutTheGate: gate rule 11. While a ForeignCluster carries the
// mark (before or after the request), nobody may add, remove or change liqo.io/remote-cluster-id or
// liqo.io/webhook-skip; Liqo's own writes on unmarked ForeignClusters (those labels, status) and its status
// writes on marked ones pass.
func TestPolicyLocksLiqoLabelsWhileMarkedWithoutTheGate(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	applyPolicyFallback(t)

	const liqoUser = "system:serviceaccount:liqo:liqo-controller-manager"
	grantRole(t, "policy-liqo-controller", []rbacv1.PolicyRule{{APIGroups: []string{"core.liqo.io"},
		Resources: []string{"foreignclusters", "foreignclusters/status"}, Verbs: []string{"get", "update", "patch"}}}, liqoUser)
	liqo := impersonate(t, liqoUser)

	const id, other = "provider-labels", "provider-labels-2"
	fc := createForeignCluster(t, id, map[string]string{liqojanitor.RemoteClusterIDLabel: id})
	createForeignCluster(t, other, map[string]string{liqojanitor.RemoteClusterIDLabel: other})

	// Unmarked: Liqo (or anyone allowed) may write its labels, and the status.
	for _, labels := range []map[string]*string{
		{liqojanitor.WebhookSkipLabel: s("true")},
		{liqojanitor.RemoteClusterIDLabel: s("provider-elsewhere")},
		{liqojanitor.RemoteClusterIDLabel: s(id), liqojanitor.WebhookSkipLabel: nil},
	} {
		g.Expect(patchMeta(ctx, liqo, id, labels, nil)).To(Succeed(), "unmarked: %v", labels)
	}
	g.Expect(fixture.SetAPIServerStatus(ctx, liqo, fc, liqov1beta1.ConditionStatusError, time.Hour)).To(Succeed())

	g.Expect(fixture.MarkCluster(ctx, env.Client, fc)).To(Succeed())

	// Marked: Liqo's status writes and other labels still pass.
	g.Expect(fixture.SetAPIServerStatus(ctx, liqo, fc, liqov1beta1.ConditionStatusEstablished, 0)).To(Succeed())
	g.Expect(fixture.SetAPIServerStatus(ctx, liqo, fc, liqov1beta1.ConditionStatusError, 0)).To(Succeed())
	g.Expect(patchMeta(ctx, liqo, id, map[string]*string{"example.com/zone": s("eu-1")}, nil)).To(Succeed())

	unmark := "kubectl annotate foreigncluster " + id + " " + liqojanitor.MarkAnnotation + "-"
	// Locked for everyone: Liqo's controller and a cluster admin holding the break-glass verb alike (the
	// requests that also mark or unmark only for the admin: Liqo's controller lacks the verb, refused first).
	everyone, admin := []client.Client{liqo, env.Client}, []client.Client{env.Client}
	denied := map[string]struct {
		name                string
		labels, annotations map[string]*string
		by                  []client.Client
		fragments           []string
	}{
		"adding webhook-skip to a marked cluster": {name: id, labels: map[string]*string{liqojanitor.WebhookSkipLabel: s("true")}, by: everyone,
			fragments: []string{"the label " + liqojanitor.WebhookSkipLabel + " cannot be added, removed or changed", "remove the mark first", unmark}},
		"removing remote-cluster-id from a marked cluster": {name: id, labels: map[string]*string{liqojanitor.RemoteClusterIDLabel: nil}, by: everyone,
			fragments: []string{"the label " + liqojanitor.RemoteClusterIDLabel + " cannot", unmark}},
		"changing remote-cluster-id of a marked cluster": {name: id, labels: map[string]*string{liqojanitor.RemoteClusterIDLabel: s("provider-elsewhere")}, by: everyone,
			fragments: []string{"the label " + liqojanitor.RemoteClusterIDLabel + " cannot", unmark}},
		"removing the mark and remote-cluster-id in one request": {name: id, labels: map[string]*string{liqojanitor.RemoteClusterIDLabel: nil},
			annotations: map[string]*string{liqojanitor.MarkAnnotation: nil}, by: admin,
			fragments: []string{liqojanitor.RemoteClusterIDLabel, "remove the mark first, in a request of its own"}},
		"marking and adding webhook-skip in one request": {name: other, labels: map[string]*string{liqojanitor.WebhookSkipLabel: s("true")},
			annotations: map[string]*string{liqojanitor.ConfirmAnnotation: s(other), liqojanitor.MarkAnnotation: s("true")}, by: admin,
			fragments: []string{liqojanitor.WebhookSkipLabel, "change the label in a request of its own, before marking"}},
	}
	for name, tc := range denied {
		t.Run(name, func(t *testing.T) {
			for _, c := range tc.by {
				expectPolicyDenied(NewWithT(t), patchMeta(t.Context(), c, tc.name, tc.labels, tc.annotations), tc.fragments...)
			}
		})
	}

	// Unmarked again, the labels are free.
	g.Expect(annotate(ctx, env.Client, id, map[string]*string{liqojanitor.MarkAnnotation: nil})).To(Succeed())
	g.Expect(patchMeta(ctx, liqo, id, map[string]*string{liqojanitor.WebhookSkipLabel: s("true")}, nil)).To(Succeed())

	got := &liqov1beta1.ForeignCluster{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: id}, got)).To(Succeed())
	g.Expect(got.Labels).To(Equal(map[string]string{liqojanitor.RemoteClusterIDLabel: id, "example.com/zone": "eu-1", liqojanitor.WebhookSkipLabel: "true"}))
	g.Expect(got.Status.Conditions).To(ContainElement(HaveField("Status", liqov1beta1.ConditionStatusError)))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: other}, got)).To(Succeed())
	g.Expect(got.Labels).To(Equal(map[string]string{liqojanitor.RemoteClusterIDLabel: other}))
	g.Expect(got.Annotations).To(BeEmpty())
}

// TestPolicyLetsOnlyTheJanitorWriteItsRecordsWithoutTheGate: gate rule 14. The janitor's own annotations
// (cleanup, first-seen-at, grace-ends-at) are set, changed and removed only by the janitor's ServiceAccount,
// marked or not; the one exception is the request that removes the mark, which may remove first-seen-at,
// grace-ends-at and a grace-window plan (as the gate's mutating webhook does, as the requesting user), but
// not the summary of a clean-up that did happen.
func TestPolicyLetsOnlyTheJanitorWriteItsRecordsWithoutTheGate(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	applyPolicyFallback(t)

	grantRole(t, "policy-janitor", []rbacv1.PolicyRule{{APIGroups: []string{"core.liqo.io"},
		Resources: []string{"foreignclusters"}, Verbs: []string{"get", "patch"}}}, janitorUser)
	janitor := impersonate(t, janitorUser)

	const id = "provider-records"
	fc := createForeignCluster(t, id, nil)
	refused := func(g Gomega, err error, keys ...string) {
		expectPolicyForbidden(g, err, append(keys, "only liqo-janitor itself ("+janitorUser+") writes its own records",
			"kubectl annotate foreigncluster "+id+" liqo-janitor.io/paused=true")...)
	}
	g.Expect(liqojanitor.JanitorOwnedAnnotations).To(ConsistOf(liqojanitor.CleanupAnnotation,
		liqojanitor.FirstSeenAnnotation, liqojanitor.GraceEndsAnnotation, liqojanitor.UnpeeringAnnotation),
		"a new janitor-owned key must be added to the policy")

	// Not even a cluster admin writes the janitor's words, on an unmarked cluster or in a new one.
	for _, key := range liqojanitor.JanitorOwnedAnnotations {
		refused(g, annotate(ctx, env.Client, id, map[string]*string{key: s("2026-03-01T10:00:00Z")}), "may not set, change or remove "+key)
	}
	forged := &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: "provider-forged",
		Annotations: map[string]string{liqojanitor.CleanupAnnotation: "pods 120/120"}}, Spec: liqov1beta1.ForeignClusterSpec{ClusterID: "provider-forged"}}
	expectPolicyForbidden(g, env.Client.Create(ctx, forged, client.DryRunAll),
		"may not set, change or remove "+liqojanitor.CleanupAnnotation+" on ForeignCluster provider-forged", janitorUser)

	// Marked, the janitor records its first sight and its plan; nobody else may touch them.
	g.Expect(fixture.MarkCluster(ctx, env.Client, fc)).To(Succeed())
	plan := liqojanitor.GracePlan{Left: 20 * time.Second, Plan: "would release pods 3, resourceslices 1"}.String()
	g.Expect(fixture.Annotate(ctx, janitor, fc, map[string]*string{liqojanitor.FirstSeenAnnotation: s("2026-03-01T10:00:05Z"),
		liqojanitor.GraceEndsAnnotation: s("2026-03-01T10:00:35Z"), liqojanitor.CleanupAnnotation: s(plan),
		liqojanitor.UnpeeringAnnotation: s(liqojanitor.Unpeering{Phase: liqojanitor.UnpeeringInProgress}.String())})).To(Succeed())
	for _, key := range liqojanitor.JanitorOwnedAnnotations {
		refused(g, annotate(ctx, env.Client, id, map[string]*string{key: s("forged")}), key)
		refused(g, annotate(ctx, env.Client, id, map[string]*string{key: nil}), key)
	}
	plan = liqojanitor.GracePlan{Left: 10 * time.Second, Plan: "would release pods 3, resourceslices 1"}.String()
	g.Expect(fixture.Annotate(ctx, janitor, fc, map[string]*string{liqojanitor.CleanupAnnotation: s(plan)})).To(Succeed())

	// Unmarking may remove the grace-window records, never rewrite them.
	refused(g, annotate(ctx, env.Client, id, map[string]*string{liqojanitor.MarkAnnotation: nil, liqojanitor.FirstSeenAnnotation: s("2026-03-01T09:00:00Z")}),
		"may not set, change or remove "+liqojanitor.FirstSeenAnnotation+" on")
	g.Expect(annotate(ctx, env.Client, id, map[string]*string{liqojanitor.MarkAnnotation: nil, liqojanitor.ConfirmAnnotation: nil,
		liqojanitor.FirstSeenAnnotation: nil, liqojanitor.GraceEndsAnnotation: nil, liqojanitor.CleanupAnnotation: nil,
		liqojanitor.UnpeeringAnnotation: nil})).To(Succeed(),
		"the request that removes the mark removes the plan of a clean-up that will not happen, and the unpeering record")
	g.Expect(annotationsOf(ctx, g, env.Client, id)).To(BeEmpty())

	// A clean-up that did happen keeps its summary when the mark goes.
	g.Expect(fixture.MarkCluster(ctx, env.Client, fc)).To(Succeed())
	summary := "pods 3/3, resourceslices 1/1"
	g.Expect(fixture.Annotate(ctx, janitor, fc, map[string]*string{liqojanitor.FirstSeenAnnotation: s("2026-03-02T10:00:05Z"),
		liqojanitor.GraceEndsAnnotation: s("2026-03-02T10:00:35Z"), liqojanitor.CleanupAnnotation: s(summary)})).To(Succeed())
	refused(g, annotate(ctx, env.Client, id, map[string]*string{liqojanitor.MarkAnnotation: nil, liqojanitor.CleanupAnnotation: nil,
		liqojanitor.FirstSeenAnnotation: nil, liqojanitor.GraceEndsAnnotation: nil}), "may not set, change or remove "+liqojanitor.CleanupAnnotation+" on")
	g.Expect(annotate(ctx, env.Client, id, map[string]*string{liqojanitor.MarkAnnotation: nil, liqojanitor.ConfirmAnnotation: nil,
		liqojanitor.FirstSeenAnnotation: nil, liqojanitor.GraceEndsAnnotation: nil})).To(Succeed())
	g.Expect(annotationsOf(ctx, g, env.Client, id)).To(Equal(map[string]string{liqojanitor.CleanupAnnotation: summary}))
	// … which only the janitor may remove.
	refused(g, annotate(ctx, env.Client, id, map[string]*string{liqojanitor.CleanupAnnotation: nil}), liqojanitor.CleanupAnnotation)
	g.Expect(fixture.Annotate(ctx, janitor, fc, map[string]*string{liqojanitor.CleanupAnnotation: nil})).To(Succeed())
	g.Expect(annotationsOf(ctx, g, env.Client, id)).To(BeEmpty())
}

// TestPolicyKeepsAMarkedForeignClusterWhileItsUnpeeringRunsWithoutTheGate: gate rules 16 and 17. With the
// webhook absent the policy cannot see the tenant namespaces: a marked ForeignCluster is deleted only once
// the janitor's record says its unpeering is complete, or with the override by a holder of the verb. An
// unmarked one deletes untouched.
func TestPolicyKeepsAMarkedForeignClusterWhileItsUnpeeringRunsWithoutTheGate(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	applyPolicyFallback(t)
	grantRole(t, "policy-deleter", []rbacv1.PolicyRule{{APIGroups: []string{"core.liqo.io"},
		Resources: []string{"foreignclusters"}, Verbs: []string{"get", "patch", "delete"}}}, "carol", janitorUser)
	carol, janitor := impersonate(t, "carol"), impersonate(t, janitorUser)
	deleteFC := func(c client.Client, id string) error {
		return c.Delete(ctx, &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: id}})
	}
	gone := func(id string) bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Name: id}, &liqov1beta1.ForeignCluster{}))
	}

	const unmarked = "provider-del-unmarked"
	createForeignCluster(t, unmarked, nil)
	g.Expect(deleteFC(carol, unmarked)).To(Succeed(), "an unmarked ForeignCluster deletes untouched")

	const id = "provider-del"
	fc := createForeignCluster(t, id, nil)
	g.Expect(fixture.MarkCluster(ctx, env.Client, fc)).To(Succeed())
	midway := func(g Gomega, err error) {
		expectPolicyDenied(g, err, "ForeignCluster "+id+" is marked permanently unreachable and liqo-janitor has not recorded its unpeering complete",
			"WITHOUT the mark", "kubectl liqo-janitor status "+id+" says unpeering complete", "liqoctl force unpeer "+id,
			"kubectl annotate foreigncluster "+id+" liqo-janitor.io/allow-delete-while-unpeering="+id+" --overwrite")
	}
	midway(g, deleteFC(carol, id))
	midway(g, deleteFC(env.Client, id)) // a cluster admin too: the override is the way
	g.Expect(fixture.Annotate(ctx, janitor, fc, map[string]*string{liqojanitor.UnpeeringAnnotation: s(
		liqojanitor.Unpeering{Phase: liqojanitor.UnpeeringInProgress, TenantNamespace: "liqo-tenant-" + id}.String())})).To(Succeed())
	midway(g, deleteFC(carol, id))

	// the override: break-glass to set, and to use
	expectPolicyForbidden(g, annotate(ctx, carol, id, map[string]*string{liqojanitor.AllowDeleteAnnotation: s(id)}),
		`user "carol" may not set the break-glass override liqo-janitor.io/allow-delete-while-unpeering`)
	g.Expect(annotate(ctx, env.Client, id, map[string]*string{liqojanitor.AllowDeleteAnnotation: s(id)})).To(Succeed())
	expectPolicyForbidden(g, deleteFC(carol, id), `user "carol" may not use the break-glass override`,
		"--clusterrole=liqo-janitor:mark-unreachable --user=carol")
	g.Expect(gone(id)).To(BeFalse())

	// the janitor records the unpeering complete: the ForeignCluster goes, for anyone who may delete it
	g.Expect(fixture.Annotate(ctx, janitor, fc, map[string]*string{liqojanitor.UnpeeringAnnotation: s(
		liqojanitor.Unpeering{Phase: liqojanitor.UnpeeringComplete}.String())})).To(Succeed())
	g.Expect(deleteFC(carol, id)).To(Succeed())
	g.Expect(gone(id)).To(BeTrue())

	// and the override, used by a holder of the verb
	const other = "provider-del-override"
	fc = createForeignCluster(t, other, nil)
	g.Expect(fixture.MarkCluster(ctx, env.Client, fc)).To(Succeed())
	// set on the marked ForeignCluster: a mark never starts with it (gate rule 22)
	g.Expect(annotate(ctx, env.Client, other, map[string]*string{liqojanitor.AllowDeleteAnnotation: s(other)})).To(Succeed())
	g.Expect(deleteFC(env.Client, other)).To(Succeed())
	g.Expect(gone(other)).To(BeTrue())
}

// TestPolicyKeepsAMarkedForeignClusterWithAnUnfencedReturnWithoutTheGate: gate rule 30. With the webhook
// absent, a marked ForeignCluster whose unpeering the janitor recorded complete but whose provider's return
// it recorded (its cleanup record) is not deleted until a fence record stamped for that very return is
// there — one of another return, or unstamped, fences nothing — unless a holder of the verb uses the
// override (gate rule 17).
func TestPolicyKeepsAMarkedForeignClusterWithAnUnfencedReturnWithoutTheGate(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	applyPolicyFallback(t)
	grantRole(t, "policy-return-deleter", []rbacv1.PolicyRule{{APIGroups: []string{"core.liqo.io"},
		Resources: []string{"foreignclusters"}, Verbs: []string{"get", "patch", "delete"}}}, "carol", janitorUser)
	grantRole(t, "policy-fencer", []rbacv1.PolicyRule{{APIGroups: []string{"core.liqo.io"},
		Resources: []string{"foreignclusters"}, Verbs: []string{"get", "patch", liqojanitor.MarkVerb}}}, "dave")
	carol, dave, janitor := impersonate(t, "carol"), impersonate(t, "dave"), impersonate(t, janitorUser)
	deleteFC := func(c client.Client, id string) error {
		return c.Delete(ctx, &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: id}})
	}
	returned := func(id string) (*liqov1beta1.ForeignCluster, time.Time) {
		fc := createForeignCluster(t, id, nil)
		g.Expect(fixture.MarkCluster(ctx, env.Client, fc)).To(Succeed())
		at := time.Now().UTC().Truncate(time.Millisecond)
		g.Expect(fixture.Annotate(ctx, janitor, fc, map[string]*string{
			liqojanitor.UnpeeringAnnotation: s(liqojanitor.Unpeering{Phase: liqojanitor.UnpeeringComplete}.String()),
			liqojanitor.CleanupAnnotation: s(liqojanitor.ReturnRecord{At: at, How: "Liqo's APIServerStatus turned Established",
				Marked: "alice", Next: "fence"}.String()),
		})).To(Succeed())
		return fc, at
	}
	unfenced := func(g Gomega, err error, id string, at time.Time) {
		expectPolicyDenied(g, err, "ForeignCluster "+id+" is marked permanently unreachable and its provider answered again",
			"liqo-janitor recorded its return at "+liqojanitor.RecordTime(at), "may still run this consumer's workloads",
			"kubectl liqo-janitor fence "+id+" --provider-kubeconfig <provider kubeconfig>",
			"kubectl annotate foreigncluster "+id+" liqo-janitor.io/allow-delete-while-unpeering="+id+" --overwrite")
	}
	fence := func(id string, rec liqojanitor.FenceRecord) {
		g.Expect(annotate(ctx, dave, id, map[string]*string{liqojanitor.FencedAnnotation: s(rec.String())})).To(Succeed())
	}

	const id = "provider-returned"
	_, at := returned(id)
	unfenced(g, deleteFC(carol, id), id, at)
	unfenced(g, deleteFC(env.Client, id), id, at) // a cluster admin too: the override is the way
	fence(id, liqojanitor.FenceRecord{At: time.Now(), By: "dave", Counts: "pods 2"})
	unfenced(g, deleteFC(carol, id), id, at) // not stamped for a return
	fence(id, liqojanitor.FenceRecord{At: time.Now(), By: "dave", Return: at.Add(-time.Second), Counts: "pods 2"})
	unfenced(g, deleteFC(carol, id), id, at) // another return's
	fence(id, liqojanitor.FenceRecord{At: time.Now(), By: "dave", Return: at, Counts: "pods 2"})
	g.Expect(deleteFC(carol, id)).To(Succeed(), "a fence of that very return lets it go")

	// the override: for a holder of the verb only
	const other = "provider-returned-override"
	returned(other)
	g.Expect(annotate(ctx, env.Client, other, map[string]*string{liqojanitor.AllowDeleteAnnotation: s(other)})).To(Succeed())
	expectPolicyForbidden(g, deleteFC(carol, other), `user "carol" may not use the break-glass override`,
		"while its provider's return is not fenced")
	g.Expect(deleteFC(env.Client, other)).To(Succeed())
}

// TestPolicyRefusesTheUninstallersBareMarkWithoutTheGate: gate rule 18. With the webhook absent nobody
// writes the confirmation for Liqo's uninstaller, so its bare mark is refused (fail closed); and with gate
// rule 18 off (the chart's default, rendered into manifests/policy) even a mark stamped and confirmed in its
// name as the gate's mutating webhook does needs the break-glass verb, as anyone's.
func TestPolicyRefusesTheUninstallersBareMarkWithoutTheGate(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	applyPolicyFallback(t)
	uninstallerUser := webhook.DefaultLiqoUninstallerUsers(liqojanitor.DefaultLiqoNamespace)[0]
	grantRole(t, "policy-uninstaller", []rbacv1.PolicyRule{{APIGroups: []string{"core.liqo.io"},
		Resources: []string{"foreignclusters"}, Verbs: []string{"get", "patch"}}}, uninstallerUser, "dave")
	uninstaller, dave := impersonate(t, uninstallerUser), impersonate(t, "dave")

	const id = "provider-uninstalled"
	createForeignCluster(t, id, nil)
	expectPolicyDenied(g, annotate(ctx, uninstaller, id, map[string]*string{liqojanitor.MarkAnnotation: s("true")}),
		"needs the confirmation liqo-janitor.io/confirm-cluster-id")

	stampedAs := func(user string) map[string]*string {
		return map[string]*string{liqojanitor.MarkAnnotation: s("true"), liqojanitor.ConfirmAnnotation: s(id),
			liqojanitor.MarkedByAnnotation: s(user), liqojanitor.MarkedAtAnnotation: s(time.Now().UTC().Format(time.RFC3339))}
	}
	expectPolicyForbidden(g, annotate(ctx, dave, id, stampedAs("dave")), `user "dave" may not mark it permanently unreachable`)
	expectPolicyForbidden(g, annotate(ctx, uninstaller, id, stampedAs("dave")), "may not mark it permanently unreachable")
	expectPolicyForbidden(g, annotate(ctx, uninstaller, id, stampedAs(uninstallerUser)),
		`user "`+uninstallerUser+`" may not mark it permanently unreachable`)
	g.Expect(annotationsOf(ctx, g, env.Client, id)).NotTo(HaveKey(liqojanitor.MarkAnnotation))
}

// TestPolicyKeepsTheTunnelVetoAndTheStormsAcknowledgementWithoutTheGate: gate rules 20 and 21 as CEL can.
// A mark is refused while Liqo reports the tunnel Established (not the wait after it left Established: CEL
// has no clock); the storm's acknowledgement comes only in the marking request, from a holder of the verb
// (Liqo's uninstaller included), with a stamp naming the requester, and neither changes while marked (the
// count itself is the gate's: CEL cannot list the other ForeignClusters).
func TestPolicyKeepsTheTunnelVetoAndTheStormsAcknowledgementWithoutTheGate(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	applyPolicyFallback(t)
	uninstallerUser := webhook.DefaultLiqoUninstallerUsers(liqojanitor.DefaultLiqoNamespace)[0]
	grantRole(t, "policy-storm-editors", []rbacv1.PolicyRule{{APIGroups: []string{"core.liqo.io"},
		Resources: []string{"foreignclusters"}, Verbs: []string{"get", "update", "patch"}}}, "alice", uninstallerUser)
	grantRole(t, "policy-storm-marker", []rbacv1.PolicyRule{{APIGroups: []string{"core.liqo.io"},
		Resources: []string{"foreignclusters"}, Verbs: []string{"mark-unreachable"}}}, "alice")
	alice, uninstaller := impersonate(t, "alice"), impersonate(t, uninstallerUser)
	const id, other = "provider-tunnel", "provider-tunnel-uninstalled"
	fc := createForeignCluster(t, id, nil)
	createForeignCluster(t, other, nil)
	// wait until the verb is granted (an early success of the dry run changes nothing)
	g.Eventually(func() error {
		return annotate(ctx, alice, id, map[string]*string{liqojanitor.ConfirmAnnotation: s(id)}, client.DryRunAll)
	}).Should(Succeed())

	setTunnel := func(name string, status liqov1beta1.ConditionStatusType) {
		latest := &liqov1beta1.ForeignCluster{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, latest)).To(Succeed())
		latest.Status.Role = liqov1beta1.ProviderRole
		latest.Status.Modules.Networking = liqov1beta1.Module{Enabled: true, Conditions: []liqov1beta1.Condition{{
			Type: liqov1beta1.NetworkConnectionStatusCondition, Status: status, LastTransitionTime: metav1.Now()}}}
		g.Expect(env.Client.Status().Update(ctx, latest)).To(Succeed())
	}
	ackStamp := func(user string) *string {
		return s(liqojanitor.Acknowledgement{At: time.Now(), By: user, Count: 3}.String())
	}
	mark := map[string]*string{liqojanitor.ConfirmAnnotation: s(id), liqojanitor.MarkAnnotation: s("true")}
	with := func(kv ...any) map[string]*string {
		out := map[string]*string{}
		maps.Copy(out, mark)
		for i := 0; i < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1].(*string)
		}
		return out
	}

	setTunnel(id, liqov1beta1.ConditionStatusEstablished)
	setTunnel(other, liqov1beta1.ConditionStatusEstablished)
	type step struct {
		name        string
		by          client.Client
		target      string
		annotations map[string]*string
		code        int32    // 0: allowed
		refused     []string // fragments of the refusal
	}
	run := func(steps []step) {
		for _, step := range steps {
			err := annotate(ctx, step.by, step.target, step.annotations)
			if step.code == 0 {
				g.Expect(err).NotTo(HaveOccurred(), step.name)
				continue
			}
			expectPolicyRefused(g, err, step.code, step.refused...)
		}
	}
	run([]step{
		{"no mark while the tunnel is up", alice, id, mark, http.StatusUnprocessableEntity,
			[]string{"Liqo reports the data plane to the provider as up (its tunnel: NetworkConnectionStatus Established)", "its nodes and pods still run"}},
		{"nor by Liqo's uninstaller (gate rule 18 off by default: it needs the verb first)", uninstaller, other, map[string]*string{liqojanitor.ConfirmAnnotation: s(other), liqojanitor.MarkAnnotation: s("true"),
			liqojanitor.MarkedByAnnotation: s(uninstallerUser), liqojanitor.MarkedAtAnnotation: s(time.Now().UTC().Format(time.RFC3339))},
			http.StatusForbidden, []string{"may not mark it permanently unreachable"}},
		{"nobody acknowledges a storm ahead of the mark", alice, id, map[string]*string{liqojanitor.AcknowledgeUnreachableAnnotation: s("3")},
			http.StatusUnprocessableEntity, []string{"counts only in the request that sets the mark", "give it with the mark: kubectl liqo-janitor mark " + id}},
		{"nor writes its stamp", alice, id, map[string]*string{liqojanitor.AcknowledgedByAnnotation: ackStamp("alice")},
			http.StatusUnprocessableEntity, []string{"liqo-janitor.io/acknowledged-by is written only by liqo-janitor's mutating webhook"}},
	})
	g.Expect(annotationsOf(ctx, g, env.Client, id)).To(BeEmpty())

	setTunnel(id, liqov1beta1.ConditionStatusError)
	setTunnel(other, liqov1beta1.ConditionStatusError)
	uninstallerMark := map[string]*string{liqojanitor.ConfirmAnnotation: s(other), liqojanitor.MarkAnnotation: s("true"),
		liqojanitor.MarkedByAnnotation: s(uninstallerUser), liqojanitor.MarkedAtAnnotation: s(time.Now().UTC().Format(time.RFC3339))}
	uninstallerAck := map[string]*string{liqojanitor.AcknowledgeUnreachableAnnotation: s("3"), liqojanitor.AcknowledgedByAnnotation: ackStamp(uninstallerUser)}
	maps.Copy(uninstallerAck, uninstallerMark)
	run([]step{
		{"a stamp in another's name is refused", alice, id, with(liqojanitor.AcknowledgeUnreachableAnnotation, s("3"), liqojanitor.AcknowledgedByAnnotation, ackStamp("bob")),
			http.StatusUnprocessableEntity, []string{"naming the requesting user", "liqo-janitor.io/acknowledged-by-"}},
		{"Liqo's uninstaller acknowledging a storm needs the verb", uninstaller, other, uninstallerAck,
			http.StatusForbidden, []string{"may not mark it permanently unreachable"}},
		{"and so does its bare mark, stamped (gate rule 18 off by default)", uninstaller, other, uninstallerMark,
			http.StatusForbidden, []string{"may not mark it permanently unreachable"}},
		{"alice marks with the acknowledgement, stamped in her name", alice, id,
			with(liqojanitor.AcknowledgeUnreachableAnnotation, s("3"), liqojanitor.AcknowledgedByAnnotation, ackStamp("alice")), 0, nil},
		{"the acknowledgement does not change while marked", alice, id, map[string]*string{liqojanitor.AcknowledgeUnreachableAnnotation: s("4")},
			http.StatusUnprocessableEntity, []string{"liqo-janitor.io/acknowledge-unreachable cannot be added, removed or changed"}},
		{"nor its stamp", alice, id, map[string]*string{liqojanitor.AcknowledgedByAnnotation: nil},
			http.StatusUnprocessableEntity, []string{"liqo-janitor.io/acknowledged-by cannot be added, removed or changed"}},
		{"alice unmarks (with the webhook absent the keys stay)", alice, id, map[string]*string{liqojanitor.MarkAnnotation: nil}, 0, nil},
		{"an acknowledgement set before the mark does not count", alice, id, map[string]*string{liqojanitor.MarkAnnotation: s("true")},
			http.StatusUnprocessableEntity, []string{"this one was set before: remove it (kubectl annotate foreigncluster " + id + " liqo-janitor.io/acknowledge-unreachable-)"}},
		{"removed, the mark passes", alice, id, map[string]*string{liqojanitor.AcknowledgeUnreachableAnnotation: nil, liqojanitor.AcknowledgedByAnnotation: nil}, 0, nil},
		{"alice marks again", alice, id, map[string]*string{liqojanitor.MarkAnnotation: s("true")}, 0, nil},
	})
	// cleanup: the marks go first, so that the ForeignClusters may be deleted
	for _, name := range []string{fc.Name, other} {
		g.Expect(annotate(ctx, env.Client, name, map[string]*string{liqojanitor.MarkAnnotation: nil})).To(Succeed())
	}
}

// whoAmI is the username the API server knows c by (a SelfSubjectReview).
func whoAmI(t *testing.T, c client.Client) string {
	t.Helper()
	review := &authenticationv1.SelfSubjectReview{}
	NewWithT(t).Expect(c.Create(t.Context(), review)).To(Succeed())
	return review.Status.UserInfo.Username
}

// TestPolicyRefusesPreWrittenStampsWithoutTheGate: gate rules 6, 22 and 23 as CEL can, with the webhook
// absent. marked-by, marked-at and mark-targets are set only by the request that sets the mark, marked-by
// naming its requester, and a marked-at written before the mark does not count for it; the deletion override
// is refused on an unmarked ForeignCluster and in a marking request, for a holder of the verb too; the record
// of the targets does not change while marked. A marking request whose stamps name its requester passes.
func TestPolicyRefusesPreWrittenStampsWithoutTheGate(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	const id, pre = "provider-stamps", "provider-stamps-pre"
	createForeignCluster(t, id, nil)
	// a marked-at written while neither the gate nor the policy ran
	createForeignCluster(t, pre, nil)
	g.Eventually(func() error { // until an earlier test's policy, deleted, is no longer enforced
		return annotate(ctx, env.Client, pre, map[string]*string{liqojanitor.MarkedAtAnnotation: s("2026-01-01T00:00:00Z")})
	}).WithTimeout(30 * time.Second).Should(Succeed())
	applyPolicyFallback(t)
	grantRole(t, "policy-stamps", []rbacv1.PolicyRule{{APIGroups: []string{"core.liqo.io"}, Resources: []string{"foreignclusters"},
		Verbs: []string{"get", "patch", "mark-unreachable"}}}, "alice")
	alice := impersonate(t, "alice")
	g.Eventually(func() error {
		return annotate(ctx, alice, id, map[string]*string{liqojanitor.ConfirmAnnotation: s(id)}, client.DryRunAll)
	}).Should(Succeed(), "the verb is granted")

	now := s(time.Now().UTC().Format(time.RFC3339))
	targets := s(liqojanitor.MarkTargets{Targets: liqojanitor.Targets{APIServer: "https://10.0.0.7:6443"}, From: "the ForeignCluster's status", At: time.Now()}.String())
	mark := func(name string, kv ...any) map[string]*string {
		out := map[string]*string{liqojanitor.ConfirmAnnotation: s(name), liqojanitor.MarkAnnotation: s("true")}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1].(*string)
		}
		return out
	}
	for name, tc := range map[string]struct {
		target string
		kv     map[string]*string
		want   string
	}{
		"marked-by ahead of the mark":               {id, map[string]*string{liqojanitor.MarkedByAnnotation: s("alice")}, "leave them out of this request"},
		"marked-at ahead of the mark":               {id, map[string]*string{liqojanitor.MarkedAtAnnotation: now}, "leave them out of this request"},
		"mark-targets ahead of the mark":            {id, map[string]*string{liqojanitor.MarkTargetsAnnotation: targets}, "leave them out of this request"},
		"a mark stamped in another's name":          {id, mark(id, liqojanitor.MarkedByAnnotation, s("bob"), liqojanitor.MarkedAtAnnotation, now), `naming its requester "alice"`},
		"a mark over a marked-at written before it": {pre, mark(pre, liqojanitor.MarkedByAnnotation, s("alice")), "or a marked-at written before it"},
		"the deletion override ahead of the mark":   {id, map[string]*string{liqojanitor.AllowDeleteAnnotation: s(id)}, "is set only on a marked one (gate rule 22)"},
		"the deletion override with the mark":       {id, mark(id, liqojanitor.AllowDeleteAnnotation, s(id)), "a mark never starts with it"},
	} {
		expectPolicyDenied(g, annotate(ctx, alice, tc.target, tc.kv), tc.want)
		g.Expect(annotationsOf(ctx, g, env.Client, tc.target)).NotTo(HaveKey(liqojanitor.MarkAnnotation), name)
	}
	g.Expect(annotationsOf(ctx, g, env.Client, id)).NotTo(Or(HaveKey(liqojanitor.MarkedByAnnotation), HaveKey(liqojanitor.MarkedAtAnnotation),
		HaveKey(liqojanitor.MarkTargetsAnnotation), HaveKey(liqojanitor.AllowDeleteAnnotation)))

	// the marking request's own stamps, naming its requester, pass; then the record is frozen
	g.Expect(annotate(ctx, alice, id, mark(id, liqojanitor.MarkedByAnnotation, s("alice"), liqojanitor.MarkedAtAnnotation, now,
		liqojanitor.MarkTargetsAnnotation, targets))).To(Succeed())
	g.Expect(annotationsOf(ctx, g, env.Client, id)).To(And(HaveKeyWithValue(liqojanitor.MarkedByAnnotation, "alice"),
		HaveKeyWithValue(liqojanitor.MarkTargetsAnnotation, *targets)))
	expectPolicyDenied(g, annotate(ctx, alice, id, map[string]*string{liqojanitor.MarkTargetsAnnotation: s("{}")}),
		"liqo-janitor.io/mark-targets cannot be added, removed or changed")
	// on the marked ForeignCluster the override is the verb's to set (gate rule 17)
	g.Expect(annotate(ctx, alice, id, map[string]*string{liqojanitor.AllowDeleteAnnotation: s(id)})).To(Succeed())
	// a marked-at removed first, the mark passes on the other one too
	g.Expect(annotate(ctx, alice, pre, map[string]*string{liqojanitor.MarkedAtAnnotation: nil})).To(Succeed())
	g.Expect(annotate(ctx, alice, pre, mark(pre, liqojanitor.MarkedByAnnotation, s("alice"), liqojanitor.MarkedAtAnnotation, now))).To(Succeed())
	// cleanup: the marks go first, so that the ForeignClusters may be deleted
	for _, name := range []string{id, pre} {
		g.Expect(annotate(ctx, env.Client, name, map[string]*string{liqojanitor.MarkAnnotation: nil})).To(Succeed())
	}
}
