package harness_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// The Kubernetes controllers a claim's binding and release need (kube-controller-manager --controllers
// names), and the finalizers the API server's StorageObjectInUseProtection admission puts on a claim and a
// volume, which the two protection controllers remove once nothing uses them.
var volumeControllers = []string{"persistentvolume-binder-controller", "persistentvolume-protection-controller",
	"persistentvolumeclaim-protection-controller"}

const (
	pvcProtectionFinalizer = "kubernetes.io/pvc-protection"
	pvProtectionFinalizer  = "kubernetes.io/pv-protection"
)

// TestLiqoDeletesThePlaceholderOfAReleasedClaim runs Liqo's real controller manager with its storage on
// (--enable-storage, as its chart runs it with storage.enabled) on a consumer whose claim of Liqo's virtual
// storage class is bound to a placeholder volume shaped as a virtual kubelet makes it for a provider, and
// shows what deleting the claim does when the provider is dead (none runs here: nothing asks it): Kubernetes' binder
// turns the volume Released and leaves it there, however long (its reclaim policy is Delete, but its
// provisioner is liqo.io/storage, an external one); Liqo's provisioner, once running, deletes it (its Delete
// finds no real claim in its storage namespace and returns nil, so sig-storage-lib-external-provisioner
// deletes the volume). While Liqo runs, it puts no finalizer on a placeholder or its claim.
func TestLiqoDeletesThePlaceholderOfAReleasedClaim(t *testing.T) {
	harness.Require(t) // skips in the unit lane
	g := NewWithT(t)
	ctx := t.Context()
	env, err := harness.Start(harness.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping the API server: %v", err)
		}
	})
	// The binder resyncs every second, so that the bounded wait below spans many of its passes.
	kcmLog, err := env.StartControllers(volumeControllers, "--pvclaimbinder-sync-period=1s")
	g.Expect(err).NotTo(HaveOccurred())
	const liqoNS = "liqo"
	g.Expect(env.InstallLocalClusterID(ctx, liqoNS, "consumer")).To(Succeed())
	// Liqo's virtual storage class (deployments/liqo/templates/liqo-storage-class.yaml, v1.0.3 to v1.2.0):
	// no reclaimPolicy, so the API server's default, Delete.
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "liqo"}, Provisioner: liqojanitor.LiqoStorageProvisioner,
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)}
	g.Expect(env.Client.Create(ctx, class)).To(Succeed())
	g.Expect(class.ReclaimPolicy).To(HaveValue(Equal(corev1.PersistentVolumeReclaimDelete)))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "shop-"}}
	g.Expect(env.Client.Create(ctx, ns)).To(Succeed())

	pvc, pv := bindPlaceholder(t, env, class, ns.Name, "data-web-0")
	g.Expect(env.Client.Delete(ctx, pvc, client.Preconditions{UID: &pvc.UID})).To(Succeed())
	g.Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(pvc), &corev1.PersistentVolumeClaim{})
	}).WithTimeout(30*time.Second).Should(Satisfy(apierrors.IsNotFound), "pvc-protection lets the unused claim go")
	released := func() (corev1.PersistentVolumePhase, error) {
		got := &corev1.PersistentVolume{}
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(pv), got)
		return got.Status.Phase, err
	}
	g.Eventually(released).WithTimeout(30*time.Second).Should(Equal(corev1.VolumeReleased), "the binder releases the volume")
	g.Consistently(released).WithTimeout(5*time.Second).Should(Equal(corev1.VolumeReleased),
		"without Liqo's provisioner nothing deletes a placeholder: Kubernetes' binder leaves an external provisioner's volume to it")

	cm, err := env.StartLiqoControllerManager(ctx, liqoNS, "--enable-storage=true")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { // before Stop
		if t.Failed() {
			env.KeepFiles()
			t.Logf("logs kept: Liqo's controller manager %s, kube-controller-manager %s", cm.Log, kcmLog)
		}
	})
	g.Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(pv), &corev1.PersistentVolume{})
	}).WithTimeout(30*time.Second).Should(Satisfy(apierrors.IsNotFound), "Liqo's provisioner deletes the released placeholder")
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "liqo-storage"}, &corev1.Namespace{})).To(Succeed(),
		"Liqo's provisioner made its storage namespace (--storage-namespace): storage is on")

	// A placeholder bound while Liqo runs: Liqo adds no finalizer to it or to its claim, and deletes it
	// the same way once its claim is gone.
	pvc, pv = bindPlaceholder(t, env, class, ns.Name, "data-web-1")
	finalizers := func() ([]string, error) {
		gotPVC, gotPV := &corev1.PersistentVolumeClaim{}, &corev1.PersistentVolume{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pvc), gotPVC); err != nil {
			return nil, err
		}
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(pv), gotPV)
		return append(gotPVC.Finalizers, gotPV.Finalizers...), err
	}
	g.Consistently(finalizers).WithTimeout(3*time.Second).Should(ConsistOf(pvcProtectionFinalizer, pvProtectionFinalizer),
		"only Kubernetes' protection finalizers, none of Liqo's")
	g.Expect(env.Client.Delete(ctx, pvc, client.Preconditions{UID: &pvc.UID})).To(Succeed())
	g.Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(pv), &corev1.PersistentVolume{})
	}).WithTimeout(30*time.Second).Should(Satisfy(apierrors.IsNotFound), "Liqo's provisioner deletes the released placeholder")
}

