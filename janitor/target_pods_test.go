package janitor

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liqo-janitor/liqo-janitor/janitor/internal/liqoversion"
)

func TestDrainSelectionFollowsTheInstalledLiqo(t *testing.T) {
	g := NewWithT(t)
	ds := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"liqo.io/shadowPod": "true"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent"}}}}
	mirror := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"liqo.io/shadowPod": "true"},
		Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "x"}}}
	stranger := &metav1.PartialObjectMetadata{}
	for _, v := range []liqoversion.Version{{Minor: 0, Known: true}, {Minor: 1, Known: true}} {
		g.Expect(notDrainedBy(ds, v)).To(BeEmpty(), "Liqo before v1.2 drains DaemonSet pods too")
		g.Expect(notDrainedBy(mirror, v)).To(BeEmpty())
		g.Expect(notDrainedBy(stranger, v)).To(Equal(notShadowPod))
	}
	for _, v := range []liqoversion.Version{{Minor: 2, Known: true}, {}} {
		g.Expect(notDrainedBy(ds, v)).To(Equal(daemonSetPod), "v1.2 and an unknown version: the narrowest selection")
		g.Expect(notDrainedBy(mirror, v)).To(Equal(mirrorPod))
	}
}
