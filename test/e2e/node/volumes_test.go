package node

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// TestAReleasedStatefulSetReplicaRunsAgain plays issue 38 end to end on the real node: a StatefulSet
// replica whose claim a provider's virtual kubelet provisioned is pinned to that provider (a placeholder
// PV, fixture.Bind); the provider is dead (unreachable, its unpeering left Terminating) and kube-scheduler
// reports the replica's pod unschedulable (volumeNodeConflict). The admin marks the provider dead and runs
// the plugin's release-volumes through the installed gate: without the typed cluster ID nothing changes;
// with it the claim is deleted, the StatefulSet controller gives the Pending pod a new claim, kube-scheduler selects
// the node for it, the test plays Liqo's local storage provisioner (see provisionLocally), and the replica
// runs on the node. kube-controller-manager runs all its controllers in this lane (the StatefulSet
// controller, the PV binder, pvc- and pv-protection). The fixture's virtual Node posts no status:
// kube-scheduler refuses it for its taints (not-ready, then the node lifecycle controller's unreachable)
// or, were it untainted, for having no allocatable pods (NodeResourcesFit: "Too many pods"), so only the
// real node can take the pod, with no selector. The test logs the timeline from the StatefulSet's
// creation.
func TestAReleasedStatefulSetReplicaRunsAgain(t *testing.T) {
	env := harness.Require(t)
	logReplicasOnFailure(t)
	g := NewWithT(t)
	ctx := t.Context()
	c := env.Client
	hostDir := t.TempDir() // the "real" volume's directory; removed last, once the pod is gone (below)

	cons, err := fixture.Build(ctx, c, fixture.Spec{Prefix: "sts", Providers: 1})
	g.Expect(err).NotTo(HaveOccurred())
	dead := cons.Providers[0]
	t.Cleanup(func() {
		NewWithT(t).Expect(fixture.Retire(context.Background(), c, dead.ForeignCluster)).To(Succeed())
		_ = c.Delete(context.Background(), dead.Node)
	})
	g.Expect(fixture.StorageClasses(ctx, c)).To(Succeed())
	ns := env.Namespace(t)
	old, placeholder, err := fixture.Bind(ctx, c, fixture.Claim{Namespace: ns, Name: "data-db-0", Class: fixture.LiqoStorageClass,
		Node: dead.Node.Name, Cluster: dead.ID, Placeholder: true})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = c.Delete(context.Background(), placeholder) })
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(old), old)).To(Succeed())
		g.Expect(old.Status.Phase).To(Equal(corev1.ClaimBound))
	}).WithTimeout(30*time.Second).Should(Succeed(), "the binder binds the claim to its placeholder")

	g.Expect(fixture.Kill(ctx, c, dead)).To(Succeed())
	g.Expect(fixture.Terminate(ctx, c, dead)).To(Succeed())

	sts := statefulSet(ns, "db", old.Spec)
	start := time.Now()
	since := func() string { return time.Since(start).Round(100 * time.Millisecond).String() }
	g.Expect(c.Create(ctx, sts)).To(Succeed())
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-0"}}
	t.Cleanup(func() { removeStatefulSet(t, sts, pod) })
	var conflict string
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodPending))
		g.Expect(pod.Status.Conditions).To(ContainElement(And(HaveField("Type", corev1.PodScheduled), HaveField("Status", corev1.ConditionFalse),
			HaveField("Reason", corev1.PodReasonUnschedulable), HaveField("Message", Or(ContainSubstring(volumeNodeConflict), ContainSubstring(volumeNodeConflictBefore))))))
		conflict = podScheduled(pod).Message
	}).WithTimeout(time.Minute).Should(Succeed(), "kube-scheduler cannot place db-0: its claim is pinned to %s", dead.ID)
	pending := since()
	t.Logf("+%s db-0 Pending: %s", pending, conflict)

	plugin, err := env.Binary("kubectl-liqo_janitor")
	g.Expect(err).NotTo(HaveOccurred())
	runPlugin(t, plugin, "", "mark", dead.ID, "--reason", "node lane: its volumes", "--yes")
	fc := dead.ForeignCluster.DeepCopy()
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(fc), fc)).To(Succeed())
		u, ok := liqojanitor.UnpeeringOf(fc.Annotations)
		g.Expect(ok).To(BeTrue(), "an unpeering record")
		g.Expect(u.PinnedVolumes).To(Equal(1))
	}).WithTimeout(3*time.Minute).WithPolling(time.Second).Should(Succeed(), "the janitor counts the volume pinned to %s", dead.ID)
	t.Logf("+%s the janitor's unpeering record counts 1 pinned volume", since())

	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(old), old)).To(Succeed())
		g.Expect(old.Status.Conditions).To(ContainElement(And(HaveField("Type", corev1.PersistentVolumeClaimConditionType("Unused")),
			HaveField("Status", corev1.ConditionFalse))))
	}).WithTimeout(30*time.Second).Should(Succeed(), "pvc-protection is done with the claim db-0 uses")
	before := versions(t, old, placeholder)
	out := runPlugin(t, plugin, "", "release-volumes", dead.ID)
	g.Expect(out).To(And(ContainSubstring("PVC "+ns+"/data-db-0 (uid "+string(old.UID)+") on PV "+placeholder.Name+" (Delete), StatefulSet db, pods: db-0 (Pending)"),
		ContainSubstring("would be deleted and left to StatefulSet db"), ContainSubstring("--confirm-data-loss="+dead.ID)))
	g.Expect(versions(t, old, placeholder)).To(Equal(before), "without the typed cluster ID no PVC or PV is written")

	released := since()
	out = runPlugin(t, plugin, "", "release-volumes", dead.ID, "--confirm-data-loss="+dead.ID)
	t.Logf("+%s release-volumes %s --confirm-data-loss=%s (ran from +%s):\n%s", since(), dead.ID, dead.ID, released, out)

	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: old.Name}}
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		g.Expect(claim.UID).NotTo(Equal(old.UID), "a new claim")
	}).WithTimeout(2*time.Minute).WithPolling(200*time.Millisecond).Should(Succeed(), "the StatefulSet controller creates db-0's claim anew")
	t.Logf("+%s new claim %s (uid %s), created by the StatefulSet controller", since(), claim.Name, claim.UID)
	g.Expect(claim.Spec.VolumeName).To(BeEmpty())
	g.Expect(claim.Spec.StorageClassName).To(Equal(ptr.To(fixture.LiqoStorageClass)))

	node := &corev1.Node{}
	g.Expect(c.Get(ctx, client.ObjectKey{Name: Name}, node)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		g.Expect(claim.Annotations).To(HaveKeyWithValue(liqojanitor.SelectedNodeAnnotation, Name))
		g.Expect(claim.Annotations).To(HaveKeyWithValue(storageProvisionerAnnotation, liqojanitor.LiqoStorageProvisioner))
	}).WithTimeout(2*time.Minute).WithPolling(200*time.Millisecond).Should(Succeed(),
		"kube-scheduler selects the node for the new claim, and the PV binder leaves it to Liqo's provisioner")
	t.Logf("+%s kube-scheduler selected %s for the new claim; the binder waits for %s", since(), Name, liqojanitor.LiqoStorageProvisioner)
	pv := provisionLocally(t, claim, node, filepath.Join(hostDir, "data"))
	t.Logf("+%s PV %s provisioned (played)", since(), pv.Name)

	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		g.Expect(pod.Spec.NodeName).To(Equal(Name))
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
		g.Expect(pod.Status.ContainerStatuses).To(ConsistOf(HaveField("Ready", true)))
	}).WithTimeout(2*time.Minute).WithPolling(200*time.Millisecond).Should(Succeed(), "db-0 runs on %s", Name)
	t.Logf("+%s db-0 Running and Ready on %s", since(), pod.Spec.NodeName)

	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
	g.Expect(claim.Status.Phase).To(Equal(corev1.ClaimBound))
	g.Expect(claim.Spec.VolumeName).To(Equal(pv.Name), "bound to the PV provisioned for it")
	g.Expect(pod.Spec.Volumes).To(ContainElement(HaveField("PersistentVolumeClaim.ClaimName", claim.Name)))
	g.Eventually(func(g Gomega) {
		var p corev1.PersistentVolume
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(placeholder), &p)).To(Succeed(), "the plugin never deletes a PV")
		g.Expect(p.UID).To(Equal(placeholder.UID))
		g.Expect(p.Status.Phase).To(Equal(corev1.VolumeReleased), "left Released (Liqo's provisioner, which would delete it, is not running)")
	}).WithTimeout(30 * time.Second).Should(Succeed())

	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(fc), fc)).To(Succeed())
	record, ok := liqojanitor.ParseVolumesReleased(fc.Annotations[liqojanitor.VolumesReleasedAnnotation])
	g.Expect(ok).To(BeTrue(), "the release is recorded on ForeignCluster %s", fc.Name)
	g.Expect(record.Volumes).To(ConsistOf(HaveField("UID", string(old.UID))))
	review := &authenticationv1.SelfSubjectReview{}
	g.Expect(c.Create(ctx, review)).To(Succeed())
	g.Expect(record.By).To(Equal(review.Status.UserInfo.Username), "stamped by the gate with the admin's name")
	_, stamped := record.StampedAt()
	g.Expect(stamped).To(BeTrue())
}

