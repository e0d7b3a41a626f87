package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/volumes"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// Releasing the volumes pinned to a dead provider (issue 38 item 2), against the API server with the
// kube-controller-manager controllers a release rests on: pvc-protection (holds a claim a pod bound to a
// node uses), pv-protection, the PV binder (binds the claims to their placeholders and marks a PV
// Released once its claim is gone), the StatefulSet controller (creates a new claim for its Pending pod)
// and the garbage collector. No scheduler runs: pods stay Pending.

// volumeControllers are kube-controller-manager's names of those controllers.
var volumeControllers = []string{"persistentvolumeclaim-protection-controller", "persistentvolume-protection-controller",
	"persistentvolume-binder-controller", "statefulset-controller", "garbage-collector-controller"}

// liqoClass is the test's StorageClass of Liqo's virtual storage (fixture.StorageClasses).
const liqoClass = fixture.LiqoStorageClass

// remoteNS is the namespace on the dead cluster the test's namespace is offloaded to, as the janitor kept it.
const remoteNS = "remote-app"

// pinnedLayout is a dead provider, marked by alice, and a namespace of PVCs pinned to it.
type pinnedLayout struct {
	t          *testing.T
	dead, live *fixture.Provider
	ns         string
}

// pinned lays out a dead provider marked through the gate, the janitor's record of its mark (its
// VirtualNode and where the test's namespace is offloaded there), and a namespace for the test's claims.
func pinned(t *testing.T) *pinnedLayout {
	t.Helper()
	testEnv := harness.Require(t)
	g := NewWithT(t)
	dead, live := deadAndLive(t)
	_, _, err := kubectl(t, alice, "", "mark", dead.ForeignCluster.Name, "--reason", "data centre flooded", "--yes")
	g.Expect(err).NotTo(HaveOccurred())
	l := &pinnedLayout{t: t, dead: dead, live: live, ns: testEnv.Namespace(t)}
	rec := liqojanitor.KeptRecord{Mark: annotations(t, dead)[liqojanitor.MarkedAtAnnotation],
		VirtualNodes: []string{dead.Node.Name}, RemoteNamespaces: map[string]string{l.ns: remoteNS}}
	putConfigMapData(t, janitorNamespace(t), liqojanitor.RecordsConfigMap, map[string]string{string(dead.ForeignCluster.UID): rec.String()})
	return l
}

// claim creates a PVC of Liqo's class selected for node and bound, as Liqo's virtual kubelet binds it, to
// a placeholder PV pinned to cluster (pkg/virtualKubelet/reflection/storage/controller.go
// provisionClaimOperation, storageprovisioner/remoteprovisioner.go ProvisionRemotePVC), and waits until
// the binder and the protection controllers are done with both.
func (l *pinnedLayout) claim(name, node, cluster string, labels, annotations map[string]string) *corev1.PersistentVolumeClaim {
	l.t.Helper()
	testEnv := harness.Require(l.t)
	g := NewWithT(l.t)
	ctx := l.t.Context()
	pvc, pv, err := fixture.Bind(ctx, testEnv.Client, fixture.Claim{Namespace: l.ns, Name: name, Class: liqoClass, Node: node, Cluster: cluster,
		Placeholder: true, Labels: labels, Annotations: annotations})
	g.Expect(err).NotTo(HaveOccurred())
	l.t.Cleanup(func() { _ = testEnv.Client.Delete(context.Background(), pv) })
	g.Eventually(func(g Gomega) {
		g.Expect(testEnv.Client.Get(ctx, client.ObjectKeyFromObject(pvc), pvc)).To(Succeed())
		g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound))
		g.Expect(pvc.Finalizers).To(ContainElement("kubernetes.io/pvc-protection"))
		g.Expect(testEnv.Client.Get(ctx, client.ObjectKeyFromObject(pv), pv)).To(Succeed())
		g.Expect(pv.Status.Phase).To(Equal(corev1.VolumeBound))
		g.Expect(pv.Finalizers).To(ContainElement("kubernetes.io/pv-protection"))
	}).WithTimeout(30*time.Second).Should(Succeed(), "the binder and the protection controllers are done with %s", name)
	l.awaitUnused(name, corev1.ConditionTrue)
	return pvc
}

