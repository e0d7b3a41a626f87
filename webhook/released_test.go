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

// The released-volumes record is the gate's (rule 32): `kubectl liqo-janitor release-volumes` records on a
// marked ForeignCluster which remote PVCs' data it abandoned; the gate stamps it, refuses it unmarked,
// without the break-glass verb or when it forgets a volume, drops it with the mark with a warning, and warns
// when a cluster ID whose volumes were released is peered again. Each test fails without its part of the
// rule.

// releasedPath is the field path of the record's refusals.
const releasedPath = "metadata.annotations[" + liqojanitor.VolumesReleasedAnnotation + "]"

// volume is a released volume of the given name, with a UID and a remote claim of its own.
func volume(name string) liqojanitor.ReleasedVolume {
	return liqojanitor.ReleasedVolume{PVC: "shop/" + name, UID: "uid-" + name, Remote: "shop-remote/" + name}
}

// released is a record naming volumes, as the plugin sends it (At and By are the gate's to write: here a
// forgery, which the gate replaces).
func released(volumes ...liqojanitor.ReleasedVolume) *string {
	return s(liqojanitor.VolumesReleased{At: "2020-01-01T00:00:00Z", By: "mallory", Volumes: volumes}.String())
}

// recordOn is the released-volumes record stored on fc (ok false when there is none that parses).
func recordOn(t *testing.T, fc *liqov1beta1.ForeignCluster) (liqojanitor.VolumesReleased, bool) {
	t.Helper()
	return liqojanitor.ParseVolumesReleased(get(t, fc).Annotations[liqojanitor.VolumesReleasedAnnotation])
}

// TestAReleasedVolumesRecordIsStampedWithTheRequester: whatever time and user the request carries, the
// stored record names the requester and the gate's time, its volumes kept.
func TestAReleasedVolumesRecordIsStampedWithTheRequester(t *testing.T) {
	g := NewWithT(t)
	fc := markedProvider(t)

	before := time.Now().Truncate(time.Second)
	g.Expect(fixture.Annotate(t.Context(), alice, fc, map[string]*string{
		liqojanitor.VolumesReleasedAnnotation: released(volume("data-0"), volume("data-1"))})).To(Succeed())
	rec, ok := recordOn(t, fc)
	g.Expect(ok).To(BeTrue())
	g.Expect(rec.By).To(Equal(markerUser), "the requester, not the request's user")
	at, stamped := rec.StampedAt()
	g.Expect(stamped).To(BeTrue())
	g.Expect(at).To(BeTemporally(">=", before), "the gate's time, not the request's")
	g.Expect(rec.Volumes).To(Equal([]liqojanitor.ReleasedVolume{volume("data-0"), volume("data-1")}))
}

// TestAReleasedVolumesRecordIsRefusedOnAnUnmarkedCluster: there is nothing to release from a cluster that
// is not marked, for anyone; and a record given with the mark does not survive into it.
func TestAReleasedVolumesRecordIsRefusedOnAnUnmarkedCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)

	err := fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.VolumesReleasedAnnotation: released(volume("data-0"))})
	expectDenied(t, err, http.StatusUnprocessableEntity, releasedPath, fc, "is not marked permanently unreachable")
	g.Expect(get(t, fc).Annotations).NotTo(HaveKey(liqojanitor.VolumesReleasedAnnotation))

	kv := markAndConfirm(fc)
	kv[liqojanitor.VolumesReleasedAnnotation] = released(volume("data-0"))
	g.Expect(fixture.Annotate(ctx, alice, fc, kv)).To(Succeed())
	marked := get(t, fc)
	g.Expect(marked.Annotations).To(HaveKey(liqojanitor.MarkAnnotation))
	g.Expect(marked.Annotations).NotTo(HaveKey(liqojanitor.VolumesReleasedAnnotation), "dropped by the mark")
}

// TestAReleasedVolumesRecordIsBreakGlass: recording released volumes abandons their data on the provider:
// a user who may update ForeignClusters but lacks the verb is refused (403).
func TestAReleasedVolumesRecordIsBreakGlass(t *testing.T) {
	g := NewWithT(t)
	fc := markedProvider(t)

	err := fixture.Annotate(t.Context(), bob, fc, map[string]*string{liqojanitor.VolumesReleasedAnnotation: released(volume("data-0"))})
	expectDenied(t, err, http.StatusForbidden, "metadata.annotations[liqo.io/foreign-cluster-permanently-unreachable]", fc,
		`user "bob" may not record released volumes`)
	g.Expect(get(t, fc).Annotations).NotTo(HaveKey(liqojanitor.VolumesReleasedAnnotation))
}