// volumeNodeConflict is how kube-scheduler's volume binding says a node does not match a bound PV's node
// affinity (pkg/scheduler/framework/plugins/volumebinding/binder.go ErrReasonNodeConflict, v1.37.2, the
// lane's, since kubernetes/kubernetes#129887); volumeNodeConflictBefore is how earlier releases said it.
const (
	volumeNodeConflict       = "node(s) didn't match PersistentVolume's node affinity"
	volumeNodeConflictBefore = "node(s) had volume node affinity conflict"
)

// storageProvisionerAnnotation is where the PV binder names the external provisioner it waits for
// (k8s.io/component-helpers storage/volume AnnStorageProvisioner).
const storageProvisionerAnnotation = "volume.kubernetes.io/storage-provisioner"

// statefulSet is StatefulSet name of one replica whose volumeClaimTemplate "data" has spec (unbound): a
// pause container, the sandbox image the node imported (never pulled).
func statefulSet(ns, name string, spec corev1.PersistentVolumeClaimSpec) *appsv1.StatefulSet {
	spec.VolumeName = ""
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To[int32](1),
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false), TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{Name: "db", Image: sandboxImage, ImagePullPolicy: corev1.PullNever,
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}}},
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: spec}},
	}}
}

// provisionLocally plays, for claim, the end of Liqo's local provisioning. Liqo's controller manager with
// --enable-storage (the chart's default) provisions the claims of its virtual class (provisioner
// liqo.io/storage) whose selected node is a local one through a real storage class, which this lane does
// not have (pkg/liqo-controller-manager/offloading/storageprovisioner, v1.2.0): provision.go Provision
// ignores a claim selected for a virtual node (liqo.io/type=virtual-node: that provider's virtual kubelet
// provisions it) and otherwise calls localprovisioner.go provisionLocalPVC, which creates or updates a
// "real" PVC named after the claim's UID in Liqo's storage namespace (the claim's spec, the real class,
// the selected node's annotations), waits until the real class's provisioner binds it, and returns a PV
// named by sig-storage-lib-external-provisioner v7 (pvc-<claim UID>) with the real PV's volume source,
// the claim's access modes and storage request, the virtual class's reclaim policy, and node affinity
// liqo.io/type DoesNotExist merged with the real PV's; the library then sets the claimRef (with the
// claim's UID), the annotation pv.kubernetes.io/provisioned-by: liqo.io/storage and the class. The test
// creates that PV, with a hostPath under a directory it owns as the real PV's source (the kubelet runs as
// root) and the affinity of a local real PV (kubernetes.io/hostname In [the node]); the PV binder binds
// it, and kube-scheduler, waiting in its volume binding, then binds the pod.
func provisionLocally(t *testing.T, claim *corev1.PersistentVolumeClaim, node *corev1.Node, path string) *corev1.PersistentVolume {
	t.Helper()
	c := harness.Require(t).Client
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: liqojanitor.PlaceholderPVPrefix + string(claim.UID),
			Annotations: map[string]string{liqojanitor.ProvisionedByAnnotation: liqojanitor.LiqoStorageProvisioner}},
		Spec: corev1.PersistentVolumeSpec{
			StorageClassName: fixture.LiqoStorageClass, AccessModes: claim.Spec.AccessModes,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: claim.Spec.Resources.Requests[corev1.ResourceStorage]},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete, // the class's (the API server's default)
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path,
				Type: ptr.To(corev1.HostPathDirectoryOrCreate)}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: liqojanitor.NodeTypeLabel, Operator: corev1.NodeSelectorOpDoesNotExist},
					{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node.Labels[corev1.LabelHostname]}},
				}}}}},
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID},
		},
	}
	NewWithT(t).Expect(c.Create(t.Context(), pv)).To(Succeed())
	t.Cleanup(func() { _ = c.Delete(context.Background(), pv) })
	return pv
}