// awaitUnused waits until pvc-protection's Unused condition of claim name has status (False once a pod
// references it), so that the test reads its resourceVersion once the controllers are done writing it.
func (l *pinnedLayout) awaitUnused(name string, status corev1.ConditionStatus) {
	l.t.Helper()
	NewWithT(l.t).Eventually(func(g Gomega) {
		pvc, err := getPVC(l.t, l.ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pvc.Status.Conditions).To(ContainElement(And(HaveField("Type", corev1.PersistentVolumeClaimConditionType("Unused")),
			HaveField("Status", status))))
	}).WithTimeout(30*time.Second).Should(Succeed(), "claim %s's Unused condition is %s", name, status)
}

// pod creates a pod using claim, bound to node ("" for a Pending one), with finalizers.
func (l *pinnedLayout) pod(name, claim, node string, finalizers ...string) *corev1.Pod {
	l.t.Helper()
	c := harness.Require(l.t).Client
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: l.ns, Name: name, Finalizers: finalizers}, Spec: corev1.PodSpec{
		NodeName: node, AutomountServiceAccountToken: ptr.To(false),
		Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
	}}
	NewWithT(l.t).Expect(c.Create(l.t.Context(), pod)).To(Succeed())
	l.awaitUnused(claim, corev1.ConditionFalse)
	if len(finalizers) > 0 {
		l.t.Cleanup(func() {
			_ = c.Patch(context.Background(), pod, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
		})
	}
	return pod
}

// statefulSet creates StatefulSet name of one replica, whose volumeClaimTemplate "data" generates claim
// data-<name>-0 (already there), and waits for its controller's Pending pod <name>-0.
func (l *pinnedLayout) statefulSet(name string, claim *corev1.PersistentVolumeClaim) *corev1.Pod {
	l.t.Helper()
	testEnv := harness.Require(l.t)
	g := NewWithT(l.t)
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: l.ns, Name: name}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To[int32](1),
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false), Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1",
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}}},
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: claim.Spec}},
	}}
	sts.Spec.VolumeClaimTemplates[0].Spec.VolumeName = ""
	g.Expect(testEnv.Client.Create(l.t.Context(), sts)).To(Succeed())
	pod := &corev1.Pod{}
	g.Eventually(func() error {
		return testEnv.Client.Get(l.t.Context(), client.ObjectKey{Namespace: l.ns, Name: name + "-0"}, pod)
	}).WithTimeout(30*time.Second).Should(Succeed(), "the StatefulSet controller creates its pod")
	l.awaitUnused(claim.Name, corev1.ConditionFalse)
	return pod
}

// objects are the claims' and their PVs' keys, for fixture.ResourceVersions.
func objects(pvcs ...*corev1.PersistentVolumeClaim) []client.Object {
	var out []client.Object
	for _, pvc := range pvcs {
		out = append(out, pvc.DeepCopy(), &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvc.Spec.VolumeName}})
	}
	return out
}

func versions(t *testing.T, objs ...client.Object) map[string]string {
	t.Helper()
	return fixture.ResourceVersionsOf(t, harness.Require(t).Client, objs...)
}

func getPVC(t *testing.T, ns, name string) (*corev1.PersistentVolumeClaim, error) {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	return pvc, harness.Require(t).Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, pvc)
}

// releaseWith runs release-volumes as alice through volumes.Options, with o's test seams set by set.
func releaseWith(t *testing.T, arg, confirm string, set func(o *volumes.Options)) (stdout string, err error) {
	t.Helper()
	testEnv := harness.Require(t)
	var out bytes.Buffer
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Impersonate = ptr.To(testEnv.KubeconfigPath), ptr.To(alice)
	o := volumes.NewOptions(cli.NewFactory(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &out}, flags))
	o.ForeignCluster, o.ConfirmDataLoss, o.Timeout, o.Poll = arg, confirm, 30*time.Second, 100*time.Millisecond
	set(o)
	err = o.Run(t.Context())
	return out.String(), err
}

