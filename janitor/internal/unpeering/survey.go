package unpeering

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor/internal/liqoversion"
	"github.com/liqo-janitor/liqo-janitor/janitor/internal/podwatch"
)

// The unpeering (janitor rule 13): for a dead cluster, each pass follows the consumer's side of the
// peering to its end and records what is still there (liqojanitor.Unpeering, the unpeering annotation):
// the tenant namespace, the objects that hold it while it terminates (by their finalizers), the
// VirtualNodes of the cluster, and every object Liqo re-creates the ForeignCluster from
// (liqojanitor.PeeringKinds: its Configuration, Connection, gateways, Tenant, Identities, VirtualNodes and
// virtual Nodes labelled with the cluster ID, in any namespace). Each object says what holds it, whether
// liqo-janitor releases it, and the next step. The record is complete when none of those objects and no
// VirtualNode of the cluster (spec.clusterID) is left: deleted then, the ForeignCluster stays deleted
// (Liqo's foreigncluster controller creates one only on an event of such an object:
// foreigncluster_controller.go foreignclusterEnqueuer, v1.0.3 to v1.2.0). A namespace is not such an
// object: one that only carries Liqo's tenant labels holds nothing, and a tenant namespace still there
// when the rest is gone is a note, not a hold. Reading only: the survey writes nothing.

// +kubebuilder:rbac:groups=networking.liqo.io,resources=routeconfigurations;firewallconfigurations;wggatewayservers;wggatewayclients,verbs=list
// +kubebuilder:rbac:groups=authentication.liqo.io,resources=identities;tenants,verbs=list
// +kubebuilder:rbac:groups=networking.liqo.io,resources=configurations;connections;gatewayservers;gatewayclients,verbs=list
// +kubebuilder:rbac:groups=offloading.liqo.io,resources=virtualnodes,verbs=list
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list
// +kubebuilder:rbac:groups=ipam.liqo.io,resources=ips;networks,verbs=list

// Cluster is what the survey of a dead cluster's unpeering is told by the pass over it.
type Cluster struct {
	// ForeignCluster is the dead cluster's, as the pass read it.
	ForeignCluster *liqov1beta1.ForeignCluster
	// Liqo is the installed Liqo's version: what it releases by itself, and what the janitor does for it.
	Liqo liqoversion.Version
	// ReleaseIdentitySecrets is the janitor's opt-in release of the control-plane identity Secrets
	// (--release-identity-secrets): with it the janitor reads them, without it it names them from their
	// Identities.
	ReleaseIdentitySecrets bool
	// Kept is what the janitor kept at its first sight of the mark: the VirtualNode names a pinned volume
	// may name, which the unpeering deletes, and where each offloaded namespace is on the cluster.
	Kept liqojanitor.KeptRecord
	// PodsLeft are the pods the pass left on each virtual node of the cluster.
	PodsLeft podwatch.Left
}

// id is the dead cluster's ID (the ForeignCluster's spec.clusterID).
func (c *Cluster) id() string { return string(c.ForeignCluster.Spec.ClusterID) }

// peeringRecheck is how soon a pass looks again while objects the janitor does not watch hold the
// unpeering (a Tenant, an Identity, Liqo's networking objects).
const peeringRecheck = 30 * time.Second

// Survey records what of the consumer's side of the peering with c's cluster is still there (janitor rule
// 13): the record the janitor publishes on the ForeignCluster, and how soon to look again — 30 s while
// objects hold it that no watch of the janitor's sees go, else 0. It lists the VirtualNodes through
// cache (the janitor's watches see them) and everything else live.
func Survey(ctx context.Context, cache, live client.Reader, c Cluster) (liqojanitor.Unpeering, time.Duration, error) {
	u := &survey{cache: cache, live: live, c: &c}
	rec, err := u.run(ctx)
	return rec, u.recheck, err
}

// survey is one survey of a dead cluster's unpeering: its readers, what the pass told it, and whether to
// look again soon.
type survey struct {
	cache, live client.Reader
	c           *Cluster
	recheck     time.Duration
}

