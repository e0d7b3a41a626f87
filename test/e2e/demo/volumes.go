package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
)

// The stateful chapter (issue 38): a StatefulSet replica whose volume Liqo's virtual storage provisioned
// on the dead provider is Pending for ever; the janitor reports the volume, and the operator releases it
// with the typed data-loss confirmation, after which the StatefulSet controller gives the replica a new
// claim it can be scheduled with anywhere.

// volumeControllers are the kube-controller-manager controllers the chapter needs beside the harness's
// namespace and garbage-collector controllers: the StatefulSet's, and Kubernetes' storage protection and
// binding.
var volumeControllers = []string{"statefulset-controller", "persistentvolumeclaim-protection-controller",
	"persistentvolume-protection-controller", "persistentvolume-binder-controller"}

// stateful is the StatefulSet laid out for the chapter.
type stateful struct {
	ns  string
	set *appsv1.StatefulSet
	pvc *corev1.PersistentVolumeClaim
}

// claimName is the StatefulSet's claim of its replica 0 (<template>-<set>-<ordinal>).
func (s stateful) claimName() string { return "data-" + s.set.Name + "-0" }

// layoutStateful lays out, in the first offloaded namespace, a StatefulSet db of one replica whose claim
// data-db-0 Liqo's virtual storage provisioned on the dead provider (the placeholder PV pinned there, as its
// virtual kubelet makes it), its pod Pending: "node(s) didn't match PersistentVolume's node affinity".
func (d *demo) layoutStateful(ctx context.Context) error {
	if _, err := d.env.StartControllers(volumeControllers); err != nil {
		return err
	}
	if err := fixture.StorageClasses(ctx, d.env.Client); err != nil {
		return err
	}
	p, ns := d.dead(), d.cons.Namespaces[0]
	labels := map[string]string{"app": "db"}
	pvc, _, err := fixture.Bind(ctx, d.env.Client, fixture.Claim{Namespace: ns, Name: "data-db-0", Class: fixture.LiqoStorageClass,
		Node: p.Node.Name, Cluster: p.ID, Placeholder: true, Labels: labels})
	if err != nil {
		return err
	}
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To[int32](1),
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "db", Image: "registry.example/db:1"}}}},
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: labels},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(fixture.LiqoStorageClass), AccessModes: pvc.Spec.AccessModes,
				Resources: pvc.Spec.Resources}}},
	}}
	if err := d.env.Client.Create(ctx, set); err != nil {
		return fmt.Errorf("creating StatefulSet %s/%s: %w", ns, set.Name, err)
	}
	d.stateful = stateful{ns: ns, set: set, pvc: pvc}
	return d.grantVolumes(ctx, ns)
}

// grantVolumes lets the operator release the namespace's volumes: delete and create its PVCs (what
// Kubernetes' edit role gives; its aggregation controller does not run here).
func (d *demo) grantVolumes(ctx context.Context, ns string) error {
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "volume-releaser"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"get", "list", "delete", "create"}}}}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "volume-releaser"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: operator}}}
	for _, obj := range []client.Object{role, rb} {
		if err := d.env.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("letting %s release the volumes of namespace %s: %w", operator, ns, err)
		}
	}
	return nil
}

// statefulChapter: the volume pinned to the dead provider as the janitor reports it, the plan of
// release-volumes, the release with the typed confirmation, and the replica's new claim.
func (d *demo) statefulChapter(ctx context.Context) error {
	s := d.stateful
	d.out.note(fmt.Sprintf("StatefulSet %s/%s kept its data on %s: its claim %s is bound to the placeholder PV Liqo's virtual "+
		"kubelet made there, pinned to %s by its node affinity, so its pod %s-0 is Pending for ever (\"node(s) didn't "+
		"match PersistentVolume's node affinity\"), on every Liqo version: nothing in Liqo releases it, and liqoctl move volume needs the dead cluster.",
		s.ns, s.set.Name, d.dead().ID, s.claimName(), d.dead().ID, s.set.Name))
	if err := d.awaitPinned(ctx); err != nil {
		return err
	}
	out, err := d.plugin(ctx, "", "release-volumes", d.dead().ID)
	if err != nil {
		return err
	}
	d.out.shown(out)
	d.out.note("The data lives only on the dead provider: releasing the claim abandons it, so the operator types the " +
		"cluster ID as the data-loss confirmation.")
	t0 := time.Now()
	out, err = d.plugin(ctx, "", "release-volumes", d.dead().ID, "--confirm-data-loss="+d.dead().ID)
	d.out.shown(out)
	if err != nil {
		return fmt.Errorf("the release failed: %w", err)
	}
	d.out.done(fmt.Sprintf("released in %s", time.Since(t0).Round(100*time.Millisecond)))
	return d.awaitNewClaim(ctx)
}

// awaitPinned waits for the janitor's record to count the pinned volume, and shows its line.
func (d *demo) awaitPinned(ctx context.Context) error {
	var u liqojanitor.Unpeering
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		u, err = d.unpeering(ctx)
		return err == nil && u.PinnedVolumes == 1, err
	})
	if err != nil {
		return fmt.Errorf("the janitor's record does not count the volume pinned to %s within 30s; it says: %s: %w", d.dead().ID, u.Summary(), err)
	}
	d.out.done("the janitor's record: " + strings.ReplaceAll(u.Summary(), "\n", "; "))
	return nil
}

// awaitNewClaim waits for the StatefulSet controller to give the replica a new claim of the same name
// (another UID, bound to no volume), nudging the Pending pod as kube-scheduler's retry would (the controller
// watches pods, not claims).
func (d *demo) awaitNewClaim(ctx context.Context) error {
	s := d.stateful
	key := client.ObjectKey{Namespace: s.ns, Name: s.claimName()}
	pod := client.ObjectKey{Namespace: s.ns, Name: s.set.Name + "-0"}
	w := d.out.waiter("waiting for the StatefulSet controller to create the replica's new claim")
	var fresh corev1.PersistentVolumeClaim
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		w.tick()
		if err := d.env.Client.Get(ctx, key, &fresh); client.IgnoreNotFound(err) != nil || (err == nil && fresh.UID != s.pvc.UID) {
			return err == nil, err
		}
		return false, d.nudge(ctx, pod)
	})
	if err != nil {
		return fmt.Errorf("no new claim %s within a minute of the release: %w", key, err)
	}
	d.out.done(fmt.Sprintf("the StatefulSet controller created claim %s anew (uid %s, bound to no volume): pod %s can now be "+
		"scheduled on a live provider, starting with empty data", key, fresh.UID, pod))
	return nil
}

// nudge updates the Pending pod's PodScheduled condition as kube-scheduler does when it tries again.
func (d *demo) nudge(ctx context.Context, key client.ObjectKey) error {
	patch := fmt.Appendf(nil, `{"status":{"conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable",`+
		`"message":"0/4 nodes are available: node(s) didn't match PersistentVolume's node affinity","lastTransitionTime":%q}]}}`, time.Now().UTC().Format(time.RFC3339))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	return client.IgnoreNotFound(d.env.Client.Status().Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, patch)))
}
