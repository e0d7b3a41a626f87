package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/liqotech/liqo/pkg/consts"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/fence"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// consumerID is the consumer's Liqo cluster ID (TestMain's cluster-ID ConfigMap); otherConsumer is a
// second consumer of the same provider, whose objects fence must never touch.
const (
	consumerID    = "consumer"
	otherConsumer = "other-consumer"
)

// providerLane is the second API server of the package, the provider, with kube-controller-manager so
// that the garbage collector deletes the pods of deleted ShadowPods and namespaces really go. Started by
// the first fence test, stopped by TestMain.
var providerLane struct {
	once sync.Once
	env  *harness.Env
	err  error
}

func providerEnv(t *testing.T) *harness.Env {
	t.Helper()
	harness.Require(t) // skips in the unit lane; the consumer first
	providerLane.once.Do(func() {
		providerLane.env, providerLane.err = harness.Start(harness.Options{ControllerManager: true})
		if providerLane.err == nil {
			providerLane.err = providerLane.env.InstallLocalClusterID(context.Background(), liqojanitor.DefaultLiqoNamespace, "unset")
		}
	})
	if providerLane.err != nil {
		t.Fatalf("starting the provider: %v", providerLane.err)
	}
	return providerLane.env
}

func stopProvider() {
	if providerLane.env != nil {
		if err := providerLane.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the provider:", err)
		}
	}
}

// setProviderID makes the provider's Liqo cluster-ID ConfigMap say id.
func setProviderID(t *testing.T, prov *harness.Env, id string) {
	t.Helper()
	cm := harness.ClusterIDConfigMap(liqojanitor.DefaultLiqoNamespace, id)
	patch, err := json.Marshal(map[string]any{"data": cm.Data})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(prov.Client.Patch(t.Context(), cm, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
}

// kubectlFence runs `kubectl liqo-janitor fence` as the consumer's admin with stdin.
func kubectlFence(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	testEnv := harness.Require(t)
	var out, errOut bytes.Buffer
	cmd := newRootCommand(genericiooptions.IOStreams{In: bytes.NewBufferString(stdin), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append([]string{"--kubeconfig", testEnv.KubeconfigPath, "fence"}, args...))
	err = run(t.Context(), cmd)
	return out.String(), errOut.String(), err
}

// returned lays out a consumer whose marked provider answers again: a marked ForeignCluster on the
// consumer with the janitor's record of the return (the gate takes a fence record only for a recorded
// return: gate rule 15), the janitor's kept record of the provider for the mark (its API server and CA:
// the provider lane's), Liqo's control-plane Identity naming the identity Secret, and the provider's
// cluster-ID ConfigMap naming it.
func returned(t *testing.T) (dead, live *fixture.Provider, prov *harness.Env) {
	t.Helper()
	prov = providerEnv(t)
	dead, live = deadAndLive(t)
	_, _, err := kubectl(t, alice, "", "mark", dead.ForeignCluster.Name, "--reason", "data centre flooded", "--yes")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	recordReturn(t, dead)
	keepRecord(t, janitorNamespace(t), dead, providerTargets(prov))
	identityNaming(t, dead, dead.IdentitySecret.Name)
	setProviderID(t, prov, dead.ID)
	return dead, live, prov
}

// providerTargets are the provider lane's API server and CA, as the janitor keeps them.
func providerTargets(prov *harness.Env) liqojanitor.Targets {
	return liqojanitor.Targets{APIServer: prov.Config.Host, CA: prov.Config.CAData}
}

// identityNaming creates, in p's tenant namespace, Liqo's ControlPlane Identity of p's cluster, whose
// status names Secret secret as the identity controller does (status.kubeconfigSecretRef).
func identityNaming(t *testing.T, p *fixture.Provider, secret string) *authv1beta1.Identity {
	t.Helper()
	c := harness.Require(t).Client
	g := NewWithT(t)
	id := &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Name: "controlplane-" + p.ID, Namespace: p.TenantNS,
		Labels: map[string]string{liqojanitor.RemoteClusterIDLabel: p.ID}},
		Spec: authv1beta1.IdentitySpec{ClusterID: liqov1beta1.ClusterID(p.ID), Type: authv1beta1.ControlPlaneIdentityType}}
	g.Expect(c.Create(t.Context(), id)).To(Succeed())
	id.Status.KubeconfigSecretRef = &corev1.LocalObjectReference{Name: secret}
	g.Expect(c.Status().Update(t.Context(), id)).To(Succeed())
	return id
}

// world is what a test lays out on the provider: mine is what fence must remove, kept what it must not
// touch.
type world struct {
	mine []client.Object
	kept []client.Object
}

func (w *world) create(t *testing.T, c client.Client, obj client.Object, mine bool) {
	t.Helper()
	NewWithT(t).Expect(c.Create(t.Context(), obj)).To(Succeed(), "creating %T %s", obj, obj.GetName())
	w.add(obj, mine)
}

// add counts obj among the objects fence must delete (mine) or keep.
func (w *world) add(obj client.Object, mine bool) {
	if mine {
		w.mine = append(w.mine, obj)
	} else {
		w.kept = append(w.kept, obj)
	}
}

func namespace(name string, annotations map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}}
}