// TestReleaseVolumes runs the release's rules, each in its own layout, beside the controllers a release
// rests on (stopped once it ends: the package's other tests run without them).
func TestReleaseVolumes(t *testing.T) {
	testEnv := harness.Require(t)
	g := NewWithT(t)
	testEnv.StartControllersFor(t, volumeControllers)
	g.Expect(fixture.StorageClasses(t.Context(), testEnv.Client)).To(Succeed())
	// what a release needs beyond a plan reader's view: list PVCs, PVs, StorageClasses and StatefulSets,
	// delete and create PVCs
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "volume-releaser"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"get", "list", "delete", "create"}},
		{APIGroups: []string{""}, Resources: []string{"persistentvolumes"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"storageclasses"}, Verbs: []string{"list"}},
		{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, Verbs: []string{"list"}},
	}}
	for _, o := range []client.Object{role, harness.ClusterRoleBinding(role.Name, role.Name, alice, bob)} {
		g.Expect(client.IgnoreAlreadyExists(testEnv.Client.Create(t.Context(), o))).To(Succeed())
		t.Cleanup(func() { _ = testEnv.Client.Delete(context.Background(), o) }) // the package's other tests run without it
	}
	t.Run("without the typed cluster ID nothing changes", testReleaseNeedsTheClusterID)
	t.Run("a StatefulSet's and a Deployment's volumes are released", testReleaseStatefulSetAndDeployment)
	t.Run("a PVC re-created between the plan and the act is left alone", testReleaseUIDPrecondition)
	t.Run("a pod that does not go holds its volume", testReleaseHeldByAForeignFinalizer)
	t.Run("a pod on another node refuses the volume", testReleaseRefusesAPodElsewhere)
	t.Run("only from a dead cluster with no unfenced return", testReleaseOnlyFromADeadCluster)
	t.Run("a return recorded while the release waits stops it", testReleaseReturnDuringTheWait)
}

// testReleaseNeedsTheClusterID: without --confirm-data-loss the plan lists the pinned volumes, what would
// happen to each and the exact command, and nothing changes; with a wrong value it refuses with that
// command, and nothing changes either.
func testReleaseNeedsTheClusterID(t *testing.T) {
	g := NewWithT(t)
	l := pinned(t)
	web := l.claim("data-web-0", l.dead.Node.Name, l.dead.ID, nil, nil)
	l.statefulSet("web", web)
	scratch := l.claim("scratch", l.dead.Node.Name, l.dead.ID, map[string]string{"app": "db"}, nil)
	objs := objects(web, scratch)
	before := versions(t, objs...)
	name := l.dead.ForeignCluster.Name
	command := "kubectl liqo-janitor release-volumes " + name + " --confirm-data-loss=" + l.dead.ID

	out, _, err := kubectl(t, alice, "", "release-volumes", name)
	t.Log("release-volumes " + name + ":\n" + out)
	g.Expect(versions(t, objs...)).To(Equal(before), "without --confirm-data-loss no PVC or PV is written")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(And(
		ContainSubstring(fmt.Sprintf("ForeignCluster %s (cluster ID %s): 2 volumes pinned to it", name, l.dead.ID)),
		ContainSubstring(fmt.Sprintf("PVC %s/data-web-0 (uid %s) on PV pvc-%s (Delete), StatefulSet web, pods: web-0 (Pending), data there: %s/data-web-0",
			l.ns, web.UID, web.UID, remoteNS)),
		ContainSubstring("would be deleted and left to StatefulSet web"),
		ContainSubstring(fmt.Sprintf("PVC %s/scratch (uid %s) on PV pvc-%s (Delete), pods: none, data there: %s/scratch", l.ns, scratch.UID, scratch.UID, remoteNS)),
		ContainSubstring("would be deleted and re-created"),
		ContainSubstring("Nothing was changed. To release them, abandoning their data on "+l.dead.ID+", run:\n  "+command+"\n")))

	out, stderr, err := kubectl(t, alice, "", "release-volumes", name, "--confirm-data-loss=provider-typo")
	g.Expect(versions(t, objs...)).To(Equal(before), "with a wrong --confirm-data-loss no PVC or PV is written")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("data-web-0"), "the plan is shown")
	g.Expect(stderr).To(Equal("error: --confirm-data-loss=provider-typo is not the cluster ID of ForeignCluster " + name + ": nothing was changed\n" +
		"To release the volumes above, abandoning their data there, run:\n  " + command + "\n"))

	_, stderr, err = kubectl(t, bob, "", "release-volumes", name, "--confirm-data-loss="+l.dead.ID)
	g.Expect(versions(t, objs...)).To(Equal(before), "without the break-glass verb the record needs, no PVC or PV is written")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring("you do not hold the break-glass verb mark-unreachable on ForeignCluster " + name +
		", which recording a release needs (gate rule 32): nothing was changed"))

	out, _, err = kubectl(t, alice, "", "release-volumes", name, "-o", "json")
	g.Expect(err).NotTo(HaveOccurred())
	var report volumes.Report
	g.Expect(json.Unmarshal([]byte(out), &report)).To(Succeed())
	g.Expect(report.Plan.Command).To(Equal(command))
	g.Expect(report.Plan.Volumes).To(HaveLen(2))
	g.Expect(report.Result).To(BeNil())
	g.Expect(versions(t, objs...)).To(Equal(before), "no PVC or PV was written")
}