// run records what of the peering is still there.
func (u *survey) run(ctx context.Context) (liqojanitor.Unpeering, error) {
	rec := liqojanitor.Unpeering{Phase: liqojanitor.UnpeeringInProgress, LiqoVersion: u.c.Liqo.String(), LiqoVersionFrom: u.c.Liqo.From}
	if err := u.pinned(ctx, &rec); err != nil {
		return rec, err
	}
	namespaces, err := u.tenantNamespaces(ctx, u.c.ForeignCluster)
	if err != nil {
		return rec, err
	}
	var objs []liqojanitor.LeftObject
	for i := range namespaces {
		ns := &namespaces[i]
		rec.TenantNamespace = cmp.Or(rec.TenantNamespace, ns.Name)
		objs = append(objs, namespaceLeft(ns, u.c))
		if ns.DeletionTimestamp.IsZero() {
			continue
		}
		held, err := u.holdersIn(ctx, ns)
		if err != nil {
			return rec, err
		}
		objs = append(objs, held...)
	}
	vns, err := u.virtualNodes(ctx)
	if err != nil {
		return rec, err
	}
	objs = append(objs, vns...)
	peering, err := liqojanitor.PeeringLeft(ctx, u.live, u.c.id(), 0)
	if err != nil {
		return rec, fmt.Errorf("listing what Liqo re-creates the ForeignCluster from: %w", err)
	}
	if len(vns) == 0 && len(peering) == 0 {
		rec.Phase = liqojanitor.UnpeeringComplete
		rec.Notes = namespacesLeft(namespaces)
		return rec, nil
	}
	if slices.ContainsFunc(peering, unwatched) {
		// No watch of the janitor's sees these kinds go (only their namespace's): look again in a while.
		u.recheck = peeringRecheck
	}
	objs = append(objs, notNamed(peering, objs, u.c)...)
	if len(objs) > liqojanitor.MaxUnpeeringLeft {
		rec.More = len(objs) - liqojanitor.MaxUnpeeringLeft
		objs = objs[:liqojanitor.MaxUnpeeringLeft]
	}
	rec.Left = objs
	return rec, nil
}

// pinned adds to rec the volumes pinned to the cluster (volumes.go): they do not hold the unpeering, but
// their workloads cannot run anywhere until the operator releases them.
func (u *survey) pinned(ctx context.Context, rec *liqojanitor.Unpeering) error {
	vols, err := PinnedVolumes(ctx, u.live, u.c.id(), u.c.Kept)
	if err != nil {
		return err
	}
	rec.ClusterID, rec.PinnedVolumes = u.c.id(), len(vols)
	rec.Volumes = vols[:min(len(vols), liqojanitor.MaxPinnedVolumes)]
	return nil
}

// unwatched reports whether no watch of the janitor's sees o change (it watches VirtualNodes and virtual
// Nodes, janitor/controller_setup.go).
func unwatched(o liqojanitor.PeeringObject) bool {
	return o.Kind != virtualNodeKind && o.Kind != nodeKind
}

// notNamed are the objects Liqo re-creates the ForeignCluster from that the survey has not named yet (a
// VirtualNode of the cluster, a Tenant holding its terminating namespace), as left objects.
func notNamed(peering []liqojanitor.PeeringObject, named []liqojanitor.LeftObject, c *Cluster) []liqojanitor.LeftObject {
	var out []liqojanitor.LeftObject
	for _, o := range peering {
		if !slices.ContainsFunc(named, func(n liqojanitor.LeftObject) bool {
			return n.Kind == o.Kind && n.Namespace == o.Namespace && n.Name == o.Name
		}) {
			out = append(out, peeringLeft(o, c))
		}
	}
	return out
}

// peeringLeft is an object Liqo re-creates the ForeignCluster from, still there: what holds it, and the next
// step.
func peeringLeft(o liqojanitor.PeeringObject, c *Cluster) liqojanitor.LeftObject {
	l := liqojanitor.LeftObject{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}
	switch {
	case len(o.Finalizers) > 0:
		l.HeldBy = "finalizer " + o.Finalizers[0]
	case o.Terminating:
		l.HeldBy = "Terminating"
	default:
		l.HeldBy = "not being deleted"
	}
	const why = "Liqo re-creates the ForeignCluster, unmarked, from it"
	switch {
	case o.Terminating:
		l.Next = why + "; Liqo's own controller releases it (kubectl -n liqo get pods)"
	case o.Namespace == "":
		l.Next = fmt.Sprintf("%s; Liqo deletes a virtual Node with its VirtualNode; one left without it: kubectl delete node %s", why, o.Name)
	default:
		l.Next = fmt.Sprintf("%s; liqoctl force unpeer %s deletes it with the tenant namespace, or: kubectl -n %s delete %s %s",
			why, c.id(), o.Namespace, strings.ToLower(o.Kind), o.Name)
	}
	return l
}

// namespacesLeft notes the tenant namespaces still there when nothing holds the unpeering any more.
func namespacesLeft(namespaces []corev1.Namespace) []string {
	var notes []string
	for _, ns := range namespaces {
		notes = append(notes, fmt.Sprintf("tenant namespace %s is still there, with nothing in it that Liqo re-creates the "+
			"ForeignCluster from; delete it when you like: kubectl delete namespace %s", ns.Name, ns.Name))
	}
	return notes
}

