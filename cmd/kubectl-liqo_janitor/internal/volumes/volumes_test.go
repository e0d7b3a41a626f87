package volumes

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// TestSuccessorIsRecreatePvcs: the claim that replaces a released one is Liqo's recreatePvc's — name,
// namespace, labels, spec without its volumeName, none of the old claim's annotations — but for Liqo
// v1.2's remote overrides.
func TestSuccessorIsRecreatePvcs(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	old := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db", UID: "old", ResourceVersion: "42", Labels: map[string]string{"app": "db"},
			Finalizers: []string{"kubernetes.io/pvc-protection"}, Annotations: map[string]string{
				"pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes",
				"volume.kubernetes.io/selected-node": "liqo-provider-a", "volume.kubernetes.io/storage-provisioner": "liqo.io/storage",
				"volume.beta.kubernetes.io/storage-provisioner": "liqo.io/storage", "example.io/note": "dropped, as Liqo drops it",
				"liqo.io/remote-storage-class": "fast", "liqo.io/remote-access-modes": "ReadWriteOnce"}},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("liqo"), VolumeName: "pvc-old",
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}
	want := old.Spec.DeepCopy()
	want.VolumeName = ""
	g.Expect(successor(old)).To(Equal(&corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db", Labels: map[string]string{"app": "db"},
			Annotations: map[string]string{"liqo.io/remote-storage-class": "fast", "liqo.io/remote-access-modes": "ReadWriteOnce"}},
		Spec: *want,
	}))
	g.Expect(old.Spec.VolumeName).To(Equal("pvc-old"), "the old claim is not changed")
}

// TestMergedKeepsTheVolumesAlreadyRecorded: a release's record holds the volumes of the record before it
// and the new ones, each once.
func TestMergedKeepsTheVolumesAlreadyRecorded(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 6, 20, 0, 0, 0, time.UTC)
	a := liqojanitor.ReleasedVolume{PVC: "app/a", UID: "ua", Remote: "remote/a"}
	b := liqojanitor.ReleasedVolume{PVC: "app/b", UID: "ub"}
	for name, tc := range map[string]struct {
		old      string
		released []liqojanitor.ReleasedVolume
		want     []liqojanitor.ReleasedVolume
	}{
		"no record yet":                       {"", []liqojanitor.ReleasedVolume{a}, []liqojanitor.ReleasedVolume{a}},
		"an earlier release's volumes kept":   {liqojanitor.VolumesReleased{Volumes: []liqojanitor.ReleasedVolume{a}}.String(), []liqojanitor.ReleasedVolume{b}, []liqojanitor.ReleasedVolume{a, b}},
		"a volume already recorded once":      {liqojanitor.VolumesReleased{Volumes: []liqojanitor.ReleasedVolume{a}}.String(), []liqojanitor.ReleasedVolume{a, b}, []liqojanitor.ReleasedVolume{a, b}},
		"an unreadable record is not a start": {"not json", []liqojanitor.ReleasedVolume{b}, []liqojanitor.ReleasedVolume{b}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			NewWithT(t).Expect(merged(tc.old, tc.released, "alice", at)).To(Equal(liqojanitor.VolumesReleased{
				At: "2026-12-06T20:00:00Z", By: "alice", Volumes: tc.want}))
		})
	}
}

// TestShellWordQuotesWhatAShellWouldSplit: the command printed is typed as is.
func TestShellWordQuotesWhatAShellWouldSplit(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"provider-a":                "provider-a",
		"0f8a2d7c-9b1e.example:443": "0f8a2d7c-9b1e.example:443",
		"a b":                       "'a b'",
		"it's":                      `'it'\''s'`,
		"$(rm -rf)":                 "'$(rm -rf)'",
		"\x1b[2J":                   `'\x1b[2J'`,
	} {
		NewWithT(t).Expect(shellWord(in)).To(Equal(want), "%q", in)
	}
}