// testReleaseStatefulSetAndDeployment: with the cluster ID typed, a StatefulSet's PVC is deleted and its
// controller creates a new one for its Pending pod (new UID, unbound); a Deployment's PVC, once its pod on
// the dead node is gone (the test plays the janitor's pod rule while the release waits), is re-created
// with its labels and spec, unbound, without the controllers' annotations; both PVs are left Released,
// and the release is recorded on the ForeignCluster with where the data is.
func testReleaseStatefulSetAndDeployment(t *testing.T) {
	testEnv := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	l := pinned(t)
	web := l.claim("data-web-0", l.dead.Node.Name, l.dead.ID, nil, nil)
	pending := l.statefulSet("web", web)
	l.claim("db", l.dead.Node.Name, l.dead.ID, map[string]string{"app": "db"},
		map[string]string{"liqo.io/remote-storage-class": "fast", "example.io/note": "the operator's"})
	db, err := getPVC(t, l.ns, "db") // as the binder left it
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(db.Annotations).To(HaveKey("pv.kubernetes.io/bind-completed"), "the binder's annotations are there to be dropped")
	onDead := l.pod("db-0", "db", l.dead.Node.Name)
	earlier := liqojanitor.VolumesReleased{At: "2026-12-06T10:00:00Z", By: alice,
		Volumes: []liqojanitor.ReleasedVolume{{PVC: l.ns + "/earlier", UID: "uid-of-an-earlier-release"}}}.String()
	g.Expect(fixture.Annotate(ctx, testEnv.Client, l.dead.ForeignCluster,
		map[string]*string{liqojanitor.VolumesReleasedAnnotation: &earlier})).To(Succeed(), "an earlier release's record")

	var out syncBuffer
	done := make(chan error, 1)
	cmd := newRootCommand(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &out})
	cmd.SetArgs([]string{"--kubeconfig", testEnv.KubeconfigPath, "--as", alice, "release-volumes", l.dead.ForeignCluster.Name,
		"--confirm-data-loss=" + l.dead.ID, "--timeout=1m"})
	go func() { done <- run(ctx, cmd) }()
	g.Eventually(out.String).WithTimeout(30*time.Second).Should(ContainSubstring("waiting for pod "+l.ns+"/db-0"), "the release waits for the pod")
	g.Expect(getPVC(t, l.ns, "db")).To(HaveField("DeletionTimestamp", BeNil()), "not deleted while its pod is there")
	g.Expect(testEnv.Client.Delete(ctx, onDead, client.GracePeriodSeconds(0))).To(Succeed(), "the janitor's pod rule")
	g.Eventually(done).WithTimeout(time.Minute).Should(Receive(BeNil()))
	t.Log("release-volumes --confirm-data-loss:\n" + out.String())
	g.Expect(out.String()).To(And(ContainSubstring("Released 2 volumes, skipped 0."),
		ContainSubstring("data abandoned on "+l.dead.ID+" in "+remoteNS+"/db")))

	// the StatefulSet's: its controller creates a new claim for its Pending pod once it syncs the pod,
	// which the scheduler's update of the pod's condition triggers (the test plays the scheduler)
	g.Expect(testEnv.Client.Status().Patch(ctx, pending, client.RawPatch(types.StrategicMergePatchType, fmt.Appendf(nil,
		`{"status":{"conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"persistentvolumeclaim \"%s\" not found"}]}}`,
		web.Name)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		pvc, err := getPVC(t, l.ns, "data-web-0")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pvc.UID).NotTo(Equal(web.UID))
		g.Expect(pvc.Spec.VolumeName).To(BeEmpty())
		g.Expect(pvc.Labels).To(HaveKeyWithValue("app", "web"), "the StatefulSet controller's (its selector's labels), not a copy of the old")
	}).WithTimeout(30*time.Second).Should(Succeed(), "the StatefulSet controller created a new claim")

	// the Deployment's: re-created with its labels and spec, unbound, keeping only Liqo's remote overrides
	renewed, err := getPVC(t, l.ns, "db")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(renewed.UID).NotTo(Equal(db.UID))
	g.Expect(renewed.Labels).To(Equal(db.Labels))
	want := db.Spec.DeepCopy()
	want.VolumeName = ""
	g.Expect(renewed.Spec).To(Equal(*want))
	g.Expect(renewed.Annotations).To(Equal(map[string]string{"liqo.io/remote-storage-class": "fast"}))

	// the PVs are Liqo's provisioner's: left, Released, their finalizers kept
	for _, pvc := range []*corev1.PersistentVolumeClaim{web, db} {
		pv := &corev1.PersistentVolume{}
		g.Expect(testEnv.Client.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv)).To(Succeed())
		g.Expect(pv.DeletionTimestamp).To(BeNil())
		g.Expect(pv.Finalizers).To(ContainElement("kubernetes.io/pv-protection"))
		g.Expect(pv.Status.Phase).To(Equal(corev1.VolumeReleased))
		g.Expect(out.String()).To(ContainSubstring("PV " + pv.Name + " still there: Released"))
	}
	rec, ok := liqojanitor.ParseVolumesReleased(annotations(t, l.dead)[liqojanitor.VolumesReleasedAnnotation])
	g.Expect(ok).To(BeTrue())
	g.Expect(rec.Volumes).To(ConsistOf(
		liqojanitor.ReleasedVolume{PVC: l.ns + "/earlier", UID: "uid-of-an-earlier-release"},
		liqojanitor.ReleasedVolume{PVC: l.ns + "/data-web-0", UID: string(web.UID), Remote: remoteNS + "/data-web-0"},
		liqojanitor.ReleasedVolume{PVC: l.ns + "/db", UID: string(db.UID), Remote: remoteNS + "/db"}))
	g.Expect(rec.By).NotTo(BeEmpty())
}

