package janitor

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
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

// holder is what the janitor knows of one Liqo finalizer on the consumer: the kinds that carry it,
// whether liqo-janitor releases it (given the Liqo version), and the next step while it stays.
type holder struct {
	finalizer string
	kinds     []schema.GroupVersionKind
	// releasable says whether liqo-janitor releases it for a dead cluster on Liqo v.
	releasable func(v liqoversion.Version, o Options) bool
	// next is the next step while it stays.
	next func(v liqoversion.Version, o Options) string
}

func never(liqoversion.Version, Options) bool  { return false }
func always(liqoversion.Version, Options) bool { return true }
func say(s string) func(liqoversion.Version, Options) string {
	return func(liqoversion.Version, Options) string { return s }
}

// GVKs the survey lists in a terminating tenant namespace (metadata-only, live). The networking and IPAM
// kinds are named, not imported: Liqo's networking API package imports the Prometheus Operator's.
var (
	networkingGV        = schema.GroupVersion{Group: "networking.liqo.io", Version: "v1beta1"}
	ipamGV              = schema.GroupVersion{Group: "ipam.liqo.io", Version: "v1alpha1"}
	routeConfigGVK      = networkingGV.WithKind("RouteConfiguration")
	firewallConfigGVK   = networkingGV.WithKind("FirewallConfiguration")
	wgGatewayServerGVK  = networkingGV.WithKind("WgGatewayServer")
	wgGatewayClientGVK  = networkingGV.WithKind("WgGatewayClient")
	tenantGVK           = authv1beta1.GroupVersion.WithKind("Tenant")
	ipGVK               = ipamGV.WithKind("IP")
	networkGVK          = ipamGV.WithKind("Network")
	virtualNodeKind     = "VirtualNode"
	virtualNodeFinalize = "virtualnode-controller.liqo.io/finalizer"
)

// holders are the finalizers Liqo puts on the objects of a tenant namespace (liqo-facts §5; the same
// strings in v1.0.3, v1.1.0 and v1.2.0), the order in which the record names them: what the janitor
// releases first, then Liqo's own.
func holders() []holder {
	liqoLocal := "Liqo's own controller releases it (it needs no provider): check that Liqo's pods run: kubectl -n liqo get pods"
	return []holder{
		{finalizer: liqojanitor.ReplicatorFinalizer, kinds: liqojanitor.ReplicatedGVKs, releasable: always,
			next: say("liqo-janitor releases it (Liqo ≥ v1.1's crd-replicator too, once the mark is honoured)")},
		{finalizer: liqojanitor.ReplicatorOperatorFinalizer, kinds: []schema.GroupVersionKind{secretGVK},
			releasable: func(_ liqoversion.Version, o Options) bool { return o.ReleaseIdentitySecrets },
			next: func(v liqoversion.Version, o Options) string {
				switch {
				case o.ReleaseIdentitySecrets:
					return "liqo-janitor releases it once no replicated object is left in its namespace"
				case v.Older(1):
					return "Liqo v1.0 never releases it for a dead provider: turn on liqo-janitor's opt-in release " +
						"(chart value janitor.releaseIdentitySecrets=true, flag --release-identity-secrets)"
				}
				return "Liqo ≥ v1.1's crd-replicator releases it once the mark is honoured and no replicated object is left; " +
					"if it stays, liqo-janitor's opt-in release does it (chart value janitor.releaseIdentitySecrets=true)"
			}},
		{finalizer: liqojanitor.LegacyFabricFinalizer, kinds: []schema.GroupVersionKind{liqojanitor.InternalFabricGVK},
			releasable: func(v liqoversion.Version, _ Options) bool { return v.Before(2) },
			next: func(v liqoversion.Version, _ Options) string {
				if v.Before(2) {
					return "Liqo's fabric releases it after removing its node's geneve interface; one still there after --fabric-settle " +
						"liqo-janitor releases, as Liqo v1.2.0's internalfabric controller does at once (a node whose fabric did not run " +
						"may keep a stale geneve interface)"
				}
				return "Liqo v1.2's internalfabric controller releases it: check liqo-controller-manager's log"
			}},
		{finalizer: routeFinalizer, kinds: []schema.GroupVersionKind{routeConfigGVK}, releasable: never,
			next: say("it guards routes in the nodes' kernels; Liqo's fabric and gateway pods " +
				"remove it once their node's routes are gone (kubectl -n liqo get pods); a finalizer left by a node that is gone " +
				"for good is the cluster admin's to remove")},
		{finalizer: firewallFinalizer, kinds: []schema.GroupVersionKind{firewallConfigGVK}, releasable: never,
			next: say("it guards firewall rules in the nodes' kernels; Liqo's fabric and gateway " +
				"pods remove it once their node's rules are gone (kubectl -n liqo get pods); a finalizer left by a node that is " +
				"gone for good is the cluster admin's to remove")},
		{finalizer: "networking.liqo.io/internal-fabric-geneve-tunnel-finalizer", kinds: []schema.GroupVersionKind{liqojanitor.InternalFabricGVK},
			releasable: never, next: say(liqoLocal)},
		{finalizer: "networking.liqo.io/clusterrolebinding", kinds: []schema.GroupVersionKind{wgGatewayServerGVK, wgGatewayClientGVK},
			releasable: never, next: say(liqoLocal)},
		{finalizer: "tenant.liqo.io/finalizer", kinds: []schema.GroupVersionKind{tenantGVK}, releasable: never, next: say(liqoLocal)},
		{finalizer: "ip.ipam.liqo.io/finalizer", kinds: []schema.GroupVersionKind{ipGVK}, releasable: never, next: say(liqoLocal)},
		{finalizer: "ipmapping-nat-controller.liqo.io/finalizer", kinds: []schema.GroupVersionKind{ipGVK}, releasable: never, next: say(liqoLocal)},
		{finalizer: "network.ipam.liqo.io/finalizer", kinds: []schema.GroupVersionKind{networkGVK}, releasable: never, next: say(liqoLocal)},
		{finalizer: "namespacemap-controller.liqo.io/finalizer", kinds: []schema.GroupVersionKind{liqojanitor.NamespaceMapGVK},
			releasable: never, next: say(liqoLocal)},
	}
}