// shadowPod creates a ShadowPod reflected from origin to destination and the pod Liqo's shadowpod
// controller would make of it (fixture.ShadowPod).
func (w *world) shadowPod(t *testing.T, c client.Client, ns, name, origin, destination string, mine bool) {
	t.Helper()
	objs, err := fixture.ShadowPod(t.Context(), c, ns, name, origin, destination)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for _, obj := range objs {
		w.add(obj, mine)
	}
}

// sameNamespaces lays out, in two namespaces: this consumer's ShadowPods (2 and 1) with their pods, the
// other consumer's in both, one of this consumer's for another provider, and a pod of nobody's.
func sameNamespaces(t *testing.T, prov *harness.Env, providerID string) (w *world, nsA, nsB string) {
	t.Helper()
	w = &world{}
	c := prov.Client
	nsA, nsB = prov.Namespace(t), prov.Namespace(t)
	w.shadowPod(t, c, nsA, "web-0", consumerID, providerID, true)
	w.shadowPod(t, c, nsA, "web-1", consumerID, providerID, true)
	w.shadowPod(t, c, nsB, "db-0", consumerID, providerID, true)
	w.shadowPod(t, c, nsA, "theirs", otherConsumer, providerID, false)
	w.shadowPod(t, c, nsB, "theirs", otherConsumer, providerID, false)
	w.shadowPod(t, c, nsA, "elsewhere", consumerID, "another-provider", false)
	w.create(t, c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: nsA},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}, false)
	return w, nsA, nsB
}

func providerRVs(t *testing.T, prov *harness.Env, objs []client.Object) map[string]string {
	t.Helper()
	return fixture.ResourceVersionsOf(t, prov.Client, objs...)
}

func allGone(t *testing.T, prov *harness.Env, objs []client.Object) func() []string {
	t.Helper()
	return func() []string {
		var left []string
		for k, v := range providerRVs(t, prov, objs) {
			if v != "<gone>" {
				left = append(left, k)
			}
		}
		return left
	}
}