// testReleaseUIDPrecondition: a PVC deleted and created again under the same name between the plan and
// the delete (the seam runs just before it) is not deleted: the delete carries the planned UID.
func testReleaseUIDPrecondition(t *testing.T) {
	testEnv := harness.Require(t)
	g := NewWithT(t)
	l := pinned(t)
	old := l.claim("scratch", l.dead.Node.Name, l.dead.ID, nil, nil)
	var successor *corev1.PersistentVolumeClaim
	out, err := releaseWith(t, l.dead.ForeignCluster.Name, l.dead.ID, func(o *volumes.Options) {
		o.BeforeDelete = func(ctx context.Context, v liqojanitor.PinnedVolume) {
			g.Expect(testEnv.Client.Delete(ctx, old.DeepCopy())).To(Succeed())
			g.Eventually(func() error { _, err := getPVC(t, l.ns, "scratch"); return err }).WithTimeout(30 * time.Second).
				Should(Satisfy(apierrors.IsNotFound))
			successor = &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: l.ns, Name: v.Name}, Spec: old.Spec}
			successor.Spec.VolumeName = ""
			g.Expect(testEnv.Client.Create(ctx, successor)).To(Succeed())
		}
	})
	t.Log(out)
	g.Expect(err).To(MatchError(ContainSubstring("1 of 1 volumes not released")))
	g.Expect(out).To(ContainSubstring("skipped: re-created between the plan and the delete (the UID precondition failed): left alone"))
	now, err := getPVC(t, l.ns, "scratch")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(now.UID).To(Equal(successor.UID))
	g.Expect(now.DeletionTimestamp).To(BeNil(), "the new claim is left alone")
	g.Expect(annotations(t, l.dead)).NotTo(HaveKey(liqojanitor.VolumesReleasedAnnotation), "nothing released, nothing recorded")
}

