package janitor_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// volumeLayout creates PVCs and the PVs they are bound to in one namespace (fixture.Bind), and remembers
// them.
type volumeLayout struct {
	t       *testing.T
	ns      string
	objects []client.Object
}

// claim creates a PVC of class in the layout's namespace, selected for node, bound to a PV pinned (by its
// node affinity) to cluster, a Liqo placeholder when placeholder is set.
func (l *volumeLayout) claim(name, class, node, cluster string, placeholder bool) *corev1.PersistentVolumeClaim {
	l.t.Helper()
	env := harness.Require(l.t)
	pvc, pv, err := fixture.Bind(l.t.Context(), env.Client, fixture.Claim{Namespace: l.ns, Name: name, Class: class, Node: node, Cluster: cluster, Placeholder: placeholder})
	NewWithT(l.t).Expect(err).NotTo(HaveOccurred())
	l.t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pv) })
	l.objects = append(l.objects, pvc, pv)
	return pvc
}

// storageClasses creates, once, Liqo's virtual storage class and a local one.
func storageClasses(t *testing.T) {
	t.Helper()
	NewWithT(t).Expect(fixture.StorageClasses(t.Context(), harness.Require(t).Client)).To(Succeed())
}

// TestVolumesPinnedToADeadClusterAreListedAndNeverWritten (issue 38, item 1): the plan lists exactly the
// PVCs pinned to the dead cluster X — of Liqo's virtual class, bound to a placeholder PV pinned to X, selected
// for X's VirtualNode or for one the janitor kept at first sight of the mark — with their pods, StatefulSet
// and reclaim policy; a PVC pinned to the live provider Y, one of a local class and one whose PV names X
// while its selected node is Y's are not listed; no PVC or PV is written.
func TestVolumesPinnedToADeadClusterAreListedAndNeverWritten(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 2})
	dead, live := cons.Providers[0], cons.Providers[1]
	kill(t, dead)
	storageClasses(t)
	l := &volumeLayout{t: t, ns: env.Namespace(t)}
	web := l.claim("data-web-0", "liqo", dead.Node.Name, dead.ID, true)
	scratch := l.claim("scratch", "liqo", dead.Node.Name, dead.ID, true)
	gone := l.claim("kept", "liqo", dead.ID+"-gone", dead.ID, true) // its VirtualNode went with the unpeering
	l.claim("on-live", "liqo", live.Node.Name, live.ID, true)
	l.claim("local", "local-disks", dead.Node.Name, dead.ID, false)
	l.claim("elsewhere", "liqo", live.Node.Name, dead.ID, true) // the PV names X, its selected node is Y's

	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: l.ns, Name: "web"}, Spec: appsv1.StatefulSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}},
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: web.Spec}},
	}}
	g.Expect(env.Client.Create(ctx, sts)).To(Succeed())
	pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: l.ns, Name: "web-0"}, Spec: corev1.PodSpec{
		AutomountServiceAccountToken: ptr.To(false),
		Containers:                   []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: web.Name}}}},
	}}
	g.Expect(env.Client.Create(ctx, pending)).To(Succeed())

	// the janitor's record of the mark's first sight names a VirtualNode that is gone now
	janitorNS := env.Namespace(t)
	fc := get(t, dead.ForeignCluster)
	rec, err := json.Marshal(liqojanitor.KeptRecord{Mark: fc.Annotations[liqojanitor.MarkedAtAnnotation], VirtualNodes: []string{dead.ID + "-gone"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: janitorNS, Name: liqojanitor.RecordsConfigMap},
		Data: map[string]string{string(fc.UID): string(rec)}})).To(Succeed())

	before := rvs(t, l.objects...)
	mc, err := metadata.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	plan, err := janitor.PlanCluster(ctx, env.Client, mc, dead.ForeignCluster.Name, janitor.Options{Namespace: janitorNS})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(plan.PinnedVolumes).To(Equal(3))
	g.Expect(plan.Volumes).To(Equal([]liqojanitor.PinnedVolume{
		{Namespace: l.ns, Name: "data-web-0", UID: string(web.UID), PV: "pvc-" + string(web.UID), ReclaimPolicy: "Delete",
			Pods: []string{"web-0 (Pending)"}, StatefulSet: "web"},
		{Namespace: l.ns, Name: "kept", UID: string(gone.UID), PV: "pvc-" + string(gone.UID), ReclaimPolicy: "Delete"},
		{Namespace: l.ns, Name: "scratch", UID: string(scratch.UID), PV: "pvc-" + string(scratch.UID), ReclaimPolicy: "Delete"},
	}))
	g.Expect(rvs(t, l.objects...)).To(Equal(before), "no PVC or PV is written")

	// the live provider has none
	plan, err = janitor.PlanCluster(ctx, env.Client, mc, live.ForeignCluster.Name, janitor.Options{Namespace: janitorNS})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(plan.Volumes).To(ConsistOf(HaveField("Name", "on-live")))
	g.Expect(rvs(t, l.objects...)).To(Equal(before), "no PVC or PV is written")
}

