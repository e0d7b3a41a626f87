package main

import (
	"context"
	"fmt"
	"os"
	"time"

	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/liqotech/liqo/pkg/consts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// Liqo's labels on a ShadowPod and on the pod made of it (forge.LiqoOriginClusterIDKey and
// forge.LiqoDestinationClusterIDKey): fence selects on both.
const (
	originLabel      = "offloading.liqo.io/origin"
	destinationLabel = "offloading.liqo.io/destination"
)

// otherConsumer is a second consumer of the dead provider: fence must never touch its workloads there.
const otherConsumer = "another-consumer"

// otherNamespace is a namespace on the provider where only the other consumer offloads.
const otherNamespace = "shop-" + otherConsumer

// remote is the dead provider's own side: its API server (a second control plane, with
// kube-controller-manager so that the garbage collector deletes the pods of deleted ShadowPods), the
// proxy in front of it that the partition takes down, and what runs there.
type remote struct {
	env       *harness.Env
	partition *harness.Outage
	// mine are this consumer's ShadowPods there and their pods; theirs the other consumer's, and
	// theirsBefore their resourceVersions once laid out.
	mine, theirs []client.Object
	theirsBefore map[string]string
	// healed is when the partition healed.
	healed time.Time
}

// url is the provider's API server as Liqo writes it into the ForeignCluster's status: the proxy's.
func (r *remote) url() string { return "https://" + r.partition.Addr }

// startProvider starts the provider's control plane in the background; the channel reports when it is up.
func (d *demo) startProvider() <-chan error {
	done := make(chan error, 1)
	go func() {
		env, err := harness.Start(harness.Options{ControllerManager: true, Detached: d.keep})
		d.remote.env = env
		done <- err
	}()
	return done
}

// layoutProvider lays out the dead provider's side: Liqo's cluster-ID ConfigMap, the copies of the
// consumer's pods there, another consumer's workloads, and the proxy whose address the ForeignCluster's
// status names.
func (d *demo) layoutProvider(ctx context.Context) error {
	p, r := d.dead(), &d.remote
	if err := r.env.InstallLocalClusterID(ctx, liqoNamespace, p.ID); err != nil {
		return err
	}
	if err := r.offloadConsumer(ctx, p); err != nil {
		return err
	}
	if err := r.offloadOther(ctx, p); err != nil {
		return err
	}
	var err error
	if r.theirsBefore, err = fixture.ResourceVersions(ctx, r.env.Client, r.theirs...); err != nil {
		return err
	}
	if r.partition, err = r.env.NewOutage("partition"); err != nil {
		return err
	}
	return d.publishAPIServerURL(ctx)
}

// offloadConsumer creates, for each pod the consumer offloaded to p, the ShadowPod its virtual kubelet
// made in the remote namespace, and the pod made of it.
func (r *remote) offloadConsumer(ctx context.Context, p *fixture.Provider) error {
	for _, remoteNS := range p.NamespaceMap.Spec.DesiredMapping {
		if err := r.createNamespace(ctx, remoteNS); err != nil {
			return err
		}
	}
	for _, pod := range p.Pods {
		objs, err := r.shadowPod(ctx, p.NamespaceMap.Spec.DesiredMapping[pod.Namespace], pod.Name, localClusterID, p.ID)
		if err != nil {
			return err
		}
		r.mine = append(r.mine, objs...)
	}
	return nil
}

// offloadOther creates another consumer's ShadowPods and pods: in one of this consumer's remote
// namespaces, and in a namespace of its own.
func (r *remote) offloadOther(ctx context.Context, p *fixture.Provider) error {
	if err := r.createNamespace(ctx, otherNamespace); err != nil {
		return err
	}
	shared := p.NamespaceMap.Spec.DesiredMapping[p.Pods[0].Namespace]
	for _, at := range []struct{ ns, name string }{{shared, "cart-0"}, {shared, "cart-1"}, {otherNamespace, "db-0"}, {otherNamespace, "db-1"}} {
		objs, err := r.shadowPod(ctx, at.ns, at.name, otherConsumer, p.ID)
		if err != nil {
			return err
		}
		r.theirs = append(r.theirs, objs...)
	}
	return nil
}

func (r *remote) createNamespace(ctx context.Context, name string) error {
	if err := r.env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		return fmt.Errorf("creating namespace %s on the provider: %w", name, err)
	}
	return nil
}

// shadowPod creates a ShadowPod reflected from origin to destination and the pod Liqo's shadowpod
// controller makes of it (same name and labels, controller-owned by the ShadowPod). The pod is bound to
// no node, so that its deletion completes without a kubelet.
func (r *remote) shadowPod(ctx context.Context, ns, name, origin, destination string) ([]client.Object, error) {
	labels := map[string]string{originLabel: origin, destinationLabel: destination, consts.ManagedByLabelKey: consts.ManagedByShadowPodValue}
	spec := corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false),
		Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}
	sp := &offloadingv1beta1.ShadowPod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: offloadingv1beta1.ShadowPodSpec{Pod: spec}}
	if err := r.env.Client.Create(ctx, sp); err != nil {
		return nil, fmt.Errorf("creating ShadowPod %s/%s on the provider: %w", ns, name, err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: offloadingv1beta1.SchemeGroupVersion.String(), Kind: "ShadowPod",
			Name: sp.Name, UID: sp.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}}, Spec: spec}
	if err := r.env.Client.Create(ctx, pod); err != nil {
		return nil, fmt.Errorf("creating pod %s/%s on the provider: %w", ns, name, err)
	}
	return []client.Object{sp, pod}, nil
}

// publishAPIServerURL writes the proxy's address into the dead provider's ForeignCluster status, where
// Liqo keeps the provider's API server (status.apiServerUrl): what the gate and the janitor probe.
func (d *demo) publishAPIServerURL(ctx context.Context) error {
	fc := d.dead().ForeignCluster
	patch := fmt.Appendf(nil, `{"status":{"apiServerUrl":%q}}`, d.remote.url())
	if err := d.env.Client.Status().Patch(ctx, fc, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("writing status.apiServerUrl of ForeignCluster %s: %w", fc.Name, err)
	}
	return nil
}

// stopProvider stops the provider's control plane (after a failure, keeping its logs).
func (d *demo) stopProvider() {
	if d.remote.env == nil {
		return
	}
	if d.out.failed {
		d.remote.env.KeepFiles()
	}
	if err := d.remote.env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the provider's control plane:", err)
	}
}
