package harness_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"github.com/liqotech/liqo/pkg/consts"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

const (
	crdReplicatorFinalizer = "crdreplicator.liqo.io/resource"
	rejectLabel            = "harness.liqo-janitor.io/reject"
)

func TestMain(m *testing.M) {
	os.Exit(harness.Run(m, harness.Options{
		WebhookPaths:      []string{"testdata/webhook.yaml"},
		ControllerManager: true,
	}, startProbeWebhook))
}

// startProbeWebhook serves the probe webhook of testdata/webhook.yaml: it denies ForeignClusters carrying
// the reject label, which proves the API server really calls a webhook registered through the harness.
func startProbeWebhook(e *harness.Env) error {
	srv := webhook.NewServer(e.WebhookOptions())
	decoder := admission.NewDecoder(e.Scheme)
	srv.Register("/validate-probe", &webhook.Admission{Handler: admission.HandlerFunc(
		func(_ context.Context, req admission.Request) admission.Response {
			fc := &liqov1beta1.ForeignCluster{}
			if err := decoder.Decode(req, fc); err != nil {
				return admission.Errored(400, err)
			}
			if fc.Labels[rejectLabel] == "true" {
				return admission.Denied("the harness probe rejects labelled ForeignClusters")
			}
			return admission.Allowed("")
		})})
	e.Go(srv.Start)
	return e.WaitForWebhookServer(context.Background())
}

func foreignCluster(id string) *liqov1beta1.ForeignCluster {
	return &liqov1beta1.ForeignCluster{
		ObjectMeta: metav1.ObjectMeta{Name: id, Labels: map[string]string{consts.RemoteClusterID: id}},
		Spec:       liqov1beta1.ForeignClusterSpec{ClusterID: liqov1beta1.ClusterID(id)},
	}
}

func TestResourceSliceHangsOnReplicatorFinalizerUntilItIsRemoved(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	id := fixture.Prefix("provider-")
	g.Expect(env.Client.Create(ctx, foreignCluster(id))).To(Succeed())

	rs := &authv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{
		Name: id, Namespace: ns, Finalizers: []string{crdReplicatorFinalizer},
		Labels: map[string]string{consts.RemoteClusterID: id, consts.ReplicationRequestedLabel: "true"},
	}}
	g.Expect(env.Client.Create(ctx, rs)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, rs)).To(Succeed())

	stuck := &authv1beta1.ResourceSlice{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rs), stuck)).To(Succeed())
	g.Expect(stuck.DeletionTimestamp).NotTo(BeNil(), "the ResourceSlice is Terminating")
	g.Expect(stuck.Finalizers).To(ConsistOf(crdReplicatorFinalizer))

	patch := fmt.Sprintf(`[{"op":"test","path":"/metadata/finalizers/0","value":%q},{"op":"remove","path":"/metadata/finalizers/0"}]`,
		crdReplicatorFinalizer)
	g.Expect(env.Client.Patch(ctx, stuck, client.RawPatch(types.JSONPatchType, []byte(patch)))).To(Succeed())
	g.Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(rs), &authv1beta1.ResourceSlice{})
	}).Should(Satisfy(apierrors.IsNotFound), "the ResourceSlice is gone once its finalizer is")
}

func TestPodOnNodeWithoutKubeletStaysTerminatingUntilDeletedWithGraceZero(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	id := fixture.Prefix("provider-")

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: id, Labels: map[string]string{
		consts.TypeLabel: consts.TypeNode, consts.RemoteClusterID: id,
	}}}
	g.Expect(env.Client.Create(ctx, node)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), node) })

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "offloaded", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName:                     node.Name,
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
		},
	}
	g.Expect(env.Client.Create(ctx, pod)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, pod, client.GracePeriodSeconds(30))).To(Succeed())

	stuck := &corev1.Pod{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pod), stuck)).To(Succeed())
	g.Expect(stuck.DeletionTimestamp).NotTo(BeNil(), "the pod is Terminating: no kubelet confirms it gone")

	g.Expect(env.Client.Delete(ctx, stuck, client.GracePeriodSeconds(0),
		client.Preconditions{UID: ptr.To(stuck.UID)})).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{})).
		To(Satisfy(apierrors.IsNotFound), "a grace-0 delete removes the pod at once")
}

func TestRegisteredWebhookIsCalledByTheAPIServer(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()

	accepted := foreignCluster(fixture.Prefix("accepted-"))
	g.Expect(env.Client.Create(ctx, accepted)).To(Succeed())

	rejected := foreignCluster(fixture.Prefix("rejected-"))
	rejected.Labels[rejectLabel] = "true"
	err := env.Client.Create(ctx, rejected)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("the harness probe rejects labelled ForeignClusters"))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rejected), &liqov1beta1.ForeignCluster{})).
		To(Satisfy(apierrors.IsNotFound))
}

func TestControllerManagerDeletesNamespacesAndCollectsGarbage(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kcm-"}}
	g.Expect(env.Client.Create(ctx, ns)).To(Succeed())

	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns.Name}}
	g.Expect(env.Client.Create(ctx, owner)).To(Succeed())
	dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent", Namespace: ns.Name,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}}
	g.Expect(env.Client.Create(ctx, dependent)).To(Succeed())

	g.Expect(env.Client.Delete(ctx, owner)).To(Succeed())
	g.Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(dependent), &corev1.ConfigMap{})
	}).WithTimeout(30*time.Second).Should(Satisfy(apierrors.IsNotFound), "the garbage collector removes the dependent")

	g.Expect(env.Client.Delete(ctx, ns)).To(Succeed())
	g.Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{})
	}).WithTimeout(60*time.Second).Should(Satisfy(apierrors.IsNotFound),
		"the namespace controller finishes the deletion (log: %s)", env.ControllerManagerLog())
}

// TestAnOutageRefusesAndKeepsItsAddress: while an Outage is down, connections to its address are refused
// and nobody else can listen there (a freed port could be taken by another process and answer in the API
// server's place); once up, it forwards to the API server again.
func TestAnOutageRefusesAndKeepsItsAddress(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	o, err := env.NewOutage("refuses")
	g.Expect(err).NotTo(HaveOccurred())
	through, err := net.Dial("tcp", o.Addr) // a connection the outage cuts
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() error { _, err := through.Write([]byte("x")); return err }).Should(Succeed())
	o.Down()
	_, err = through.Read(make([]byte, 1))
	g.Expect(err).To(HaveOccurred(), "down: a connection through it is cut")
	_, err = net.Dial("tcp", o.Addr)
	g.Expect(err).To(MatchError(syscall.ECONNREFUSED), "down: refused")
	_, err = net.Listen("tcp", o.Addr)
	g.Expect(err).To(MatchError(syscall.EADDRINUSE), "down: the address stays taken")
	g.Expect(o.Up()).To(Succeed())
	c, err := net.Dial("tcp", o.Addr)
	g.Expect(err).NotTo(HaveOccurred(), "up: it accepts again")
	g.Expect(c.Close()).To(Succeed())
}