func TestFenceStopsOnlyThisConsumersShadowPods(t *testing.T) {
	g := NewWithT(t)
	dead, live, prov := returned(t)
	w, nsA, nsB := sameNamespaces(t, prov, dead.ID)
	id := dead.ForeignCluster.Name
	consumerBefore, providerBefore := rvs(t, dead, live), providerRVs(t, prov, append(w.mine, w.kept...))
	kubeconfig := []string{"--provider-kubeconfig", prov.KubeconfigPath}

	out, _, err := kubectlFence(t, "", append([]string{id, "--dry-run"}, kubeconfig...)...)
	g.Expect(err).NotTo(HaveOccurred())
	t.Log("fence --dry-run:\n" + out)
	g.Expect(out).To(MatchRegexp(`(?m)^%s\s+2\s+2$`, nsA))
	g.Expect(out).To(MatchRegexp(`(?m)^%s\s+1\s+1$`, nsB))
	g.Expect(out).To(ContainSubstring("Its Liqo cluster ID there: " + dead.ID + " (ConfigMap liqo/liqo-clusterid-configmap there)"))
	g.Expect(out).To(ContainSubstring("Verified: its certificate verifies against the CA liqo-janitor kept for this mark with " + prov.Config.Host +
		" (kept at "))
	g.Expect(out).To(ContainSubstring("ConfigMap " + janitorNamespace(t) + "/liqo-janitor-records)"))
	g.Expect(out).To(ContainSubstring("Dry run: nothing was deleted"))

	out, _, err = kubectlFence(t, "", append([]string{id, "--dry-run", "-o", "json"}, kubeconfig...)...)
	g.Expect(err).NotTo(HaveOccurred())
	var report fence.Report
	g.Expect(json.Unmarshal([]byte(out), &report)).To(Succeed())
	g.Expect(report.Plan.Namespaces).To(ConsistOf(fence.PlannedNamespace{Namespace: nsA, ShadowPods: 2, Pods: 2},
		fence.PlannedNamespace{Namespace: nsB, ShadowPods: 1, Pods: 1}))
	g.Expect(report.Plan.LocalClusterID).To(Equal(consumerID))
	g.Expect(report.Plan.Kept).To(And(HaveField("APIServer", prov.Config.Host), HaveField("ConfigMap", janitorNamespace(t)+"/liqo-janitor-records")))

	_, stderr, err := kubectlFence(t, consumerID+"\n", append([]string{id}, kubeconfig...)...)
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring(fmt.Sprintf("you typed %q, not the provider's cluster ID %q (that is this consumer's own: type the provider's)",
		consumerID, dead.ID)))
	g.Expect(stderr).To(ContainSubstring("nothing was deleted or written"))
	g.Expect(providerRVs(t, prov, append(w.mine, w.kept...))).To(Equal(providerBefore), "a dry run and a wrong ID write nothing on the provider")
	g.Expect(rvs(t, dead, live)).To(Equal(consumerBefore), "nor on the consumer")

	out, _, err = kubectlFence(t, dead.ID+"\n", append([]string{id, "--timeout", "2m"}, kubeconfig...)...)
	g.Expect(err).NotTo(HaveOccurred())
	t.Log("fence:\n" + out)
	g.Expect(out).To(ContainSubstring("Type the PROVIDER's cluster ID, as read there (" + dead.ID + ", ConfigMap liqo/liqo-clusterid-configmap)"))
	g.Expect(out).To(ContainSubstring(fmt.Sprintf("namespace %s: shadowpods 2 deleted, pods 2 → 0 left", nsA)))
	g.Expect(out).To(ContainSubstring(fmt.Sprintf("namespace %s: shadowpods 1 deleted, pods 1 → 0 left", nsB)))
	g.Expect(allGone(t, prov, w.mine)()).To(BeEmpty(), "this consumer's ShadowPods and their pods are gone")
	for _, obj := range w.kept {
		key := fmt.Sprintf("%T %s", obj, client.ObjectKeyFromObject(obj))
		g.Expect(providerRVs(t, prov, []client.Object{obj})).To(HaveKeyWithValue(key, providerBefore[key]), "untouched")
	}
	record := annotations(t, dead)[liqojanitor.FencedAnnotation]
	rec, ok := liqojanitor.ParseFenceRecord(record)
	g.Expect(ok && rec.By != "").To(BeTrue(), "the fenced record %q", record)
	g.Expect(rec.At).To(BeTemporally("~", time.Now(), time.Minute))
	g.Expect(rec.Counts).To(Equal("shadowpods 3, pods 3"))
	for k, v := range rvs(t, live) {
		g.Expect(consumerBefore).To(HaveKeyWithValue(k, v), "nothing of the live provider")
	}
}

