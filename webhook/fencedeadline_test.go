package webhook_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// Rule 31 through the API server: with a contract the janitor recorded for the provider (its renewal record
// in ConfigMap liqo-janitor-fence-renewals, in its namespace), setting the mark is refused until the
// provider's fence has surely completed, Liqo's uninstaller's mark included; the override, typed with the
// mark by a holder of the verb, passes and is stamped. The records are written here as the janitor's
// renewer writes them (FenceRenewal.String). Each test fails without its rule.

// fenceContract is a provider's contract: SafeAfter 195.75 s.
func fenceContract(fc *liqov1beta1.ForeignCluster) liqojanitor.FenceContract {
	return liqojanitor.FenceContract{FenceAfter: liqojanitor.Duration(90 * time.Second), Poll: liqojanitor.Duration(5 * time.Second),
		GraceCap: liqojanitor.Duration(30 * time.Second), Failover: liqojanitor.Duration(20 * time.Second),
		Stop: liqojanitor.Duration(60 * time.Second), ProviderClusterID: string(fc.Spec.ClusterID)}
}

// recordRenewals writes, as the janitor's renewer does, fc's provider's renewal record into the janitor's
// ConfigMap (created if need be): value as it is.
func recordRenewals(t *testing.T, fc *liqov1beta1.ForeignCluster, value string) {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: janitorsNamespace(t), Name: liqojanitor.FenceRenewalsConfigMap},
		Data: map[string]string{string(fc.Spec.ClusterID): value}}
	if err := env.Client.Create(ctx, cm); apierrors.IsAlreadyExists(err) {
		patch, _ := json.Marshal(map[string]any{"data": cm.Data})
		g.Expect(env.Client.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
	} else {
		g.Expect(err).NotTo(HaveOccurred())
	}
}

// fenceDueAt records renewals of fc's provider whose deadline is deadline (whole seconds): the last renewal
// that may have landed SafeAfter before it.
func fenceDueAt(t *testing.T, fc *liqov1beta1.ForeignCluster, deadline time.Time) time.Time {
	t.Helper()
	deadline = deadline.UTC().Truncate(time.Second)
	landed := deadline.Add(-fenceContract(fc).SafeAfter())
	ack := landed.Add(-2 * time.Second)
	recordRenewals(t, fc, liqojanitor.FenceRenewal{Contract: fenceContract(fc).String(), LastAck: &ack, LastLanded: &landed}.String())
	return deadline
}

// withDeadlineOverride is the marking request with the override of the fence deadline naming value.
func withDeadlineOverride(fc *liqov1beta1.ForeignCluster, value string) map[string]*string {
	kv := markAndConfirm(fc)
	kv[liqojanitor.OverrideFenceDeadlineAnnotation] = s(value)
	return kv
}

const markPathField = "metadata.annotations[liqo.io/foreign-cluster-permanently-unreachable]"

// TestAMarkWaitsForTheProvidersFenceDeadline (rule 31): refused before the deadline with its exact UTC time,
// the contract and why; admitted once it has passed; without a record for the provider, as ever.
func TestAMarkWaitsForTheProvidersFenceDeadline(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	deadline := fenceDueAt(t, fc, time.Now().Add(30*time.Second))

	err := fixture.Annotate(ctx, alice, fc, markAndConfirm(fc))
	expectDenied(t, err, http.StatusUnprocessableEntity, markPathField, fc,
		"Liqo ≥ v1.1 force-deletes", "completes by "+deadline.Format(time.RFC3339), "mark at or after it",
		"contract: fenceAfter 1m30s, poll 5s, failover 20s, stop 1m0s, provider cluster ID "+fc.Name,
		"kubectl annotate foreigncluster "+fc.Name+" liqo-janitor.io/override-fence-deadline="+fc.Name)
	g.Expect(get(t, fc).Annotations).NotTo(HaveKey(liqojanitor.MarkAnnotation))

	// the deadline passed (a renewal that landed longer ago): admitted
	fenceDueAt(t, fc, time.Now().Add(-time.Second))
	g.Expect(fixture.Annotate(ctx, alice, fc, markAndConfirm(fc))).To(Succeed())
	g.Expect(get(t, fc).Annotations).To(HaveKeyWithValue(liqojanitor.MarkAnnotation, "true"))

	// no record for this provider (others have one): as ever
	other := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	g.Expect(fixture.Annotate(ctx, alice, other, markAndConfirm(other))).To(Succeed())
}

// TestAnUnreadableRenewalRecordHoldsTheMark (rule 31): a record for the provider that is not the janitor's
// format, or whose renewals may have landed under a contract that does not parse, refuses the mark (fail
// closed: the provider's agent may be armed, and its deadline cannot be computed); the override passes it.
func TestAnUnreadableRenewalRecordHoldsTheMark(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	landed := time.Now()
	for name, value := range map[string]string{
		"not JSON":                       "renewed a moment ago",
		"a contract that does not parse": liqojanitor.FenceRenewal{Contract: `{"fenceAfter":"soon"}`, LastLanded: &landed}.String(),
	} {
		fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
		recordRenewals(t, fc, value)
		err := fixture.Annotate(ctx, alice, fc, markAndConfirm(fc))
		expectDenied(t, err, http.StatusUnprocessableEntity, markPathField, fc,
			"cannot read the janitor's record of its renewals", "fail closed, gate rule 31")
		g.Expect(get(t, fc).Annotations).NotTo(HaveKey(liqojanitor.MarkAnnotation), name)
		g.Expect(fixture.Annotate(ctx, alice, fc, withDeadlineOverride(fc, fc.Name))).To(Succeed(), name)
	}
}

