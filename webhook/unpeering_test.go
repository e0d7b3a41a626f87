package webhook_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"github.com/liqotech/liqo/pkg/consts"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// The unpeering and Liqo's own flows (issue 24): rules 16 and 17 keep a marked ForeignCluster while its
// unpeering runs; rule 18 lets Liqo's uninstaller bare-mark. Each test fails without its rule.

// uninstallerUser is Liqo's pre-delete Job's ServiceAccount in the suite's Liqo namespace, which the
// suite's gate names for rule 18 (off by default).
const uninstallerUser = "system:serviceaccount:" + liqoNamespace + ":" + liqojanitor.LiqoPreDeleteServiceAccount

// deleterRole lets the suite's users delete ForeignClusters (InstallOperators' roles do not).
const deleterRole = "foreigncluster-deleter"

// deleterUser may delete ForeignClusters and nothing more: a plain `delete` holder.
const deleterUser = "carol"

// installDeleters lets alice and bob delete ForeignClusters, and Liqo's uninstaller update them as Liqo's
// chart lets its pre-delete Job.
func installDeleters(ctx context.Context, e *harness.Env) error {
	for _, o := range []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: deleterRole}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"core.liqo.io"}, Resources: []string{"foreignclusters"}, Verbs: []string{"delete"},
		}}},
		harness.ClusterRoleBinding(deleterRole, deleterRole, markerUser, plainUser, uninstallerUser, deleterUser),
		harness.ClusterRoleBinding(harness.EditorRole+"-uninstaller", harness.EditorRole, uninstallerUser),
	} {
		if err := e.Client.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// newTenantNamespace creates a namespace of fc's cluster ID labelled as Liqo labels its tenant namespaces
// (pkg/tenantNamespace CreateOrGetNamespace), and nothing in it: alone, a decoy.
func newTenantNamespace(t *testing.T, fc *liqov1beta1.ForeignCluster) *corev1.Namespace {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liqo-tenant-" + fc.Name,
		Labels: map[string]string{consts.TenantNamespaceLabel: "true", liqojanitor.RemoteClusterIDLabel: string(fc.Spec.ClusterID)}}}
	NewWithT(t).Expect(harness.Require(t).Client.Create(t.Context(), ns)).To(Succeed())
	return ns
}

// newTenant creates in ns the Tenant of fc's cluster ID as Liqo labels it, held by Liqo's finalizer: one of
// the peering objects Liqo re-creates a ForeignCluster from.
func newTenant(t *testing.T, fc *liqov1beta1.ForeignCluster, ns string) *authv1beta1.Tenant {
	t.Helper()
	tenant := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: fc.Name, Namespace: ns, Finalizers: []string{"tenant.liqo.io/finalizer"},
		Labels: map[string]string{liqojanitor.RemoteClusterIDLabel: string(fc.Spec.ClusterID)}}}
	NewWithT(t).Expect(harness.Require(t).Client.Create(t.Context(), tenant)).To(Succeed())
	return tenant
}

// newVirtualNode creates the virtual Node of fc's cluster ID as Liqo labels it.
func newVirtualNode(t *testing.T, fc *liqov1beta1.ForeignCluster) *corev1.Node {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "liqo-" + fc.Name, Labels: map[string]string{
		liqojanitor.NodeTypeLabel: liqojanitor.VirtualNodeType, liqojanitor.RemoteClusterIDLabel: string(fc.Spec.ClusterID)}}}
	NewWithT(t).Expect(harness.Require(t).Client.Create(t.Context(), node)).To(Succeed())
	return node
}

// release removes obj's finalizers (Liqo's controller done with it) and awaits it gone once deleted.
func release(t *testing.T, obj client.Object) {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	g.Expect(client.IgnoreNotFound(env.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))))).To(Succeed())
	g.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, obj))).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object)))
	}).Should(BeTrue(), "%s is gone", obj.GetName())
}