func TestFenceRefusesAClusterThatIsNotTheMarkedProvider(t *testing.T) {
	g := NewWithT(t)
	testEnv := harness.Require(t)
	dead, live, prov := returned(t)
	w, _, _ := sameNamespaces(t, prov, dead.ID)
	before := providerRVs(t, prov, append(w.mine, w.kept...))

	_, stderr, err := kubectlFence(t, "", live.ForeignCluster.Name, "--provider-kubeconfig", prov.KubeconfigPath, "--yes")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring("is not marked permanently unreachable"))
	g.Expect(stderr).To(ContainSubstring("kubectl liqo-janitor mark " + live.ForeignCluster.Name))

	_, stderr, err = kubectlFence(t, "", dead.ID, "--provider-kubeconfig", testEnv.KubeconfigPath, "--yes")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring("--provider-kubeconfig " + testEnv.KubeconfigPath + " reaches " + strings.TrimSuffix(testEnv.Config.Host, "/") +
		", not the provider's API server liqo-janitor kept for this mark"))
	// Even where the kept record named this consumer's own API server, fence would not act on it.
	keepRecord(t, janitorNamespace(t), dead, liqojanitor.Targets{APIServer: testEnv.Config.Host, CA: testEnv.Config.CAData})
	_, stderr, err = kubectlFence(t, "", dead.ID, "--provider-kubeconfig", testEnv.KubeconfigPath, "--yes")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring("reaches this cluster itself, not the provider: namespace kube-system has the same UID"))
	keepRecord(t, janitorNamespace(t), dead, providerTargets(prov))

	setProviderID(t, prov, "somebody-else")
	_, stderr, err = kubectlFence(t, "", dead.ID, "--provider-kubeconfig", prov.KubeconfigPath, "--yes")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring("wrong provider: --provider-kubeconfig " + prov.KubeconfigPath + " reaches the Liqo cluster somebody-else (ConfigMap liqo/liqo-clusterid-configmap there), not " + dead.ID))

	setProviderID(t, prov, consumerID)
	_, stderr, err = kubectlFence(t, "", dead.ID, "--provider-kubeconfig", prov.KubeconfigPath, "--yes")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring("this consumer's own"))

	g.Expect(providerRVs(t, prov, append(w.mine, w.kept...))).To(Equal(before), "nothing was deleted")
	g.Expect(annotations(t, dead)).NotTo(HaveKey(liqojanitor.FencedAnnotation))
}

// copyOf is a copy the crdReplicator of origin made in a tenant namespace of the provider
// (mutateLabelsForRemote).
func copyOf(origin string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Labels: map[string]string{consts.ReplicationRequestedLabel: "false", consts.ReplicationStatusLabel: "true",
		consts.ReplicationOriginLabel: origin, consts.RemoteClusterID: origin}}
}

func tenantNamespace(name, consumer string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{consts.TenantNamespaceLabel: "true", consts.RemoteClusterID: consumer}}}
}

// dropTenantNamespace, at the end of the test, unlabels and deletes a tenant namespace of the provider, so
// that no later fence --all lists it while the namespace controller empties it.
func dropTenantNamespace(t *testing.T, c client.Client, name string) {
	t.Helper()
	t.Cleanup(func() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		patch := []byte(`{"metadata":{"labels":{"` + consts.TenantNamespaceLabel + `":null,"` + consts.RemoteClusterID + `":null}}}`)
		if err := c.Patch(context.Background(), ns, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Errorf("unlabelling tenant namespace %s: %v", name, err)
		}
		_ = c.Delete(context.Background(), ns)
	})
}

// namespaceMapFinalizer is the finalizer Liqo's namespacemap controller puts on a NamespaceMap and removes
// once it deleted the map's remote namespaces (namespacemap-controller/finalizer.go,
// RemoveNamespaceMapControllerFinalizer; v1.0.3, v1.1.0 and v1.2.0).
const namespaceMapFinalizer = "namespacemap-controller.liqo.io/finalizer"

