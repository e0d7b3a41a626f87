package manifests_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// identityPolicy is the ValidatingAdmissionPolicy of the identity-secrets opt-in.
const identityPolicy = appName + "-identity-secrets"

// applyTemplate renders the chart into the install namespace with values and applies what one template
// of it rendered, until the test ends.
func applyTemplate(t *testing.T, values map[string]any, template string) {
	t.Helper()
	applyTemplateIn(t, installNS, values, template)
}

// applyTemplateIn is applyTemplate for the chart rendered into namespace ns.
func applyTemplateIn(t *testing.T, ns string, values map[string]any, template string) {
	t.Helper()
	env := harness.Require(t)
	_, r := render(t, ns, values)
	data := r.Template(template)
	NewWithT(t).Expect(data).NotTo(BeEmpty(), "%s renders nothing", template)
	b := fromYAML(t, template, data)
	t.Cleanup(func() { deleteAll(env.Client, b) })
	NewWithT(t).Expect(apply(t, b)).To(BeEmpty())
}

// jsonPatch sends a JSON patch (RFC 6902) of the given operations.
func jsonPatch(ctx context.Context, c client.Client, obj client.Object, ops ...map[string]any) error {
	data, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	target := obj.DeepCopyObject().(client.Object)
	return c.Patch(ctx, target, client.RawPatch(types.JSONPatchType, data))
}