// Liqo's networking finalizers (pkg/route/finalizer.go, pkg/firewall/finalizer.go,
// internalfabric-controller; the same strings in v1.0.3 to v1.2.0).
const (
	routeFinalizer    = "routeconfiguration-controller.liqo.io/finalizer"
	firewallFinalizer = "firewallconfigurations-controller.liqo.io/finalizer"
)

// surveyor follows a dead cluster's unpeering (janitor rule 13).
type surveyor struct {
	// client reads the manager's caches (VirtualNodes, virtual Nodes); apiReader the API server.
	client    client.Client
	apiReader client.Reader
	options   Options
	// store holds the VirtualNode names kept at first sight of the mark (report_volumes.go).
	store targetStore
}

// survey records what of the consumer's side of the peering of s's cluster is still there. pods are the
// pods the pass left on each virtual node of the cluster.
func (u *surveyor) survey(ctx context.Context, s *scope, left podwatch.Left) (liqojanitor.Unpeering, error) {
	rec := liqojanitor.Unpeering{Phase: liqojanitor.UnpeeringInProgress, LiqoVersion: s.liqo.String(), LiqoVersionFrom: s.liqo.From}
	if err := u.pinned(ctx, s, &rec); err != nil {
		return rec, err
	}
	namespaces, err := u.tenantNamespaces(ctx, s.fc)
	if err != nil {
		return rec, err
	}
	var objs []liqojanitor.LeftObject
	for i := range namespaces {
		ns := &namespaces[i]
		rec.TenantNamespace = cmp.Or(rec.TenantNamespace, ns.Name)
		objs = append(objs, namespaceLeft(ns, s))
		if ns.DeletionTimestamp.IsZero() {
			continue
		}
		held, err := u.holdersIn(ctx, ns, s)
		if err != nil {
			return rec, err
		}
		objs = append(objs, held...)
	}
	vns, err := u.virtualNodes(ctx, s, left)
	if err != nil {
		return rec, err
	}
	objs = append(objs, vns...)
	peering, err := liqojanitor.PeeringLeft(ctx, u.apiReader, s.clusterID, 0)
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
		s.wakeIn(peeringRecheck)
	}
	objs = append(objs, notNamed(peering, objs, s)...)
	if len(objs) > liqojanitor.MaxUnpeeringLeft {
		rec.More = len(objs) - liqojanitor.MaxUnpeeringLeft
		objs = objs[:liqojanitor.MaxUnpeeringLeft]
	}
	rec.Left = objs
	return rec, nil
}