// TestARunningJanitorReportsPinnedVolumesWithTheirDataAndNeverWritesThem (issue 38, item 1): a janitor that
// sees the mark records the cluster's VirtualNode names and where each offloaded namespace is on the cluster
// (the NamespaceMap's currentMapping first, the NamespaceOffloading's remoteNamespaceName for a namespace
// it does not map); its unpeering record lists each pinned volume with its data there and says how many, the
// metric counts them, and once the VirtualNode is gone (the unpeering deletes it) they are still listed by
// the record kept at first sight. For a further hour of fake time, a pass every minute, no PVC or PV is
// written.
func TestARunningJanitorReportsPinnedVolumesWithTheirDataAndNeverWritesThem(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	cons := build(t, fixture.Spec{Providers: 1, OffloadedNamespaces: 2})
	p := cons.Providers[0]
	mapped, unmapped := cons.Namespaces[0], cons.Namespaces[1]
	nm := get(t, p.NamespaceMap)
	nm.Status.CurrentMapping = map[string]offloadingv1beta1.RemoteNamespaceStatus{mapped: {RemoteNamespace: mapped + "-on-x", Phase: "Accepted"}}
	g.Expect(env.Client.Status().Update(ctx, nm)).To(Succeed())
	storageClasses(t)
	la, lb := &volumeLayout{t: t, ns: mapped}, &volumeLayout{t: t, ns: unmapped}
	a := la.claim("data-db-0", "liqo", p.Node.Name, p.ID, true)
	b := lb.claim("scratch", "liqo", p.Node.Name, p.ID, true)
	objects := append(la.objects, lb.objects...)
	before := rvs(t, objects...)

	kill(t, p)
	janitorNS := env.OwnNamespace(t)
	stop := startJanitor(t, janitor.Options{Namespace: janitorNS})
	g.Expect(fixture.Mark(ctx, env.Client, p)).To(Succeed())

	kept := func() liqojanitor.KeptRecord {
		cm := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: janitorNS, Name: liqojanitor.RecordsConfigMap}, cm); err != nil {
			return liqojanitor.KeptRecord{}
		}
		rec, _ := liqojanitor.KeptRecordOf(cm, p.ForeignCluster.UID, get(t, p.ForeignCluster).Annotations)
		return rec
	}
	g.Eventually(kept).WithTimeout(time.Minute).Should(And(
		HaveField("VirtualNodes", Equal([]string{p.VirtualNode.Name})),
		HaveField("RemoteNamespaces", Equal(map[string]string{mapped: mapped + "-on-x", unmapped: unmapped + "-consumer"})),
	), "at first sight the janitor keeps the VirtualNode names and where each offloaded namespace is on the cluster")

	listed := And(HaveField("ClusterID", p.ID), HaveField("PinnedVolumes", 2), HaveField("Volumes", Equal([]liqojanitor.PinnedVolume{
		{Namespace: mapped, Name: "data-db-0", UID: string(a.UID), PV: "pvc-" + string(a.UID), ReclaimPolicy: "Delete", RemoteNamespace: mapped + "-on-x"},
		{Namespace: unmapped, Name: "scratch", UID: string(b.UID), PV: "pvc-" + string(b.UID), ReclaimPolicy: "Delete", RemoteNamespace: unmapped + "-consumer"},
	})))
	g.Eventually(unpeeringRecord(t, p)).WithTimeout(time.Minute).Should(listed)
	g.Expect(unpeeringRecord(t, p)().Summary()).To(HaveSuffix("\n2 volumes pinned to " + p.ID + ": their workloads cannot run anywhere until released"))
	g.Eventually(func() float64 { return counter("liqo_janitor_pinned_volumes", nil) }).Should(Equal(2.0))

	// The unpeering deletes the VirtualNode (Liqo's deletion routine, once the janitor drained it).
	g.Eventually(func() int { return podsLeft(t, p) }).WithTimeout(time.Minute).Should(BeZero())
	dropFinalizer(ctx, t, env.Client, p.VirtualNode, fixture.VirtualNodeFinalizer)
	g.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, p.VirtualNode))).To(Succeed())
	g.Eventually(gone(t, p.VirtualNode)).Should(BeTrue())
	g.Consistently(unpeeringRecord(t, p)).WithTimeout(3*time.Second).Should(listed,
		"without the VirtualNode the volumes are still X's, by the names kept at first sight")
	g.Expect(rvs(t, objects...)).To(Equal(before), "the running janitor wrote no PVC and no PV")
	stop()

	mc, err := metadata.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	passes, err := janitor.ReconcileFor(ctx, env.Client, env.Client, mc, p.ForeignCluster.Name, janitor.Options{Namespace: janitorNS}, time.Hour, time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(passes).To(Equal(61))
	g.Expect(unpeeringRecord(t, p)()).To(listed)
	g.Expect(rvs(t, objects...)).To(Equal(before), "an hour of passes wrote no PVC and no PV")
}

// unpeeringRecord reads the janitor's unpeering record on p's ForeignCluster.
func unpeeringRecord(t *testing.T, p *fixture.Provider) func() liqojanitor.Unpeering {
	t.Helper()
	return func() liqojanitor.Unpeering {
		u, _ := liqojanitor.UnpeeringOf(get(t, p.ForeignCluster).Annotations)
		return u
	}
}