// markedProvider is a long-unreachable provider marked by alice.
func markedProvider(t *testing.T) *liqov1beta1.ForeignCluster {
	t.Helper()
	fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	NewWithT(t).Expect(fixture.Annotate(t.Context(), alice, fc, markAndConfirm(fc))).To(Succeed())
	return fc
}

func deleteFC(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster) error {
	return c.Delete(ctx, &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: fc.Name}})
}

// expectDeleted deletes fc as c and asserts it is gone (why says why it may go).
func expectDeleted(t *testing.T, c client.Client, fc *liqov1beta1.ForeignCluster, why ...any) {
	t.Helper()
	NewWithT(t).Expect(deleteFC(t.Context(), c, fc)).To(Succeed(), why...)
	NewWithT(t).Expect(exists(t, fc)).To(BeFalse())
}

func exists(t *testing.T, fc *liqov1beta1.ForeignCluster) bool {
	t.Helper()
	err := harness.Require(t).Client.Get(t.Context(), client.ObjectKeyFromObject(fc), &liqov1beta1.ForeignCluster{})
	NewWithT(t).Expect(client.IgnoreNotFound(err)).To(Succeed())
	return err == nil
}

// TestAMarkedForeignClusterStaysWhileWhatLiqoReCreatesItFromIsLeft (rule 16): Liqo re-creates a deleted
// ForeignCluster unmarked from the peering objects that carry its cluster ID, so the deletion waits until
// they are gone — a Terminating one counts, and so does a virtual Node — while a namespace that only
// carries Liqo's tenant labels, with nothing of Liqo in it, holds nothing.
func TestAMarkedForeignClusterStaysWhileWhatLiqoReCreatesItFromIsLeft(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	fc := markedProvider(t)
	ns := newTenantNamespace(t, fc)
	g.Expect(alice.Delete(ctx, get(t, fc), client.DryRunAll)).To(Succeed(), "a decoy namespace with nothing of Liqo in it holds nothing")

	tenant := newTenant(t, fc, ns.Name)
	err := deleteFC(ctx, alice, fc)
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/unpeering]", fc,
		"left that Liqo re-creates it from: Tenant "+ns.Name+"/"+tenant.Name, "re-creates it within seconds from the peering objects left, WITHOUT the mark",
		"kubectl delete namespace "+ns.Name, "liqoctl force unpeer "+fc.Name, "-A -l liqo.io/remote-cluster-id="+fc.Name,
		"kubectl liqo-janitor status "+fc.Name+" says unpeering complete",
		"kubectl annotate foreigncluster "+fc.Name+" liqo-janitor.io/allow-delete-while-unpeering="+fc.Name+" --overwrite")

	// liqoctl force unpeer's second step: the tenant namespace is deleted; the Tenant waits on Liqo's finalizer
	g.Expect(env.Client.Delete(ctx, tenant)).To(Succeed())
	err = deleteFC(ctx, alice, fc)
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/unpeering]", fc,
		"Tenant "+ns.Name+"/"+tenant.Name+" (Terminating)", "Next: wait until kubectl liqo-janitor status "+fc.Name)
	release(t, tenant)

	node := newVirtualNode(t, fc)
	err = deleteFC(ctx, alice, fc)
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/unpeering]", fc,
		"left that Liqo re-creates it from: Node "+node.Name, "kubectl delete node "+node.Name)
	g.Expect(exists(t, fc)).To(BeTrue())

	release(t, node)
	expectDeleted(t, alice, fc, "nothing Liqo re-creates it from is left, the decoy namespace notwithstanding")
}

