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
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// A recorded, unfenced return holds the ForeignCluster (rule 30): after the unpeering completed, a marked
// ForeignCluster whose provider came back — recorded on it, or kept only in the janitor's records in its
// namespace — is not deleted by a plain `delete` holder until a stamped fence of that return is recorded,
// or a holder of the break-glass verb uses the override (rule 17). Each test fails without its rule.

// asDeleter is a client as deleterUser, who may delete ForeignClusters and nothing more.
func asDeleter(t *testing.T) client.Client {
	t.Helper()
	c, err := harness.Require(t).NewClient(func(c *rest.Config) { c.Impersonate.UserName = deleterUser })
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return c
}

// unpeered is a marked provider whose unpeering the janitor recorded complete: only a return can hold it.
func unpeered(t *testing.T) *liqov1beta1.ForeignCluster {
	t.Helper()
	fc := markedProvider(t)
	record := liqojanitor.Unpeering{Phase: liqojanitor.UnpeeringComplete}.String()
	NewWithT(t).Expect(fixture.Annotate(t.Context(), asJanitor, fc, map[string]*string{liqojanitor.UnpeeringAnnotation: &record})).To(Succeed())
	return get(t, fc)
}

// keepReturn writes, as the janitor does, a return of fc's provider at `at` for its current mark into the
// records ConfigMap in namespace ns (created if need be), and returns the time as kept (milliseconds).
func keepReturn(t *testing.T, ns string, fc *liqov1beta1.ForeignCluster, at time.Time) time.Time {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	at = at.UTC().Truncate(time.Millisecond)
	rec := liqojanitor.KeptRecord{Mark: fc.Annotations[liqojanitor.MarkedAtAnnotation], At: metav1.Now(),
		Return: &liqojanitor.KeptReturn{At: liqojanitor.RecordTime(at), How: "its API server at https://10.0.0.7:6443 answered the janitor's probe"}}
	value, err := json.Marshal(rec)
	g.Expect(err).NotTo(HaveOccurred())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: liqojanitor.RecordsConfigMap},
		Data: map[string]string{string(fc.UID): string(value)}}
	if err := env.Client.Create(ctx, cm); apierrors.IsAlreadyExists(err) {
		patch, _ := json.Marshal(map[string]any{"data": cm.Data})
		g.Expect(env.Client.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
	} else {
		g.Expect(err).NotTo(HaveOccurred())
	}
	return at
}

// janitorsNamespace is the namespace the suite's gate reads the janitor's records in (the release
// namespace, as the binary passes its own).
func janitorsNamespace(t *testing.T) string {
	t.Helper()
	inst, err := harness.Require(t).DefaultInstall()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return inst.Namespace
}

// fenceReturn records, as alice (the verb's holder), a fence of fc's recorded return; the gate stamps it.
func fenceReturn(t *testing.T, fc *liqov1beta1.ForeignCluster) {
	t.Helper()
	value := liqojanitor.FenceRecord{At: time.Now(), By: markerUser, Counts: "shadowpods 2, pods 2"}.String()
	NewWithT(t).Expect(fixture.Annotate(t.Context(), alice, fc, map[string]*string{liqojanitor.FencedAnnotation: &value})).To(Succeed())
	fencedRecord(t, fc)
}