// testReleaseHeldByAForeignFinalizer: a pod on the dead cluster's virtual node that does not go (a
// finalizer nobody removes) is named with its finalizers once --timeout ends, and its PVC is not deleted.
func testReleaseHeldByAForeignFinalizer(t *testing.T) {
	testEnv := harness.Require(t)
	g := NewWithT(t)
	l := pinned(t)
	held := l.claim("held", l.dead.Node.Name, l.dead.ID, nil, nil)
	pod := l.pod("held-0", "held", l.dead.Node.Name, "example.io/hold")
	g.Expect(testEnv.Client.Delete(t.Context(), pod, client.GracePeriodSeconds(0))).To(Succeed(), "the janitor's pod rule asks")
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: held.Spec.VolumeName}}
	before := versions(t, pv) // the claim's Unused condition follows its pod's deletion: its own state is asserted below
	out, _, err := kubectl(t, alice, "", "release-volumes", l.dead.ForeignCluster.Name, "--confirm-data-loss="+l.dead.ID, "--timeout=2s")
	t.Log(out)
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("skipped PVC " + l.ns + "/held (uid " + string(held.UID) + "): still used on " + l.dead.ID +
		" after 2s, never forced: pod held-0 on node " + l.dead.Node.Name + ": being deleted, finalizers example.io/hold; data still on " +
		l.dead.ID + " in " + remoteNS + "/held"))
	g.Expect(getPVC(t, l.ns, held.Name)).To(And(HaveField("UID", held.UID), HaveField("DeletionTimestamp", BeNil())), "the PVC is not deleted")
	g.Expect(versions(t, pv)).To(Equal(before), "its PV is untouched")
	g.Expect(testEnv.Client.Get(t.Context(), client.ObjectKeyFromObject(pod), pod)).To(Succeed())
	g.Expect(pod.Finalizers).To(Equal([]string{"example.io/hold"}), "never forced")
}

// testReleaseRefusesAPodElsewhere: a PVC a pod bound to a node that is not one of the dead cluster's uses
// is refused, and not written.
func testReleaseRefusesAPodElsewhere(t *testing.T) {
	g := NewWithT(t)
	l := pinned(t)
	used := l.claim("used", l.dead.Node.Name, l.dead.ID, nil, nil)
	l.pod("used-0", "used", l.live.Node.Name)
	before := versions(t, objects(used)...)
	out, _, err := kubectl(t, alice, "", "release-volumes", l.dead.ForeignCluster.Name, "--confirm-data-loss="+l.dead.ID)
	t.Log(out)
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("skipped: used by pod used-0 (on node " + l.live.Node.Name + "), bound to a node that is not one of " +
		l.dead.ID + "'s virtual nodes: refused"))
	g.Expect(versions(t, objects(used)...)).To(Equal(before))
}