// TestAReleasedVolumesRecordOnlyGrowsWhileMarked: a change that drops a volume, or removes the record, is
// refused, naming what it would lose; appending passes.
func TestAReleasedVolumesRecordOnlyGrowsWhileMarked(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	fc := markedProvider(t)
	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{
		liqojanitor.VolumesReleasedAnnotation: released(volume("data-0"), volume("data-1"))})).To(Succeed())

	err := fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.VolumesReleasedAnnotation: released(volume("data-0"), volume("data-2"))})
	expectDenied(t, err, http.StatusUnprocessableEntity, releasedPath, fc, "only grows", "shop/data-1 (uid uid-data-1)", "nothing is lost")
	err = fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.VolumesReleasedAnnotation: nil})
	expectDenied(t, err, http.StatusUnprocessableEntity, releasedPath, fc, "cannot be removed while the cluster is marked")
	rec, _ := recordOn(t, fc)
	g.Expect(rec.Volumes).To(Equal([]liqojanitor.ReleasedVolume{volume("data-0"), volume("data-1")}), "nothing refused was stored")

	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{
		liqojanitor.VolumesReleasedAnnotation: released(volume("data-0"), volume("data-1"), volume("data-2"))})).To(Succeed())
	rec, _ = recordOn(t, fc)
	g.Expect(rec.Volumes).To(HaveLen(3))
}

// TestUnmarkingDropsTheReleasedVolumesRecordAndWarns: the record goes with the mark, and the unmarking is
// answered with the warning that re-peering lets the provider delete the released volumes' remote PVCs.
func TestUnmarkingDropsTheReleasedVolumesRecordAndWarns(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	fc := markedProvider(t)
	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{
		liqojanitor.VolumesReleasedAnnotation: released(volume("data-0"), volume("data-1"))})).To(Succeed())
	rec, _ := recordOn(t, fc)

	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.MarkAnnotation: nil})).To(Succeed())
	g.Expect(get(t, fc).Annotations).NotTo(HaveKey(liqojanitor.VolumesReleasedAnnotation))
	want := rec.RepeerWarning(string(fc.Spec.ClusterID))
	g.Expect(want).To(ContainSubstring("delete 2 remote PVCs whose data you released (shop-remote/data-0, shop-remote/data-1)"))
	g.Expect(aliceW.Warnings()).To(ContainElement(want))
}

// keepReleased writes, as the janitor does, a record of volumes released from clusterID into its copy in
// namespace ns (created if need be).
func keepReleased(t *testing.T, ns, clusterID string, rec liqojanitor.VolumesReleased) {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: liqojanitor.ReleasedVolumesConfigMap},
		Data: map[string]string{clusterID: rec.String()}}
	if err := env.Client.Create(t.Context(), cm); apierrors.IsAlreadyExists(err) {
		patch, _ := json.Marshal(map[string]any{"data": cm.Data})
		g.Expect(env.Client.Patch(t.Context(), cm, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
	} else {
		g.Expect(err).NotTo(HaveOccurred())
	}
}

// TestPeeringAClusterWhoseVolumesWereReleasedWarns: a ForeignCluster created with a cluster ID the janitor
// keeps released volumes of is answered with the warning (and created: the warning never refuses); one of
// another cluster ID, or kept in another namespace than the janitor's, is not.
func TestPeeringAClusterWhoseVolumesWereReleasedWarns(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	id := fixture.Prefix("released-")
	rec := liqojanitor.VolumesReleased{At: time.Now().UTC().Format(time.RFC3339), By: markerUser,
		Volumes: []liqojanitor.ReleasedVolume{volume("data-0")}}
	keepReleased(t, janitorsNamespace(t), id, rec)
	lookAlike := fixture.Prefix("released-")
	keepReleased(t, env.Namespace(t), lookAlike, rec)

	w := &harness.WarningRecorder{}
	c, err := env.NewClient(func(c *rest.Config) { c.WarningHandlerWithContext = w })
	g.Expect(err).NotTo(HaveOccurred())
	create := func(clusterID string) {
		fc := &liqov1beta1.ForeignCluster{
			ObjectMeta: metav1.ObjectMeta{Name: clusterID, Labels: map[string]string{liqojanitor.RemoteClusterIDLabel: clusterID}},
			Spec:       liqov1beta1.ForeignClusterSpec{ClusterID: liqov1beta1.ClusterID(clusterID)},
		}
		g.Expect(c.Create(ctx, fc)).To(Succeed())
	}

	create(lookAlike)
	create(fixture.Prefix("unreleased-"))
	g.Expect(w.Warnings()).To(BeEmpty(), "no record of these cluster IDs in the janitor's namespace")
	create(id)
	g.Expect(w.Warnings()).To(Equal([]string{rec.RepeerWarning(id)}))
	g.Expect(w.Warnings()[0]).To(ContainSubstring("re-peering lets " + id + "'s virtual kubelet delete 1 remote PVC whose data you released (shop-remote/data-0)"))
}