// fakeNamespaceMapController does on the provider what Liqo's namespacemap controller does when a
// NamespaceMap copy is deleted (NamespaceMapDeletionProcess): it deletes the namespaces annotated as
// managed by it and, once they are gone, removes its finalizer.
func fakeNamespaceMapController(t *testing.T, c client.Client, nm *offloadingv1beta1.NamespaceMap) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	key := nm.Namespace + "/" + nm.Name
	go func() {
		defer close(done)
		_ = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			fresh := &offloadingv1beta1.NamespaceMap{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(nm), fresh); err != nil || fresh.DeletionTimestamp == nil {
				return apierrors.IsNotFound(err), nil
			}
			var nss corev1.NamespaceList
			if err := c.List(ctx, &nss); err != nil {
				return false, nil //nolint:nilerr // poll again, as a controller would retry
			}
			left := 0
			for i := range nss.Items {
				if nss.Items[i].Annotations[consts.RemoteNamespaceManagedByAnnotationKey] == key {
					left++
					_ = c.Delete(ctx, &nss.Items[i])
				}
			}
			if left == 0 {
				patch := fmt.Sprintf(`[{"op":"test","path":"/metadata/finalizers/0","value":%q},{"op":"remove","path":"/metadata/finalizers/0"}]`,
					namespaceMapFinalizer)
				_ = c.Patch(ctx, fresh, client.RawPatch(types.JSONPatchType, []byte(patch)))
			}
			return false, nil
		})
	}()
}

func TestFenceAllRemovesThisConsumersTenantCopiesInLiqosOrder(t *testing.T) {
	g := NewWithT(t)
	dead, _, prov := returned(t)
	c := prov.Client
	w := &world{}
	prefix := strings.ToLower(dead.ID)
	tenant, theirTenant := prefix+"-tenant-"+consumerID, prefix+"-tenant-"+otherConsumer
	w.create(t, c, tenantNamespace(tenant, consumerID), false)
	w.create(t, c, tenantNamespace(theirTenant, otherConsumer), false)
	meta := func(ns, name, origin string, fin ...string) metav1.ObjectMeta {
		m := copyOf(origin)
		m.Namespace, m.Name, m.Finalizers = ns, name, fin
		return m
	}
	nm := &offloadingv1beta1.NamespaceMap{ObjectMeta: meta(tenant, dead.ID, consumerID, namespaceMapFinalizer)}
	w.create(t, c, &authv1beta1.ResourceSlice{ObjectMeta: meta(tenant, dead.ID, consumerID)}, true)
	w.create(t, c, nm, true)
	w.create(t, c, &authv1beta1.Renew{ObjectMeta: meta(tenant, dead.ID, consumerID)}, true)
	w.create(t, c, &authv1beta1.Renew{ObjectMeta: meta(tenant, "theirs", otherConsumer)}, false)
	w.create(t, c, &authv1beta1.ResourceSlice{ObjectMeta: meta(theirTenant, dead.ID, otherConsumer)}, false)
	w.create(t, c, &offloadingv1beta1.NamespaceMap{ObjectMeta: meta(theirTenant, dead.ID, otherConsumer)}, false)
	managed := map[string]string{consts.RemoteNamespaceManagedByAnnotationKey: tenant + "/" + nm.Name}
	remoteA, remoteB, theirs := prefix+"-app-"+consumerID, prefix+"-db-"+consumerID, prefix+"-app-"+otherConsumer
	w.create(t, c, namespace(remoteA, managed), true)
	w.create(t, c, namespace(remoteB, managed), true)
	w.create(t, c, namespace(theirs, map[string]string{consts.RemoteNamespaceManagedByAnnotationKey: theirTenant + "/" + dead.ID}), false)
	w.shadowPod(t, c, remoteA, "web-0", consumerID, dead.ID, true)
	w.shadowPod(t, c, remoteB, "db-0", consumerID, dead.ID, true)
	w.shadowPod(t, c, theirs, "web-0", otherConsumer, dead.ID, false)
	fakeNamespaceMapController(t, c, nm)
	before := providerRVs(t, prov, w.kept)

	out, _, err := kubectlFence(t, "", dead.ID, "--provider-kubeconfig", prov.KubeconfigPath, "--all", "--dry-run")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("--all, tenant namespace " + tenant + " (kept), in Liqo's order:"))
	g.Expect(out).To(MatchRegexp(`(?m)^ResourceSlice\s+1$`))
	g.Expect(out).NotTo(ContainSubstring(theirTenant))
	out, _, err = kubectlFence(t, "", dead.ID, "--provider-kubeconfig", prov.KubeconfigPath, "--all", "--dry-run", "-o", "yaml")
	g.Expect(err).NotTo(HaveOccurred())
	var report fence.Report
	g.Expect(yaml.Unmarshal([]byte(strings.TrimPrefix(out, "---\n")), &report)).To(Succeed())
	g.Expect(report.Plan.TenantNamespaces).To(ConsistOf(fence.PlannedTenant{Namespace: tenant, ResourceSlices: 1, NamespaceMaps: 1, Renews: 1,
		RemoteNamespaces: []string{remoteA, remoteB}}))

	out, _, err = kubectlFence(t, dead.ID+"\n", dead.ID, "--provider-kubeconfig", prov.KubeconfigPath, "--all", "--timeout", "2m")
	g.Expect(err).NotTo(HaveOccurred())
	t.Log("fence --all:\n" + out)
	iRS := strings.Index(out, "tenant namespace "+tenant+": resourceslices 1 deleted, 1 → 0 left")
	iNM := strings.Index(out, "tenant namespace "+tenant+": namespacemaps 1 deleted, 1 → 0 left")
	iNS := strings.Index(out, "(Liqo's namespacemap controller deletes them): namespaces 2 → 0 left")
	iRN := strings.Index(out, "tenant namespace "+tenant+": renews 1 deleted, 1 → 0 left")
	g.Expect([]int{iRS, iNM, iNS, iRN}).To(HaveEach(BeNumerically(">", 0)))
	g.Expect(iRS < iNM && iNS < iRN).To(BeTrue(), "ResourceSlices, then NamespaceMaps and their namespaces, then Renews")
	g.Expect(allGone(t, prov, w.mine)()).To(BeEmpty())
	g.Expect(providerRVs(t, prov, w.kept)).To(Equal(before), "the tenant namespaces, the other consumer's copies and namespaces")
	rec, _ := liqojanitor.ParseFenceRecord(annotations(t, dead)[liqojanitor.FencedAnnotation])
	g.Expect(rec.Counts).To(Equal("shadowpods 2, pods 2, resourceslices 1, namespacemaps 1, renews 1, namespaces 2"))
}

