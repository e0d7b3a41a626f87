package webhook_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"github.com/liqotech/liqo/pkg/consts"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// installDeleters lets alice and bob delete ForeignClusters, and Liqo's uninstaller update them as Liqo's
// chart lets its pre-delete Job.
func installDeleters(ctx context.Context, e *harness.Env) error {
	for _, o := range []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: deleterRole}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"core.liqo.io"}, Resources: []string{"foreignclusters"}, Verbs: []string{"delete"},
		}}},
		harness.ClusterRoleBinding(deleterRole, deleterRole, markerUser, plainUser, uninstallerUser),
		harness.ClusterRoleBinding(harness.EditorRole+"-uninstaller", harness.EditorRole, uninstallerUser),
	} {
		if err := e.Client.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// newTenantNamespace creates the consumer's tenant namespace of fc's cluster ID as Liqo labels it
// (pkg/tenantNamespace CreateOrGetNamespace), or, with labelled false, an unlabelled namespace that fc's
// status.tenantNamespace.local names.
func newTenantNamespace(t *testing.T, fc *liqov1beta1.ForeignCluster, labelled bool) *corev1.Namespace {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liqo-tenant-" + fc.Name}}
	if labelled {
		ns.Labels = map[string]string{consts.TenantNamespaceLabel: "true", liqojanitor.RemoteClusterIDLabel: string(fc.Spec.ClusterID)}
	}
	g.Expect(env.Client.Create(t.Context(), ns)).To(Succeed())
	if !labelled {
		latest := get(t, fc)
		latest.Status.TenantNamespace.Local = ns.Name
		g.Expect(env.Client.Status().Update(t.Context(), latest)).To(Succeed())
	}
	return ns
}

// removeNamespace deletes ns and, with no namespace controller in this suite, finalizes it by hand (its
// spec.finalizers emptied through the finalize subresource): then it is gone.
func removeNamespace(t *testing.T, ns *corev1.Namespace) {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	g.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, ns))).To(Succeed())
	latest := &corev1.Namespace{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ns), latest)).To(Succeed())
	latest.Spec.Finalizers = nil
	g.Expect(env.Client.SubResource("finalize").Update(ctx, latest)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{}))
	}).Should(BeTrue(), "namespace %s is gone", ns.Name)
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

func exists(t *testing.T, fc *liqov1beta1.ForeignCluster) bool {
	t.Helper()
	err := harness.Require(t).Client.Get(t.Context(), client.ObjectKeyFromObject(fc), &liqov1beta1.ForeignCluster{})
	NewWithT(t).Expect(client.IgnoreNotFound(err)).To(Succeed())
	return err == nil
}

// TestAMarkedForeignClusterStaysWhileItsTenantNamespaceExists (rule 16): Liqo would re-create a deleted
// ForeignCluster unmarked from its tenant namespace, so the deletion waits for the namespace to be gone —
// a Terminating namespace counts — whether Liqo's labels or the ForeignCluster's status name it.
func TestAMarkedForeignClusterStaysWhileItsTenantNamespaceExists(t *testing.T) {
	harness.Require(t)
	for name, labelled := range map[string]bool{"labelled as Liqo labels it": true, "named in status.tenantNamespace.local": false} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := t.Context()
			fc := markedProvider(t)
			ns := newTenantNamespace(t, fc, labelled)

			err := deleteFC(ctx, alice, fc)
			expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/unpeering]", fc,
				"tenant namespace "+ns.Name+" still exists", "re-creates it within seconds from the peering objects left, WITHOUT the mark",
				"kubectl delete namespace "+ns.Name, "liqoctl force unpeer "+fc.Name,
				"kubectl liqo-janitor status "+fc.Name+" says unpeering complete",
				"kubectl annotate foreigncluster "+fc.Name+" liqo-janitor.io/allow-delete-while-unpeering="+fc.Name+" --overwrite")

			// liqoctl force unpeer's second step: the namespace is deleted, and stays Terminating (here for
			// want of a namespace controller; in a cluster, on Liqo's finalizers inside it)
			g.Expect(harness.Require(t).Client.Delete(ctx, ns)).To(Succeed())
			err = deleteFC(ctx, alice, fc)
			expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/unpeering]", fc,
				"tenant namespace "+ns.Name+" still Terminating", "wait until kubectl liqo-janitor status "+fc.Name)
			g.Expect(exists(t, fc)).To(BeTrue())

			removeNamespace(t, ns)
			g.Expect(deleteFC(ctx, alice, fc)).To(Succeed(), "the unpeering is over: the ForeignCluster goes")
			g.Expect(exists(t, fc)).To(BeFalse())
		})
	}
}

// TestAMarkedForeignClusterStaysWhileTheJanitorsRecordSaysTheUnpeeringRuns (rule 16): with no tenant
// namespace left, the janitor's record still names what is left (a VirtualNode, a virtual Node…) until
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
	g.Expect(deleteFC(ctx, alice, fc)).To(Succeed())
	g.Expect(exists(t, fc)).To(BeFalse())
}

// TestTheDeletionOverrideIsBreakGlass (rule 17): the override, set only by a holder of the break-glass
// verb and equal to the cluster ID, lets the ForeignCluster go mid-unpeering for that holder alone, with
// a warning that says what it overrode.
func TestTheDeletionOverrideIsBreakGlass(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	fc := markedProvider(t)
	ns := newTenantNamespace(t, fc, true)
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
		`user "bob" may not use the break-glass override`, "tenant namespace "+ns.Name+" still exists",
		"kubectl create clusterrolebinding mark-unreachable-bob")
	g.Expect(exists(t, fc)).To(BeTrue())

	g.Expect(deleteFC(ctx, alice, fc)).To(Succeed(), "alice holds the verb")
	g.Expect(exists(t, fc)).To(BeFalse())
	g.Expect(aliceW.Warnings()).To(ContainElement(And(ContainSubstring(fc.Name),
		ContainSubstring("deleted while its unpeering runs, by the break-glass override"), ContainSubstring(`user "alice"`),
		ContainSubstring("tenant namespace "+ns.Name+" still exists"), ContainSubstring("may re-create it without the mark"))))
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
	newTenantNamespace(t, unmarked, true)
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