// TestIdentitySecretsPolicyLetsTheJanitorOnlyReleaseTheOperatorFinalizer: with the opt-in, the janitor's
// ServiceAccount may patch Secrets cluster-wide (RBAC cannot narrow by label), and the policy narrows its
// writes to removing crdreplicator.liqo.io/operator from ControlPlane identity Secrets, nothing else.
func TestIdentitySecretsPolicyLetsTheJanitorOnlyReleaseTheOperatorFinalizer(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	applyTemplate(t, map[string]any{"identitySecrets": map[string]any{"enabled": true}}, "templates/identity-secrets.yaml")
	// Beyond the chart's patch, let the ServiceAccount create and delete Secrets, as a widened role one
	// day might: the policy still refuses.
	grantRole(t, "identity-secrets-widened", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"},
		Verbs: []string{"create", "delete", "update"}}}, janitorUser)
	janitor := impersonate(t, janitorUser)
	ns := env.Namespace(t)

	const keep = "example.com/keep"
	secret := func(name, identityType string, terminating bool) *corev1.Secret {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels:      map[string]string{liqojanitor.RemoteClusterIDLabel: "provider-a", liqojanitor.IdentityTypeLabel: identityType},
			Annotations: map[string]string{"liqo.io/remote-tenant-namespace": "liqo-tenant-consumer"},
			Finalizers:  []string{liqojanitor.ReplicatorOperatorFinalizer, keep}},
			Data: map[string][]byte{"kubeconfig": []byte("apiVersion: v1\nkind: Config\n")}}
		g.Expect(env.Client.Create(ctx, sec)).To(Succeed())
		t.Cleanup(func() {
			_ = jsonPatch(context.Background(), env.Client, sec, map[string]any{"op": "replace", "path": "/metadata/finalizers", "value": []string{}})
			_ = env.Client.Delete(context.Background(), sec)
		})
		if terminating { // as the janitor finds them: the finalizers hold it
			g.Expect(env.Client.Delete(ctx, sec)).To(Succeed())
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(sec), sec)).To(Succeed())
		}
		return sec
	}
	controlPlane := secret("control-plane-identity", liqojanitor.ControlPlaneIdentity, true)
	live := secret("live-identity", liqojanitor.ControlPlaneIdentity, false)
	other := secret("other-identity", "Other", true)
	removeAt := func(i int, finalizer string) []map[string]any {
		path := "/metadata/finalizers/" + strconv.Itoa(i)
		return []map[string]any{{"op": "test", "path": path, "value": finalizer}, {"op": "remove", "path": path}}
	}

	// wait until the new policy is enforced (dry-run, so an early success changes nothing)
	g.Eventually(func(g Gomega) {
		err := janitor.Patch(ctx, controlPlane.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"data":{"token":"Zm9yZ2Vk"}}`)), client.DryRunAll)
		expectRefusedByPolicy(g, err, identityPolicy, http.StatusForbidden)
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

	denied := map[string]struct {
		obj       *corev1.Secret
		ops       []map[string]any
		fragments []string
	}{
		"changing the data": {controlPlane, []map[string]any{{"op": "add", "path": "/data/token", "value": "Zm9yZ2Vk"}},
			[]string{"may not change the data, type, labels, annotations or owner references of Secret " + ns + "/control-plane-identity"}},
		"adding a label": {controlPlane, []map[string]any{{"op": "add", "path": "/metadata/labels/example.com~1x", "value": "y"}},
			[]string{"may not change the data"}},
		"changing the identity type": {controlPlane, []map[string]any{{"op": "replace", "path": "/metadata/labels/liqo.io~1identity-type", "value": "Other"}},
			[]string{"may not change the data"}},
		"removing an annotation": {controlPlane, []map[string]any{{"op": "remove", "path": "/metadata/annotations"}},
			[]string{"may not change the data"}},
		"removing another finalizer": {controlPlane, removeAt(1, keep),
			[]string{"may not change the finalizers of Secret " + ns + "/control-plane-identity other than by removing " + liqojanitor.ReplicatorOperatorFinalizer}},
		"adding a finalizer to a live identity Secret": {live, []map[string]any{{"op": "add", "path": "/metadata/finalizers/-", "value": "example.com/more"}},
			[]string{"Secret " + ns + "/live-identity"}},
		"removing the operator finalizer from an identity Secret that is not being deleted": {live, removeAt(0, liqojanitor.ReplicatorOperatorFinalizer),
			[]string{"Secret " + ns + "/live-identity: it is not being deleted"}},
		"removing the operator finalizer and changing the data in one request": {controlPlane,
			append(removeAt(0, liqojanitor.ReplicatorOperatorFinalizer), map[string]any{"op": "add", "path": "/data/token", "value": "Zm9yZ2Vk"}),
			[]string{"may not change the data"}},
		"removing the operator finalizer from a Secret that is not a ControlPlane identity": {other, removeAt(0, liqojanitor.ReplicatorOperatorFinalizer),
			[]string{"Secret " + ns + "/other-identity: it is not labelled liqo.io/identity-type=ControlPlane"}},
	}
	for name, tc := range denied {
		t.Run(name, func(t *testing.T) {
			expectRefusedByPolicy(NewWithT(t), jsonPatch(t.Context(), janitor, tc.obj, tc.ops...), identityPolicy, http.StatusForbidden, tc.fragments...)
		})
	}
	t.Run("creating or deleting a Secret", func(t *testing.T) {
		g := NewWithT(t)
		created := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "janitor-made", Namespace: ns,
			Labels: map[string]string{liqojanitor.IdentityTypeLabel: liqojanitor.ControlPlaneIdentity}}}
		expectRefusedByPolicy(g, janitor.Create(t.Context(), created), identityPolicy, http.StatusForbidden, "may not create Secret "+ns+"/janitor-made")
		expectRefusedByPolicy(g, janitor.Delete(t.Context(), other.DeepCopy()), identityPolicy, http.StatusForbidden, "may not delete Secret "+ns+"/other-identity")
	})

	// Other users are not judged by this policy (their RBAC is theirs).
	g.Expect(jsonPatch(ctx, env.Client, other, map[string]any{"op": "add", "path": "/metadata/labels/example.com~1owner", "value": "team-a"})).To(Succeed())

	// What the janitor is for: the operator finalizer goes, everything else stays.
	g.Expect(jsonPatch(ctx, janitor, controlPlane, removeAt(0, liqojanitor.ReplicatorOperatorFinalizer)...)).To(Succeed())

	got := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(controlPlane), got)).To(Succeed())
	g.Expect(got.Finalizers).To(Equal([]string{keep}))
	g.Expect(got.Data).To(Equal(controlPlane.Data))
	g.Expect(got.Labels).To(Equal(controlPlane.Labels))
	g.Expect(got.Annotations).To(Equal(controlPlane.Annotations))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(live), got)).To(Succeed())
	g.Expect(got.Finalizers).To(Equal(live.Finalizers))
	g.Expect(got.DeletionTimestamp).To(BeNil())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(other), got)).To(Succeed())
	g.Expect(got.Finalizers).To(Equal(other.Finalizers))
	g.Expect(got.Labels).To(HaveKeyWithValue("example.com/owner", "team-a"))
}
