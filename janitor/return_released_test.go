package janitor_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// The volumes released from a cluster are never forgotten (janitor rule 23): the janitor merges the
// gate's stamped released-volumes record on a marked ForeignCluster into its copy in its namespace, under
// the cluster ID, dropping no volume it kept and no other cluster's entry, and copies no record the gate
// did not stamp.

// releasedCopy reads the janitor's copy of the volumes released from clusterID in namespace ns, by UID.
func releasedCopy(t *testing.T, ns, clusterID string) func() []string {
	t.Helper()
	env := harness.Require(t)
	return func() []string {
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: liqojanitor.ReleasedVolumesConfigMap}, cm); err != nil {
			return nil
		}
		rec, _ := liqojanitor.ReleasedVolumesOf(cm, clusterID)
		var uids []string
		for _, v := range rec.Volumes {
			uids = append(uids, v.UID)
		}
		return uids
	}
}

func TestTheJanitorMergesTheReleasedVolumesIntoItsCopy(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns, p := markedInOwnNamespace(t)
	id := string(p.ForeignCluster.Spec.ClusterID)
	vol := func(uid string) liqojanitor.ReleasedVolume {
		return liqojanitor.ReleasedVolume{PVC: "shop/" + uid, UID: uid, Remote: "shop-remote/" + uid}
	}
	earlier := liqojanitor.VolumesReleased{At: "2026-01-01T00:00:00Z", By: "alice", Volumes: []liqojanitor.ReleasedVolume{vol("kept-0")}}
	other := liqojanitor.VolumesReleased{At: "2026-01-01T00:00:00Z", By: "alice", Volumes: []liqojanitor.ReleasedVolume{vol("other-0")}}
	g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: liqojanitor.ReleasedVolumesConfigMap},
		Data:       map[string]string{id: earlier.String(), "another-cluster": other.String()},
	})).To(Succeed())
	// Not the gate's stamp (no user): not copied.
	unstamped := liqojanitor.VolumesReleased{At: time.Now().UTC().Format(time.RFC3339), Volumes: []liqojanitor.ReleasedVolume{vol("forged-0")}}
	g.Expect(fixture.Annotate(ctx, env.Client, p.ForeignCluster, map[string]*string{
		liqojanitor.VolumesReleasedAnnotation: ptr.To(unstamped.String())})).To(Succeed())

	startJanitor(t, janitor.Options{Namespace: ns, GracePeriod: time.Hour})
	g.Eventually(cleanupAnnotation(t, p)).WithTimeout(30 * time.Second).Should(HavePrefix(liqojanitor.GracePlanPrefix))
	g.Expect(releasedCopy(t, ns, id)()).To(Equal([]string{"kept-0"}), "an unstamped record is not copied")

	stamped := liqojanitor.VolumesReleased{At: time.Now().UTC().Format(time.RFC3339), By: "alice",
		Volumes: []liqojanitor.ReleasedVolume{vol("data-0"), vol("data-1")}}
	g.Expect(fixture.Annotate(ctx, env.Client, p.ForeignCluster, map[string]*string{
		liqojanitor.VolumesReleasedAnnotation: ptr.To(stamped.String())})).To(Succeed())
	g.Eventually(releasedCopy(t, ns, id)).WithTimeout(30*time.Second).Should(Equal([]string{"kept-0", "data-0", "data-1"}),
		"merged, the volume kept earlier not dropped")
	g.Expect(releasedCopy(t, ns, "another-cluster")()).To(Equal([]string{"other-0"}), "another cluster's entry untouched")
}

func TestTheJanitorCreatesItsCopyOfTheReleasedVolumes(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ns, p := markedInOwnNamespace(t)
	rec := liqojanitor.VolumesReleased{At: time.Now().UTC().Format(time.RFC3339), By: "alice",
		Volumes: []liqojanitor.ReleasedVolume{{PVC: "shop/data-0", UID: "data-0"}}}
	g.Expect(fixture.Annotate(t.Context(), env.Client, p.ForeignCluster, map[string]*string{
		liqojanitor.VolumesReleasedAnnotation: ptr.To(rec.String())})).To(Succeed())

	startJanitor(t, janitor.Options{Namespace: ns, GracePeriod: time.Hour})
	g.Eventually(releasedCopy(t, ns, string(p.ForeignCluster.Spec.ClusterID))).WithTimeout(30 * time.Second).Should(Equal([]string{"data-0"}))
}
