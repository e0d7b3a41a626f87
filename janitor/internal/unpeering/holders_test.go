package unpeering

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
	left := unaccounted(ns, accounted, &Cluster{})
	g.Expect(left).To(HaveLen(2))
	g.Expect(left[1]).To(And(HaveField("Kind", "(unknown kind)"), HaveField("HeldBy", "finalizer example.com/keep")))
	g.Expect(left[0]).To(And(HaveField("Kind", "Secret"), HaveField("HeldBy", "finalizer crdreplicator.liqo.io/operator"),
		HaveField("Releasable", false), HaveField("Name", ContainSubstring("may not list them"))))
}