// TestARecordedUnfencedReturnHoldsAMarkedForeignCluster (rule 30): recorded on the ForeignCluster or kept
// only in the janitor's namespace (its write onto the ForeignCluster refused), the return holds the
// deletion for a plain `delete` holder, with the return and the fence command named; the break-glass
// override lets a holder of the verb delete it; a stamped fence of that very return lets anyone.
func TestARecordedUnfencedReturnHoldsAMarkedForeignCluster(t *testing.T) {
	harness.Require(t)
	carol := asDeleter(t)
	for _, where := range []string{"on the ForeignCluster", "kept in the janitor's namespace"} {
		t.Run(where, func(t *testing.T) {
			g := NewWithT(t)
			ctx := t.Context()
			record := func(fc *liqov1beta1.ForeignCluster) (at time.Time, said string) {
				if where == "on the ForeignCluster" {
					return recordReturn(t, fc, time.Now()), "liqo-janitor recorded its return at "
				}
				return keepReturn(t, janitorsNamespace(t), fc, time.Now()), "liqo-janitor kept its return at "
			}

			fc := unpeered(t)
			g.Expect(carol.Delete(ctx, get(t, fc), client.DryRunAll)).To(Succeed(), "unpeered and no return: carol may delete it")
			at, said := record(fc)
			err := deleteFC(ctx, carol, fc)
			expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/fenced]", fc,
				said+liqojanitor.RecordTime(at), "the provider may still run this consumer's workloads",
				"kubectl liqo-janitor fence "+fc.Name+" --provider-kubeconfig <provider kubeconfig>",
				"liqo-janitor.io/allow-delete-while-unpeering="+fc.Name+" --overwrite")
			g.Expect(exists(t, fc)).To(BeTrue())

			// the break-glass override: not for carol, who lacks the verb; for alice, with a warning
			g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.AllowDeleteAnnotation: s(fc.Name)})).To(Succeed())
			err = deleteFC(ctx, carol, fc)
			expectDenied(t, err, http.StatusForbidden, "metadata.annotations[liqo-janitor.io/allow-delete-while-unpeering]", fc,
				`user "carol" may not use the break-glass override`, said+liqojanitor.RecordTime(at))
			expectDeleted(t, alice, fc, "alice holds the verb")
			g.Expect(aliceW.Warnings()).To(ContainElement(And(ContainSubstring(fc.Name), ContainSubstring("by the break-glass override"),
				ContainSubstring("kubectl liqo-janitor fence "+fc.Name))))

			// a stamped fence of that return lets the plain delete holder delete it
			fc = unpeered(t)
			at, _ = record(fc)
			if where != "on the ForeignCluster" {
				expectDenied(t, deleteFC(ctx, carol, fc), http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/fenced]", fc,
					"another admission webhook")
				// the janitor writes the kept return onto the ForeignCluster once it may: then it can be fenced
				recordReturn(t, fc, at)
			}
			fenceReturn(t, fc)
			g.Expect(fencedRecord(t, fc).Return).To(BeTemporally("==", at))
			expectDeleted(t, carol, fc, "the return is fenced")
		})
	}
}

// TestAFenceOfAnotherReturnDoesNotReleaseTheForeignCluster (rule 30): the fence must be of the return
// recorded now; a later return, recorded after a fence of an earlier one, holds the ForeignCluster again.
func TestAFenceOfAnotherReturnDoesNotReleaseTheForeignCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	carol := asDeleter(t)
	fc := unpeered(t)
	recordReturn(t, fc, time.Now())
	fenceReturn(t, fc)
	later := recordReturn(t, fc, time.Now().Add(time.Second))
	err := deleteFC(ctx, carol, fc)
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/fenced]", fc,
		"liqo-janitor recorded its return at "+liqojanitor.RecordTime(later), "does not fence this return")
	g.Expect(exists(t, fc)).To(BeTrue())
}

// TestAKeptReturnCountsOnlyInTheJanitorsNamespace (rule 30): the gate reads the janitor's records in the
// janitor's own namespace only; a look-alike ConfigMap elsewhere, which anyone with a namespace can write,
// holds nothing.
func TestAKeptReturnCountsOnlyInTheJanitorsNamespace(t *testing.T) {
	env := harness.Require(t)
	carol := asDeleter(t)
	fc := unpeered(t)
	elsewhere := env.Namespace(t)
	keepReturn(t, elsewhere, fc, time.Now())
	expectDeleted(t, carol, fc, "a look-alike of the janitor's records in namespace %s is ignored", elsewhere)
}