func TestFenceTimesOutSayingWhatIsLeftAndWhy(t *testing.T) {
	g := NewWithT(t)
	dead, _, prov := returned(t)
	w := &world{}
	ns := prov.Namespace(t)
	w.shadowPod(t, prov.Client, ns, "web-0", consumerID, dead.ID, true)
	pod := w.mine[1]
	patch := []byte(`{"metadata":{"finalizers":["` + fixture.ForeignFinalizer + `"]}}`)
	g.Expect(prov.Client.Patch(t.Context(), pod, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
	t.Cleanup(func() {
		_ = prov.Client.Patch(context.Background(), pod, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
	})

	_, stderr, err := kubectlFence(t, "", dead.ID, "--provider-kubeconfig", prov.KubeconfigPath, "--yes", "--timeout", "3s")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring("--timeout 3s expired; still on the provider:"))
	g.Expect(stderr).To(MatchRegexp(`pod %s/web-0: terminating since \S+, waiting for the finalizers %s`, ns, fixture.ForeignFinalizer))
	g.Expect(stderr).To(ContainSubstring("fence removes no finalizers"))
	g.Expect(annotations(t, dead)).NotTo(HaveKey(liqojanitor.FencedAnnotation))
	fresh := &corev1.Pod{}
	g.Expect(prov.Client.Get(t.Context(), client.ObjectKeyFromObject(pod), fresh)).To(Succeed())
	g.Expect(fresh.Finalizers).To(ConsistOf(fixture.ForeignFinalizer), "someone else's finalizer stays")
}

// controlPlaneIdentity makes the consumer's control-plane identity Secret for dead a kubeconfig of the
// provider acting as user, bound in the provider's tenant namespace to Liqo's own remote-controlplane
// ClusterRole, as Liqo's tenant controller binds it.
func controlPlaneIdentity(t *testing.T, dead *fixture.Provider, prov *harness.Env, user, remoteTenant string) {
	t.Helper()
	testEnv := harness.Require(t)
	g := NewWithT(t)
	crds, err := harness.LiqoCRDDir(testEnv.Root)
	g.Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(filepath.Join(crds, "..", "..", "..", "files", "liqo-remote-controlplane-ClusterRole.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	role := &rbacv1.ClusterRole{}
	g.Expect(yaml.Unmarshal(data, role)).To(Succeed())
	role.Name = "liqo-remote-controlplane-" + strings.ToLower(dead.ID)
	g.Expect(prov.Client.Create(t.Context(), role)).To(Succeed())
	g.Expect(prov.Client.Create(t.Context(), tenantNamespace(remoteTenant, consumerID))).To(Succeed())
	dropTenantNamespace(t, prov.Client, remoteTenant)
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "remote-controlplane", Namespace: remoteTenant},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	g.Expect(prov.Client.Create(t.Context(), binding)).To(Succeed())

	cfg, err := clientcmd.LoadFromFile(prov.KubeconfigPath)
	g.Expect(err).NotTo(HaveOccurred())
	for _, a := range cfg.AuthInfos {
		a.Impersonate = user
	}
	kubeconfig, err := clientcmd.Write(*cfg)
	g.Expect(err).NotTo(HaveOccurred())
	secret := dead.IdentitySecret.DeepCopy()
	g.Expect(testEnv.Client.Get(t.Context(), client.ObjectKeyFromObject(secret), secret)).To(Succeed())
	secret.Data = map[string][]byte{consts.KubeconfigSecretField: kubeconfig}
	secret.Annotations = map[string]string{consts.RemoteTenantNamespaceAnnotKey: remoteTenant}
	g.Expect(testEnv.Client.Update(t.Context(), secret)).To(Succeed())
}

func TestFenceWithoutAKubeconfigShowsWhatTheControlPlaneIdentityMayDo(t *testing.T) {
	g := NewWithT(t)
	dead, _, prov := returned(t)
	w, _, _ := sameNamespaces(t, prov, dead.ID)
	before := providerRVs(t, prov, append(w.mine, w.kept...))

	_, stderr, err := kubectlFence(t, "", dead.ID, "--yes")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring(fmt.Sprintf(`no --provider-kubeconfig, and Secret %s/%s has no "kubeconfig" key`,
		dead.TenantNS, dead.IdentitySecret.Name)))
	g.Expect(stderr).To(ContainSubstring("pass --provider-kubeconfig <file> with a kubeconfig of an admin of the provider " + dead.ID))

	remoteTenant := "liqo-tenant-" + consumerID + "-" + strings.ToLower(dead.ID)
	controlPlaneIdentity(t, dead, prov, "liqo-controlplane-"+consumerID, remoteTenant)
	out, stderr, err := kubectlFence(t, "", dead.ID, "--yes", "--all")
	g.Expect(err).To(HaveOccurred())
	t.Log("fence without --provider-kubeconfig:\n" + out + stderr)
	g.Expect(out).To(ContainSubstring(fmt.Sprintf("No --provider-kubeconfig: using the control-plane identity of Secret %s/%s.",
		dead.TenantNS, dead.IdentitySecret.Name)))
	g.Expect(out).To(ContainSubstring("may NOT delete shadowpods in every namespace"))
	g.Expect(out).To(ContainSubstring("may delete resourceslices in namespace " + remoteTenant))
	g.Expect(out).To(ContainSubstring("may delete renews in namespace " + remoteTenant))
	g.Expect(stderr).To(ContainSubstring("ShadowPods are deletable by the ResourceSlice identities only"))
	g.Expect(stderr).To(ContainSubstring("Pass --provider-kubeconfig <file> with a kubeconfig of an admin of the provider."))
	g.Expect(providerRVs(t, prov, append(w.mine, w.kept...))).To(Equal(before), "nothing was deleted")
}