// TestAMarkedForeignClusterStaysWhileTheJanitorsRecordSaysTheUnpeeringRuns (rule 16): with nothing left
// that the gate lists, the janitor's record still names what is left (a VirtualNode, a finalizer…) until
// it says complete.
func TestAMarkedForeignClusterStaysWhileTheJanitorsRecordSaysTheUnpeeringRuns(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	fc := markedProvider(t)
	record := liqojanitor.Unpeering{Phase: liqojanitor.UnpeeringInProgress, Left: []liqojanitor.LeftObject{{
		Kind: "VirtualNode", Namespace: "liqo-tenant-" + fc.Name, Name: fc.Name, HeldBy: "finalizer virtualnode-controller.liqo.io/finalizer",
	}}}
	g.Expect(fixture.Annotate(ctx, asJanitor, fc, map[string]*string{liqojanitor.UnpeeringAnnotation: s(record.String())})).
		To(Succeed(), "the janitor's identity writes its record")

	err := deleteFC(ctx, alice, fc)
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/unpeering]", fc,
		"liqo-janitor's record: unpeering in progress: 1 object left: VirtualNode liqo-tenant-"+fc.Name+"/"+fc.Name)
	g.Expect(exists(t, fc)).To(BeTrue())

	record = liqojanitor.Unpeering{Phase: liqojanitor.UnpeeringComplete}
	g.Expect(fixture.Annotate(ctx, asJanitor, fc, map[string]*string{liqojanitor.UnpeeringAnnotation: s(record.String())})).To(Succeed())
	expectDeleted(t, alice, fc)
}

// TestTheDeletionOverrideIsBreakGlass (rule 17): the override, set only by a holder of the break-glass
// verb and equal to the cluster ID, lets the ForeignCluster go mid-unpeering for that holder alone, with
// a warning that says what it overrode.
func TestTheDeletionOverrideIsBreakGlass(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	fc := markedProvider(t)
	tenant := newTenant(t, fc, newTenantNamespace(t, fc).Name)
	override := map[string]*string{liqojanitor.AllowDeleteAnnotation: s(fc.Name)}

	err := fixture.Annotate(ctx, bob, fc, override)
	expectDenied(t, err, http.StatusForbidden, "metadata.annotations[liqo.io/foreign-cluster-permanently-unreachable]", fc,
		`user "bob" may not set the break-glass override liqo-janitor.io/allow-delete-while-unpeering`)
	err = fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.AllowDeleteAnnotation: s("provider-typo")})
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/allow-delete-while-unpeering]", fc,
		"must equal the cluster ID")
	g.Expect(fixture.Annotate(ctx, alice, fc, override)).To(Succeed())

	err = deleteFC(ctx, bob, fc)
	expectDenied(t, err, http.StatusForbidden, "metadata.annotations[liqo-janitor.io/allow-delete-while-unpeering]", fc,
		`user "bob" may not use the break-glass override`, "Tenant "+tenant.Namespace+"/"+tenant.Name,
		"kubectl create clusterrolebinding mark-unreachable-bob")
	g.Expect(exists(t, fc)).To(BeTrue())

	expectDeleted(t, alice, fc, "alice holds the verb")
	g.Expect(aliceW.Warnings()).To(ContainElement(And(ContainSubstring(fc.Name),
		ContainSubstring("deleted while its unpeering runs"), ContainSubstring("by the break-glass override"), ContainSubstring(`user "alice"`),
		ContainSubstring("Tenant "+tenant.Namespace+"/"+tenant.Name), ContainSubstring("may re-create it without the mark"))))
}

// TestUnmarkingRemovesTheUnpeeringRecordAndTheOverride (rule 7): they belong to the mark.
func TestUnmarkingRemovesTheUnpeeringRecordAndTheOverride(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	fc := markedProvider(t)
	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.AllowDeleteAnnotation: s(fc.Name)})).To(Succeed())
	g.Expect(fixture.Annotate(ctx, asJanitor, fc, map[string]*string{
		liqojanitor.UnpeeringAnnotation: s(liqojanitor.Unpeering{Phase: liqojanitor.UnpeeringInProgress}.String())})).To(Succeed())
	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.MarkAnnotation: nil})).To(Succeed())
	g.Expect(get(t, fc).Annotations).To(BeEmpty())
}