// bindPlaceholder creates a claim of class in ns and binds it to a placeholder volume as a virtual kubelet
// does for a claim it provisions on its provider (pkg/virtualKubelet/reflection/storage/controller.go
// provisionClaimOperation, storageprovisioner/remoteprovisioner.go ProvisionRemotePVC, v1.0.3 to v1.2.0):
// the volume pvc-<claim UID>, its claimRef the claim's (with its UID), annotated
// pv.kubernetes.io/provisioned-by with the class's provisioner, hostPath /tmp/liqo-placeholder, node
// affinity liqo.io/remote-cluster-id In [provider], the class's reclaim policy; then the claim's volumeName.
// It returns once the binder has bound both.
func bindPlaceholder(t *testing.T, env *harness.Env, class *storagev1.StorageClass, ns, name string) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	size := resource.MustParse("1Gi")
	pvc := &corev1.PersistentVolumeClaim{
		// The scheduler's choice of a virtual node, which is what the virtual kubelet provisions for.
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Annotations: map[string]string{liqojanitor.SelectedNodeAnnotation: "liqo-provider"}},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class.Name,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}}},
	}
	g.Expect(env.Client.Create(ctx, pvc)).To(Succeed())
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: liqojanitor.PlaceholderPVPrefix + string(pvc.UID),
			Annotations: map[string]string{liqojanitor.ProvisionedByAnnotation: class.Provisioner}},
		Spec: corev1.PersistentVolumeSpec{
			StorageClassName: class.Name,
			AccessModes:      pvc.Spec.AccessModes,
			Capacity:         corev1.ResourceList{corev1.ResourceStorage: size},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: liqojanitor.PlaceholderPath}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "liqo.io/remote-cluster-id",
					Operator: corev1.NodeSelectorOpIn, Values: []string{"provider"}}}}}}},
			PersistentVolumeReclaimPolicy: *class.ReclaimPolicy,
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: name,
				UID: pvc.UID, ResourceVersion: pvc.ResourceVersion},
		},
	}
	g.Expect(env.Client.Create(ctx, pv)).To(Succeed())
	patch := client.MergeFrom(pvc.DeepCopy())
	pvc.Spec.VolumeName = pv.Name
	g.Expect(env.Client.Patch(ctx, pvc, patch)).To(Succeed())
	g.Eventually(func() ([]string, error) {
		gotPVC, gotPV := &corev1.PersistentVolumeClaim{}, &corev1.PersistentVolume{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pvc), gotPVC); err != nil {
			return nil, err
		}
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(pv), gotPV)
		return []string{string(gotPVC.Status.Phase), string(gotPV.Status.Phase)}, err
	}).WithTimeout(30*time.Second).Should(Equal([]string{"Bound", "Bound"}), "the binder binds the claim and its placeholder")
	return pvc, pv
}