// tenantNamespaces returns the cluster's tenant namespaces as Liqo finds them (by label), and the one
// the ForeignCluster's status names (status.tenantNamespace.local, written by Liqo's foreigncluster
// controller) if it exists and is not among them.
func (u *survey) tenantNamespaces(ctx context.Context, fc *liqov1beta1.ForeignCluster) ([]corev1.Namespace, error) {
	list, err := liqojanitor.TenantNamespaces(ctx, u.live, string(fc.Spec.ClusterID))
	if err != nil {
		return nil, fmt.Errorf("listing the tenant namespaces: %w", err)
	}
	named := fc.Status.TenantNamespace.Local
	if named == "" || slices.ContainsFunc(list.Items, func(ns corev1.Namespace) bool { return ns.Name == named }) {
		return list.Items, nil
	}
	ns := &corev1.Namespace{}
	switch err := u.live.Get(ctx, client.ObjectKey{Name: named}, ns); {
	case apierrors.IsNotFound(err):
		return list.Items, nil
	case err != nil:
		return nil, fmt.Errorf("reading the tenant namespace %s: %w", named, err)
	}
	return append(list.Items, *ns), nil
}

// namespaceLeft is a tenant namespace still there: not being deleted (the operator's next step), or
// terminating (what the namespace controller reports holds it).
func namespaceLeft(ns *corev1.Namespace, c *Cluster) liqojanitor.LeftObject {
	o := liqojanitor.LeftObject{Kind: "Namespace", Name: ns.Name}
	if ns.DeletionTimestamp.IsZero() {
		o.HeldBy = "not being deleted"
		o.Next = fmt.Sprintf("delete it: kubectl delete namespace %s", ns.Name)
		if !c.Liqo.Older(1) {
			o.Next = fmt.Sprintf("liqoctl force unpeer %s (it deletes the tenant namespace), or kubectl delete namespace %s", c.id(), ns.Name)
		}
		return o
	}
	o.HeldBy = "Terminating"
	for _, c := range ns.Status.Conditions {
		if c.Status == corev1.ConditionTrue && (c.Type == corev1.NamespaceFinalizersRemaining || c.Type == corev1.NamespaceContentRemaining) {
			o.HeldBy = "Terminating: " + c.Message
			break
		}
	}
	o.Next = "the namespace controller deletes it once the objects holding it are gone (listed here)"
	return o
}

// virtualNodes lists the cluster's VirtualNodes (spec.clusterID, the consumer's own field) and what holds
// each: its deletion waits for Liqo's routine (drain, virtual-kubelet Deployment, Node), or it is not
// being deleted.
func (u *survey) virtualNodes(ctx context.Context) ([]liqojanitor.LeftObject, error) {
	var vns offloadingv1beta1.VirtualNodeList
	if err := u.cache.List(ctx, &vns); err != nil {
		return nil, fmt.Errorf("listing VirtualNodes: %w", err)
	}
	var out []liqojanitor.LeftObject
	for i := range vns.Items {
		vn := &vns.Items[i]
		if string(vn.Spec.ClusterID) != u.c.id() {
			continue
		}
		o := liqojanitor.LeftObject{Kind: virtualNodeKind, Namespace: vn.Namespace, Name: vn.Name}
		switch {
		case vn.DeletionTimestamp.IsZero():
			o.HeldBy = "not being deleted"
			o.Next = "Liqo deletes it with its ResourceSlice (liqoctl force unpeer, or deleting the tenant namespace)"
		case len(u.c.PodsLeft[vn.Name]) > 0:
			o.HeldBy = "finalizer " + virtualNodeFinalize
			o.Next = fmt.Sprintf("%d pod(s) on its Node stay, which liqo-janitor may not delete (their own finalizers, or pods Liqo's "+
				"drain does not select); Liqo's deletion routine may wait for them (v1.0's drain always does): "+
				"kubectl get pods -A --field-selector spec.nodeName=%s", len(u.c.PodsLeft[vn.Name]), vn.Name)
		default:
			o.HeldBy = "finalizer " + virtualNodeFinalize
			o.Next = "Liqo's VirtualNode deletion routine releases it after the drain, the virtual-kubelet Deployment and the Node " +
				"(one VirtualNode at a time: a stuck one holds the others); if it stays, see kubectl -n liqo logs deploy/liqo-controller-manager"
		}
		out = append(out, o)
	}
	return out, nil
}