// TestDeletionsOnlyReachTheGateForMarkedForeignClusters (rule 8 for rules 16 and 17): with the gate down
// an unmarked ForeignCluster still deletes (tenant namespace or not), and so do creates and updates (the
// CREATE and UPDATE expressions never meet DELETE's null object); a marked one's deletion fails closed.
func TestDeletionsOnlyReachTheGateForMarkedForeignClusters(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	unmarked := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	newTenant(t, unmarked, "default")
	g.Expect(deleteFC(ctx, bob, unmarked)).To(Succeed(), "with the gate up, an unmarked ForeignCluster deletes untouched")
	unmarked = newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	marked := markedProvider(t)

	registerDeadWebhooks(t)
	g.Eventually(func() error { return alice.Delete(ctx, get(t, marked), client.DryRunAll) }).
		Should(MatchError(ContainSubstring("failed calling webhook")), "a marked ForeignCluster's deletion fails closed")
	g.Expect(fixture.Annotate(ctx, bob, unmarked, map[string]*string{"example.com/note": s("unrelated")})).To(Succeed())
	g.Expect(deleteFC(ctx, bob, unmarked)).To(Succeed(), "an unmarked ForeignCluster deletes with the gate down")
	g.Expect(exists(t, marked)).To(BeTrue())
}

// liqoctlForceUnpeerPatch sends what liqoctl force unpeer sends (Liqo v1.1.0 and v1.2.0,
// pkg/liqoctl/force/unpeer/handler.go RunForceUnpeer): a merge patch, with no resourceVersion, built by
// client.MergeFrom from the ForeignCluster it read, carrying only the mark.
func liqoctlForceUnpeerPatch(t *testing.T, c client.Client, fc *liqov1beta1.ForeignCluster) error {
	t.Helper()
	latest := get(t, fc)
	patch := client.MergeFrom(latest.DeepCopy())
	annotations := maps.Clone(latest.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[consts.ForeignClusterPermanentlyUnreachableAnnotationKey] = "true"
	latest.SetAnnotations(annotations)
	body, err := patch.Data(latest)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(string(body)).To(Equal(`{"metadata":{"annotations":{"liqo.io/foreign-cluster-permanently-unreachable":"true"}}}`))
	return c.Patch(t.Context(), latest, patch)
}

// TestLiqoctlForceUnpeerPassesAfterAConfirmation: the operator's path for Liqo ≥ v1.1 (docs/operations.md). liqoctl's bare mark
// is refused with the command to run first; once the operator confirmed, the same patch marks (rule 1's
// confirmation "may come earlier"), stamped with the operator.
func TestLiqoctlForceUnpeerPassesAfterAConfirmation(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)

	err := liqoctlForceUnpeerPatch(t, alice, fc)
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/confirm-cluster-id]", fc,
		"with liqoctl force unpeer, confirm first: kubectl annotate foreigncluster "+fc.Name+" liqo-janitor.io/confirm-cluster-id="+fc.Name+" --overwrite",
		"then run liqoctl force unpeer "+fc.Name+" again", "kubectl liqo-janitor mark "+fc.Name)
	g.Expect(get(t, fc).Annotations).To(BeEmpty())

	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.ConfirmAnnotation: s(fc.Name)})).To(Succeed())
	g.Expect(liqoctlForceUnpeerPatch(t, alice, fc)).To(Succeed())
	g.Expect(get(t, fc).Annotations).To(And(HaveKeyWithValue(liqojanitor.MarkAnnotation, "true"),
		HaveKeyWithValue(liqojanitor.MarkedByAnnotation, markerUser), HaveKeyWithValue(liqojanitor.ConfirmAnnotation, fc.Name)))
}

// eventNotes are the notes of the Events with reason on the ForeignCluster named fcName.
func eventNotes(t *testing.T, fcName, reason string) []string {
	t.Helper()
	env := harness.Require(t)
	var evs eventsv1.EventList
	NewWithT(t).Expect(env.Client.List(t.Context(), &evs)).To(Succeed())
	var notes []string
	for _, e := range evs.Items {
		if e.Regarding.Kind == "ForeignCluster" && e.Regarding.Name == fcName && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}