// removeStatefulSet deletes the StatefulSet and its claim, and waits for its pod to be gone from the node
// (before the test's directory, which the pod's volume is in, is removed).
func removeStatefulSet(t *testing.T, sts *appsv1.StatefulSet, pod *corev1.Pod) {
	t.Helper()
	c := harness.Require(t).Client
	ctx := context.Background()
	_ = c.Delete(ctx, sts, client.PropagationPolicy(metav1.DeletePropagationBackground))
	_ = c.Delete(ctx, pod, client.GracePeriodSeconds(1))
	_ = c.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: sts.Namespace, Name: "data-" + pod.Name}})
	NewWithT(t).Eventually(func() bool {
		err := c.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, &corev1.Pod{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(time.Minute).Should(BeTrue(), "db-0 is gone")
}

// podScheduled is the pod's PodScheduled condition (zero if none).
func podScheduled(pod *corev1.Pod) corev1.PodCondition {
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodScheduled {
			return cond
		}
	}
	return corev1.PodCondition{}
}

// versions are the objects' resourceVersions (fixture.ResourceVersionsOf): an object deleted, written or
// created again has another.
func versions(t *testing.T, objs ...client.Object) map[string]string {
	t.Helper()
	return fixture.ResourceVersionsOf(t, harness.Require(t).Client, objs...)
}