// TestTheFenceDeadlineOverride (rule 31): typed with the mark by a holder of the verb, naming the cluster
// ID, it passes the deadline, with a warning, and the gate stamps who, when and the deadline it overrode;
// without the verb, naming another cluster, or placed ahead of the mark (as rule 22's), it is refused.
func TestTheFenceDeadlineOverride(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	deadline := fenceDueAt(t, fc, time.Now().Add(time.Minute))

	err := fixture.Annotate(ctx, bob, fc, withDeadlineOverride(fc, fc.Name))
	expectDenied(t, err, http.StatusForbidden, markPathField, fc, `user "bob" may not mark it`)

	err = fixture.Annotate(ctx, alice, fc, withDeadlineOverride(fc, "provider-typo"))
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/override-fence-deadline]", fc,
		"must equal the cluster ID")

	// ahead of the mark: refused, for the verb's holder too
	err = fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.OverrideFenceDeadlineAnnotation: s(fc.Name)})
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/override-fence-deadline]", fc,
		"never ahead of it (gate rule 31)")
	// written while the gate was absent, it does not count for a later mark
	withoutGate(t, bob, fc, map[string]*string{liqojanitor.OverrideFenceDeadlineAnnotation: s(fc.Name)})
	err = fixture.Annotate(ctx, alice, fc, markAndConfirm(fc))
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/override-fence-deadline]", fc,
		"was set before this request", "kubectl annotate foreigncluster "+fc.Name+" liqo-janitor.io/override-fence-deadline-")
	g.Expect(get(t, fc).Annotations).NotTo(HaveKey(liqojanitor.MarkAnnotation))
	g.Expect(fixture.Annotate(ctx, bob, fc, map[string]*string{liqojanitor.OverrideFenceDeadlineAnnotation: nil})).To(Succeed(), "removing it is anyone's")

	// with the mark, by the verb's holder: admitted, warned and stamped
	before := time.Now().Add(-time.Second).Truncate(time.Second)
	g.Expect(fixture.Annotate(ctx, alice, fc, withDeadlineOverride(fc, fc.Name))).To(Succeed())
	got := get(t, fc).Annotations
	o, ok := liqojanitor.ParseFenceDeadlineOverride(got[liqojanitor.FenceDeadlineOverriddenAnnotation])
	g.Expect(ok).To(BeTrue(), "stamp %q", got[liqojanitor.FenceDeadlineOverriddenAnnotation])
	g.Expect(o.By).To(Equal(markerUser))
	g.Expect(o.At).To(BeTemporally(">=", before))
	g.Expect(o.Deadline).To(BeTemporally("==", deadline))
	g.Expect(aliceW.Warnings()).To(ContainElement(And(ContainSubstring(fc.Name),
		ContainSubstring("before the provider's fence completes (by "+deadline.Format(time.RFC3339)))))

	// immutable while marked, and gone with the mark
	err = fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.FenceDeadlineOverriddenAnnotation: s("later")})
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/fence-deadline-overridden]", fc, "cannot change")
	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.MarkAnnotation: nil})).To(Succeed())
	g.Expect(get(t, fc).Annotations).NotTo(Or(HaveKey(liqojanitor.OverrideFenceDeadlineAnnotation), HaveKey(liqojanitor.FenceDeadlineOverriddenAnnotation)))
}

// TestLiqosUninstallerWaitsForTheFenceDeadline (rules 18 and 31): Liqo's uninstaller is not exempt — its
// bare mark is refused before the deadline — and its override needs the verb it does not hold.
func TestLiqosUninstallerWaitsForTheFenceDeadline(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	_, uninstaller := liqosUninstaller(t)
	fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	deadline := fenceDueAt(t, fc, time.Now().Add(time.Minute))

	err := liqoctlForceUnpeerPatch(t, uninstaller, fc)
	expectDenied(t, err, http.StatusUnprocessableEntity, markPathField, fc, "completes by "+deadline.Format(time.RFC3339))
	err = fixture.Annotate(ctx, uninstaller, fc, map[string]*string{liqojanitor.MarkAnnotation: s("true"),
		liqojanitor.OverrideFenceDeadlineAnnotation: s(fc.Name)})
	expectDenied(t, err, http.StatusForbidden, markPathField, fc, `user "`+uninstallerUser+`" may not mark it`)
	g.Expect(get(t, fc).Annotations).NotTo(HaveKey(liqojanitor.MarkAnnotation))

	fenceDueAt(t, fc, time.Now().Add(-time.Second))
	g.Expect(liqoctlForceUnpeerPatch(t, uninstaller, fc)).To(Succeed(), "after the deadline")
}