// pinned adds to rec the volumes pinned to s's cluster (report_volumes.go): they do not hold the unpeering,
// but their workloads cannot run anywhere until the operator releases them.
func (u *surveyor) pinned(ctx context.Context, s *scope, rec *liqojanitor.Unpeering) error {
	kept, _, err := u.store.Of(ctx, s.fc)
	if err != nil {
		return err
	}
	vols, err := pinnedVolumes(ctx, u.apiReader, s.clusterID, kept)
	if err != nil {
		return err
	}
	rec.ClusterID, rec.PinnedVolumes = s.clusterID, len(vols)
	rec.Volumes = vols[:min(len(vols), liqojanitor.MaxPinnedVolumes)]
	return nil
}

// peeringRecheck is how soon a pass looks again while objects the janitor does not watch hold the
// unpeering (a Tenant, an Identity, Liqo's networking objects).
const peeringRecheck = 30 * time.Second

// unwatched reports whether no watch of the janitor's sees o change (it watches VirtualNodes and virtual
// Nodes, controller_setup.go).
func unwatched(o liqojanitor.PeeringObject) bool {
	return o.Kind != virtualNodeKind && o.Kind != nodeGVK.Kind
}

// notNamed are the objects Liqo re-creates the ForeignCluster from that the survey has not named yet (a
// VirtualNode of the cluster, a Tenant holding its terminating namespace), as left objects.
func notNamed(peering []liqojanitor.PeeringObject, named []liqojanitor.LeftObject, s *scope) []liqojanitor.LeftObject {
	var out []liqojanitor.LeftObject
	for _, o := range peering {
		if !slices.ContainsFunc(named, func(n liqojanitor.LeftObject) bool {
			return n.Kind == o.Kind && n.Namespace == o.Namespace && n.Name == o.Name
		}) {
			out = append(out, peeringLeft(o, s))
		}
	}
	return out
}

// peeringLeft is an object Liqo re-creates the ForeignCluster from, still there: what holds it, and the next
// step.
func peeringLeft(o liqojanitor.PeeringObject, s *scope) liqojanitor.LeftObject {
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
			why, s.clusterID, o.Namespace, strings.ToLower(o.Kind), o.Name)
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
func (u *surveyor) tenantNamespaces(ctx context.Context, fc *liqov1beta1.ForeignCluster) ([]corev1.Namespace, error) {
	list, err := liqojanitor.TenantNamespaces(ctx, u.apiReader, string(fc.Spec.ClusterID))
	if err != nil {
		return nil, fmt.Errorf("listing the tenant namespaces: %w", err)
	}
	named := fc.Status.TenantNamespace.Local
	if named == "" || slices.ContainsFunc(list.Items, func(ns corev1.Namespace) bool { return ns.Name == named }) {
		return list.Items, nil
	}
	ns := &corev1.Namespace{}
	switch err := u.apiReader.Get(ctx, client.ObjectKey{Name: named}, ns); {
	case apierrors.IsNotFound(err):
		return list.Items, nil
	case err != nil:
		return nil, fmt.Errorf("reading the tenant namespace %s: %w", named, err)
	}
	return append(list.Items, *ns), nil
}

