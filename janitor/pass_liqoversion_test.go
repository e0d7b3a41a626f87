package janitor

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseLiqoTag(t *testing.T) {
	for image, want := range map[string]struct {
		minor int
		ok    bool
	}{
		"ghcr.io/liqotech/liqo-controller-manager:v1.2.0":                 {2, true},
		"ghcr.io/liqotech/liqo-controller-manager:v1.0.3":                 {0, true},
		"ghcr.io/liqotech/liqo-controller-manager:v1.1.0-rc.2":            {1, true},
		"registry.local:5000/liqo/liqo-controller-manager:v1.1.0":         {1, true},
		"ghcr.io/liqotech/liqo-controller-manager:v1.2.0@sha256:0123abcd": {2, true},
		"registry.local:5000/liqo/liqo-controller-manager":                {0, false}, // the port is no tag
		"ghcr.io/liqotech/liqo-controller-manager:4f1c2d3":                {0, false}, // a commit, no version
		"ghcr.io/liqotech/liqo-controller-manager:v2.0.0":                 {0, false},
		"ghcr.io/liqotech/liqo-controller-manager:1.2.0":                  {0, false},
		"ghcr.io/liqotech/liqo-controller-manager:v1.x.0":                 {0, false},
	} {
		minor, _, ok := parseLiqoTag(image)
		if ok != want.ok || (ok && minor != want.minor) {
			t.Errorf("parseLiqoTag(%q) = %d, %v; want %d, %v", image, minor, ok, want.minor, want.ok)
		}
	}
}

func TestLiqoVersionOlderAndBefore(t *testing.T) {
	g := NewWithT(t)
	unknown, v10, v12 := liqoVersion{}, liqoVersion{minor: 0, known: true}, liqoVersion{minor: 2, known: true}
	g.Expect(unknown.older(2)).To(BeFalse(), "an unknown version is not known to be older")
	g.Expect(unknown.before(2)).To(BeTrue(), "but what v1.2 does by itself may be done for it")
	g.Expect(v10.older(2)).To(BeTrue())
	g.Expect(v12.older(2)).To(BeFalse())
	g.Expect(v12.before(2)).To(BeFalse())
	g.Expect(unknown.String()).To(Equal("unknown"))
}

func TestDrainSelectionFollowsTheInstalledLiqo(t *testing.T) {
	g := NewWithT(t)
	ds := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"liqo.io/shadowPod": "true"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent"}}}}
	mirror := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"liqo.io/shadowPod": "true"},
		Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "x"}}}
	stranger := &metav1.PartialObjectMetadata{}
	for _, v := range []liqoVersion{{minor: 0, known: true}, {minor: 1, known: true}} {
		g.Expect(notDrainedBy(ds, v)).To(BeEmpty(), "Liqo before v1.2 drains DaemonSet pods too")
		g.Expect(notDrainedBy(mirror, v)).To(BeEmpty())
		g.Expect(notDrainedBy(stranger, v)).To(Equal(notShadowPod))
	}
	for _, v := range []liqoVersion{{minor: 2, known: true}, {}} {
		g.Expect(notDrainedBy(ds, v)).To(Equal(daemonSetPod), "v1.2 and an unknown version: the narrowest selection")
		g.Expect(notDrainedBy(mirror, v)).To(Equal(mirrorPod))
	}
}

func TestFinalizersRemainingReadsTheNamespaceController(t *testing.T) {
	ns := &corev1.Namespace{Status: corev1.NamespaceStatus{Conditions: []corev1.NamespaceCondition{
		{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionTrue,
			Message: "Some resources are remaining: firewallconfigurations.networking.liqo.io has 1 resource instances"},
		{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionTrue,
			Message: "Some content in the namespace has finalizers remaining: crdreplicator.liqo.io/operator in 1 resource instances, " +
				"firewallconfigurations-controller.liqo.io/finalizer in 2 resource instances"},
	}}}
	NewWithT(t).Expect(finalizersRemaining(ns)).To(Equal(map[string]int{
		"crdreplicator.liqo.io/operator": 1, "firewallconfigurations-controller.liqo.io/finalizer": 2}))
	ns.Status.Conditions[1].Status = corev1.ConditionFalse
	NewWithT(t).Expect(finalizersRemaining(ns)).To(BeEmpty(), "a condition that is not true says nothing")
}

func TestWhatTheNamespaceControllerReportsAndNoListingExplains(t *testing.T) {
	g := NewWithT(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liqo-tenant-a"}, Status: corev1.NamespaceStatus{Conditions: []corev1.NamespaceCondition{{
		Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionTrue,
		Message: "Some content in the namespace has finalizers remaining: crdreplicator.liqo.io/operator in 1 resource instances, " +
			firewallFinalizer + " in 1 resource instances, " + virtualNodeFinalize + " in 1 resource instances, example.com/keep in 2 resource instances",
	}}}}
	// the firewall configurations were listed (the condition is stale), the identity Secrets could not be
	accounted := map[string]bool{virtualNodeFinalize: true, firewallFinalizer: true}
	left := unaccounted(ns, accounted, &scope{}, Options{})
	g.Expect(left).To(HaveLen(2))
	g.Expect(left[1]).To(And(HaveField("Kind", "(unknown kind)"), HaveField("HeldBy", "finalizer example.com/keep")))
	g.Expect(left[0]).To(And(HaveField("Kind", "Secret"), HaveField("HeldBy", "finalizer crdreplicator.liqo.io/operator"),
		HaveField("Releasable", false), HaveField("Name", ContainSubstring("may not list them"))))
}