// testReleaseOnlyFromADeadCluster: nothing is released from a cluster not marked dead, nor from a dead one
// whose return the janitor recorded and nobody fenced; and the cluster is re-read before each volume: a
// return recorded while the first volume is released stops the second.
func testReleaseOnlyFromADeadCluster(t *testing.T) {
	g := NewWithT(t)
	l := pinned(t)
	onLive := l.claim("on-live", l.live.Node.Name, l.live.ID, nil, nil)
	first := l.claim("a-first", l.dead.Node.Name, l.dead.ID, nil, nil)
	second := l.claim("b-second", l.dead.Node.Name, l.dead.ID, nil, nil)
	liveBefore := versions(t, objects(onLive)...)
	_, stderr, err := kubectl(t, alice, "", "release-volumes", l.live.ForeignCluster.Name, "--confirm-data-loss="+l.live.ID)
	g.Expect(versions(t, objects(onLive)...)).To(Equal(liveBefore), "nothing is released from a cluster not marked dead")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring("is not marked permanently unreachable and confirmed"))

	out, err := releaseWith(t, l.dead.ForeignCluster.Name, l.dead.ID, func(o *volumes.Options) {
		o.BeforeDelete = func(_ context.Context, v liqojanitor.PinnedVolume) {
			if v.Name == first.Name {
				recordReturn(t, l.dead)
			}
		}
	})
	t.Log(out)
	g.Expect(err).To(MatchError(ContainSubstring("1 of 2 volumes not released")))
	g.Expect(out).To(ContainSubstring("skipped: the provider of ForeignCluster " + l.dead.ForeignCluster.Name + " answered again after the mark"))
	g.Expect(getPVC(t, l.ns, first.Name)).NotTo(HaveField("UID", first.UID), "the first was released")
	g.Expect(getPVC(t, l.ns, second.Name)).To(And(HaveField("UID", second.UID), HaveField("DeletionTimestamp", BeNil())), "the second was not")

	secondBefore := versions(t, objects(second)...)
	_, stderr, err = kubectl(t, alice, "", "release-volumes", l.dead.ForeignCluster.Name, "--confirm-data-loss="+l.dead.ID)
	g.Expect(versions(t, objects(second)...)).To(Equal(secondBefore), "nothing is released while the return is not fenced")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring("no fence of that return is recorded"))
	g.Expect(stderr).To(ContainSubstring("kubectl liqo-janitor fence " + l.dead.ForeignCluster.Name))
}

// recordReturn records, as the janitor's identity, a return of p's provider now (its cleanup annotation).
func recordReturn(t *testing.T, p *fixture.Provider) {
	t.Helper()
	record := liqojanitor.ReturnRecord{At: time.Now(), How: "Liqo's APIServerStatus turned Established"}.String()
	NewWithT(t).Expect(fixture.Annotate(context.Background(), asJanitor(t), p.ForeignCluster,
		map[string]*string{liqojanitor.CleanupAnnotation: &record})).To(Succeed(), "the janitor's identity records the return")
}

// testReleaseReturnDuringTheWait: the cluster is re-read just before the delete, after the wait for the
// pods: a return recorded while the release waited for its pod to go stops it, the PVC not deleted.
func testReleaseReturnDuringTheWait(t *testing.T) {
	testEnv := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	l := pinned(t)
	waited := l.claim("waited", l.dead.Node.Name, l.dead.ID, nil, nil)
	pod := l.pod("waited-0", "waited", l.dead.Node.Name)
	var out syncBuffer
	done := make(chan error, 1)
	cmd := newRootCommand(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &out})
	cmd.SetArgs([]string{"--kubeconfig", testEnv.KubeconfigPath, "--as", alice, "release-volumes", l.dead.ForeignCluster.Name,
		"--confirm-data-loss=" + l.dead.ID, "--timeout=1m"})
	go func() { done <- run(ctx, cmd) }()
	g.Eventually(out.String).WithTimeout(30 * time.Second).Should(ContainSubstring("waiting for pod " + l.ns + "/waited-0"))
	recordReturn(t, l.dead)
	g.Expect(testEnv.Client.Delete(ctx, pod, client.GracePeriodSeconds(0))).To(Succeed(), "the janitor's pod rule")
	g.Eventually(done).WithTimeout(time.Minute).Should(Receive(HaveOccurred()))
	t.Log(out.String())
	g.Expect(getPVC(t, l.ns, waited.Name)).To(And(HaveField("UID", waited.UID), HaveField("DeletionTimestamp", BeNil())), "not deleted")
	g.Expect(out.String()).To(ContainSubstring("skipped: the provider of ForeignCluster " + l.dead.ForeignCluster.Name + " answered again after the mark"))
}