// namespaceLeft is a tenant namespace still there: not being deleted (the operator's next step), or
// terminating (what the namespace controller reports holds it).
func namespaceLeft(ns *corev1.Namespace, s *scope) liqojanitor.LeftObject {
	o := liqojanitor.LeftObject{Kind: "Namespace", Name: ns.Name}
	if ns.DeletionTimestamp.IsZero() {
		o.HeldBy = "not being deleted"
		o.Next = fmt.Sprintf("delete it: kubectl delete namespace %s", ns.Name)
		if !s.liqo.Older(1) {
			o.Next = fmt.Sprintf("liqoctl force unpeer %s (it deletes the tenant namespace), or kubectl delete namespace %s", s.clusterID, ns.Name)
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

// holdersIn lists, in a terminating tenant namespace, the objects that carry one of Liqo's finalizers,
// and what the namespace controller says remains that no listing explains.
func (u *surveyor) holdersIn(ctx context.Context, ns *corev1.Namespace, s *scope) ([]liqojanitor.LeftObject, error) {
	var out []liqojanitor.LeftObject
	// accounted are the finalizers whose every kind the survey read: what it found is the truth, and the
	// namespace controller's condition, written on its last retry, may be stale. The VirtualNodes are read
	// by the survey itself (virtualNodes).
	accounted := map[string]bool{virtualNodeFinalize: true}
	listed := map[schema.GroupVersionKind][]client.Object{}
	for _, h := range holders() {
		accounted[h.finalizer] = true
		for _, gvk := range h.kinds {
			if gvk == secretGVK && !u.options.ReleaseIdentitySecrets {
				found := u.identitySecretsHeld(ctx, ns, s, h)
				accounted[h.finalizer] = accounted[h.finalizer] && len(found) > 0
				out = append(out, found...)
				continue
			}
			objs, ok := listed[gvk]
			if !ok {
				var err error
				if objs, err = listMetadata(ctx, u.apiReader, gvk, client.InNamespace(ns.Name)); err != nil {
					if !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) && !meta.IsNoMatchError(err) {
						return nil, err
					}
					// a kind this Liqo does not install, or one the janitor may not list: the condition says
					accounted[h.finalizer] = false
					continue
				}
				listed[gvk] = objs
			}
			for _, obj := range objs {
				if slices.Contains(obj.GetFinalizers(), h.finalizer) {
					out = append(out, liqojanitor.LeftObject{Kind: gvk.Kind, Namespace: ns.Name, Name: obj.GetName(),
						HeldBy: "finalizer " + h.finalizer, Releasable: h.releasable(s.liqo, u.options), Next: h.next(s.liqo, u.options)})
				}
			}
		}
	}
	return append(out, unaccounted(ns, accounted, s, u.options)...), nil
}

// unaccounted is what the namespace controller reports and no listing explains: a Liqo finalizer on a kind
// the janitor could not read (named by the holder's kind and the count), or a finalizer it does not know.
func unaccounted(ns *corev1.Namespace, accounted map[string]bool, s *scope, o Options) []liqojanitor.LeftObject {
	known := map[string]holder{}
	for _, h := range holders() {
		known[h.finalizer] = h
	}
	remaining := finalizersRemaining(ns)
	var out []liqojanitor.LeftObject
	for _, finalizer := range slices.Sorted(maps.Keys(remaining)) {
		n := remaining[finalizer]
		if accounted[finalizer] {
			continue
		}
		if h, ok := known[finalizer]; ok {
			out = append(out, liqojanitor.LeftObject{Kind: h.kinds[0].Kind, Namespace: ns.Name,
				Name:   fmt.Sprintf("(%d, as the namespace controller reports: liqo-janitor may not list them)", n),
				HeldBy: "finalizer " + finalizer, Releasable: h.releasable(s.liqo, o), Next: h.next(s.liqo, o)})
			continue
		}
		out = append(out, liqojanitor.LeftObject{Kind: "(unknown kind)", Namespace: ns.Name,
			Name: fmt.Sprintf("(%d, as the namespace controller reports)", n), HeldBy: "finalizer " + finalizer,
			Next: "not a Liqo finalizer liqo-janitor knows: find them with kubectl api-resources --verbs=list --namespaced -o name | " +
				"xargs -n1 kubectl -n " + ns.Name + " get --ignore-not-found"})
	}
	return out
}

// identitySecretsHeld names the control-plane identity Secrets of a terminating tenant namespace that
// still carry crdreplicator.liqo.io/operator, when the janitor may not read Secrets (the opt-in is off):
// the namespace controller reports the finalizer, and the control-plane Identity names its Secret
// (status.kubeconfigSecretRef).
func (u *surveyor) identitySecretsHeld(ctx context.Context, ns *corev1.Namespace, s *scope, h holder) []liqojanitor.LeftObject {
	if finalizersRemaining(ns)[h.finalizer] == 0 {
		return nil
	}
	var ids authv1beta1.IdentityList
	if err := u.apiReader.List(ctx, &ids, client.InNamespace(ns.Name)); err != nil {
		return nil // the namespace's own report stays
	}
	var out []liqojanitor.LeftObject
	for _, id := range ids.Items {
		if id.Spec.Type != authv1beta1.ControlPlaneIdentityType || id.Status.KubeconfigSecretRef == nil {
			continue
		}
		out = append(out, liqojanitor.LeftObject{Kind: "Secret", Namespace: ns.Name, Name: id.Status.KubeconfigSecretRef.Name,
			HeldBy: "finalizer " + h.finalizer, Releasable: h.releasable(s.liqo, u.options), Next: h.next(s.liqo, u.options)})
	}
	return out
}

// finalizersRemaining reads the namespace controller's NamespaceFinalizersRemaining condition ("Some
// content in the namespace has finalizers remaining: f in 2 resource instances, g in 1 resource
// instances", k8s.io/kubernetes pkg/controller/namespace/deletion namespaced_resources_deleter.go).
func finalizersRemaining(ns *corev1.Namespace) map[string]int {
	out := map[string]int{}
	for _, c := range ns.Status.Conditions {
		if c.Type != corev1.NamespaceFinalizersRemaining || c.Status != corev1.ConditionTrue {
			continue
		}
		_, list, ok := strings.Cut(c.Message, ": ")
		if !ok {
			continue
		}
		for _, item := range strings.Split(list, ", ") {
			f, count, ok := strings.Cut(item, " in ")
			if !ok {
				continue
			}
			n, err := strconv.Atoi(strings.Fields(count + " x")[0])
			if err == nil && f != "" {
				out[f] = n
			}
		}
	}
	return out
}

// virtualNodes lists the cluster's VirtualNodes (spec.clusterID, the consumer's own field) and what holds
// each: its deletion waits for Liqo's routine (drain, virtual-kubelet Deployment, Node), or it is not
// being deleted.
func (u *surveyor) virtualNodes(ctx context.Context, s *scope, left podwatch.Left) ([]liqojanitor.LeftObject, error) {
	var vns offloadingv1beta1.VirtualNodeList
	if err := u.client.List(ctx, &vns); err != nil {
		return nil, fmt.Errorf("listing VirtualNodes: %w", err)
	}
	var out []liqojanitor.LeftObject
	for i := range vns.Items {
		vn := &vns.Items[i]
		if string(vn.Spec.ClusterID) != s.clusterID {
			continue
		}
		o := liqojanitor.LeftObject{Kind: virtualNodeKind, Namespace: vn.Namespace, Name: vn.Name}
		switch {
		case vn.DeletionTimestamp.IsZero():
			o.HeldBy = "not being deleted"
			o.Next = "Liqo deletes it with its ResourceSlice (liqoctl force unpeer, or deleting the tenant namespace)"
		case len(left[vn.Name]) > 0:
			o.HeldBy = "finalizer " + virtualNodeFinalize
			o.Next = fmt.Sprintf("%d pod(s) on its Node stay, which liqo-janitor may not delete (their own finalizers, or pods Liqo's "+
				"drain does not select); Liqo's deletion routine may wait for them (v1.0's drain always does): "+
				"kubectl get pods -A --field-selector spec.nodeName=%s", len(left[vn.Name]), vn.Name)
		default:
			o.HeldBy = "finalizer " + virtualNodeFinalize
			o.Next = "Liqo's VirtualNode deletion routine releases it after the drain, the virtual-kubelet Deployment and the Node " +
				"(one VirtualNode at a time: a stuck one holds the others); if it stays, see kubectl -n liqo logs deploy/liqo-controller-manager"
		}
		out = append(out, o)
	}
	return out, nil
}

// unpeeringValue is the unpeering record the pass writes with its cleanup record: what the survey
// found, its Since kept from the record on the ForeignCluster while the phase stays ("" when there was no
// survey, or in a dry run, which writes no record).
func (p *reporter) unpeeringValue(s *scope) string {
	u, ok := s.unpeeringFound()
	if !ok || p.options.DryRun {
		return ""
	}
	if prev, ok := liqojanitor.UnpeeringOf(s.fc.Annotations); ok && prev.Phase == u.Phase {
		u.Since = prev.Since
	}
	if u.Since == "" {
		u.Since = p.clock.Now().UTC().Format(time.RFC3339)
	}
	return u.String()
}

// noteLeaks adds to the unpeering record what Liqo leaks and nobody else says: once liqo-janitor released
// a control-plane identity Secret's crdreplicator.liqo.io/operator, Liqo's crd-replicator never stops that
// cluster's reflector (its Secret controller ignores the Secret's deletion when it no longer carries the
// finalizer: internal/crdReplicator/crdReplicator-operator.go Reconcile, v1.0.3 to v1.2.0), which keeps
// dialling the dead provider until the crd-replicator restarts.
func (p *reporter) noteLeaks(s *scope, next progress) {
	if next.done[secretGVK.Kind] > 0 {
		s.noteUnpeering(reflectorLeak(s.clusterID))
	}
}

// reflectorLeak says that Liqo's crd-replicator keeps a released cluster's reflector, and what to do.
func reflectorLeak(clusterID string) string {
	return fmt.Sprintf("liqo-janitor released the identity Secret of cluster %s: Liqo's crd-replicator keeps its reflector and "+
		"retries the dead endpoint until it restarts (kubectl -n liqo rollout restart deployment liqo-crd-replicator)", clusterID)
}

// unpeered makes the unpeering visible after the pass wrote its record (janitor rule 13): one
// UnpeeringComplete event on the record's transition to complete — once per unpeering, whichever replica
// writes it — and an UnpeeringInProgress event whenever what is left changes; the
// liqo_janitor_unpeering_objects gauge. A dry run writes no record and sends no unpeering event.
func (p *reporter) unpeered(ctx context.Context, s *scope) {
	next, ok := s.unpeeringFound()
	if !ok {
		return
	}
	p.memory.unpeeringLeft(s.fc, next)
	p.publishUnpeering()
	pinnedVolumesGauge.Set(float64(p.memory.pinnedVolumes()))
	if p.options.DryRun {
		return
	}
	prev, _ := liqojanitor.UnpeeringOf(s.fc.Annotations)
	switch {
	case next.Complete() && !prev.Complete():
		ctrl.LoggerFrom(ctx).Info("Unpeering complete", "tenantNamespace", prev.TenantNamespace)
		p.recorder.Eventf(s.fc, nil, "Normal", "UnpeeringComplete", "Unpeer",
			"Unpeering complete: the consumer's side of the peering with cluster %s is gone (%s); the ForeignCluster may now be deleted%s%s",
			s.clusterID, liqojanitor.UnpeeringCompleteWhat, reasonGiven(s.fc), pinnedLine(next))
	case !next.Complete() && leftChanged(prev, next):
		p.recorder.Eventf(s.fc, nil, "Normal", "UnpeeringInProgress", "Unpeer", "%s", truncate(next.Summary(), maxEventMessage))
	}
}

// pinnedLine is the second line of the UnpeeringComplete event: the volumes pinned to the cluster, if any.
func pinnedLine(u liqojanitor.Unpeering) string {
	if line := liqojanitor.PinnedVolumesLine(u.PinnedVolumes, u.ClusterID); line != "" {
		return "\n" + line
	}
	return ""
}

// leftChanged reports whether the objects left, and what holds them, differ between two records.
func leftChanged(prev, next liqojanitor.Unpeering) bool {
	return prev.Phase != next.Phase || prev.More != next.More || prev.PinnedVolumes != next.PinnedVolumes || !slices.Equal(prev.Left, next.Left) || !slices.Equal(prev.Notes, next.Notes)
}

// maxEventMessage bounds an event's message (the API server refuses more than 1 KiB in a note).
const maxEventMessage = 1000

// publishUnpeering sets liqo_janitor_unpeering_objects to the sums, per kind and releasability, over the
// remembered clusters.
func (p *reporter) publishUnpeering() {
	unpeeringObjects.Reset()
	for key, n := range p.memory.unpeeringByKind() {
		unpeeringObjects.WithLabelValues(key.kind, strconv.FormatBool(key.releasable)).Set(float64(n))
	}
}
