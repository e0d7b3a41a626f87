package unpeering

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// holder is what the janitor knows of one Liqo finalizer on the consumer: the kinds that carry it,
// whether liqo-janitor releases it (given the Liqo version), and the next step while it stays.
type holder struct {
	finalizer string
	kinds     []schema.GroupVersionKind
	// releasable says whether liqo-janitor releases it for the dead cluster c (on the Liqo installed, with
	// the janitor's options).
	releasable func(c *Cluster) bool
	// next is the next step while it stays.
	next func(c *Cluster) string
}

func never(*Cluster) bool  { return false }
func always(*Cluster) bool { return true }
func say(s string) func(*Cluster) string {
	return func(*Cluster) string { return s }
}

// GVKs the survey lists in a terminating tenant namespace (metadata-only, live), besides Liqo's that the
// janitor releases from (liqojanitor's, liqo.go). The networking and IPAM kinds are named, not imported:
// Liqo's networking API package imports the Prometheus Operator's.
var (
	networkingGV        = schema.GroupVersion{Group: "networking.liqo.io", Version: "v1beta1"}
	secretGVK           = corev1.SchemeGroupVersion.WithKind("Secret")
	ipamGV              = schema.GroupVersion{Group: "ipam.liqo.io", Version: "v1alpha1"}
	routeConfigGVK      = networkingGV.WithKind("RouteConfiguration")
	firewallConfigGVK   = networkingGV.WithKind("FirewallConfiguration")
	wgGatewayServerGVK  = networkingGV.WithKind("WgGatewayServer")
	wgGatewayClientGVK  = networkingGV.WithKind("WgGatewayClient")
	tenantGVK           = authv1beta1.GroupVersion.WithKind("Tenant")
	ipGVK               = ipamGV.WithKind("IP")
	networkGVK          = ipamGV.WithKind("Network")
	virtualNodeKind     = "VirtualNode"
	nodeKind            = "Node"
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
			releasable: func(c *Cluster) bool { return c.ReleaseIdentitySecrets },
			next: func(c *Cluster) string {
				switch {
				case c.ReleaseIdentitySecrets:
					return "liqo-janitor releases it once no replicated object is left in its namespace"
				case c.Liqo.Older(1):
					return "Liqo v1.0 never releases it for a dead provider: turn on liqo-janitor's opt-in release " +
						"(chart value janitor.releaseIdentitySecrets=true, flag --release-identity-secrets)"
				}
				return "Liqo ≥ v1.1's crd-replicator releases it once the mark is honoured and no replicated object is left; " +
					"if it stays, liqo-janitor's opt-in release does it (chart value janitor.releaseIdentitySecrets=true)"
			}},
		{finalizer: liqojanitor.LegacyFabricFinalizer, kinds: []schema.GroupVersionKind{liqojanitor.InternalFabricGVK},
			releasable: func(c *Cluster) bool { return c.Liqo.Before(2) },
			next: func(c *Cluster) string {
				if c.Liqo.Before(2) {
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

// holdersIn lists, in a terminating tenant namespace, the objects that carry one of Liqo's finalizers,
// and what the namespace controller says remains that no listing explains.
func (u *survey) holdersIn(ctx context.Context, ns *corev1.Namespace) ([]liqojanitor.LeftObject, error) {
	var out []liqojanitor.LeftObject
	// accounted are the finalizers whose every kind the survey read: what it found is the truth, and the
	// namespace controller's condition, written on its last retry, may be stale. The VirtualNodes are read
	// by the survey itself (virtualNodes).
	accounted := map[string]bool{virtualNodeFinalize: true}
	listed := map[schema.GroupVersionKind][]metav1.PartialObjectMetadata{}
	for _, h := range holders() {
		accounted[h.finalizer] = true
		for _, gvk := range h.kinds {
			if gvk == secretGVK && !u.c.ReleaseIdentitySecrets {
				found := u.identitySecretsHeld(ctx, ns, h)
				accounted[h.finalizer] = accounted[h.finalizer] && len(found) > 0
				out = append(out, found...)
				continue
			}
			objs, ok := listed[gvk]
			if !ok {
				var err error
				if objs, err = listIn(ctx, u.live, gvk, ns.Name); err != nil {
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
				if slices.Contains(obj.Finalizers, h.finalizer) {
					out = append(out, liqojanitor.LeftObject{Kind: gvk.Kind, Namespace: ns.Name, Name: obj.Name,
						HeldBy: "finalizer " + h.finalizer, Releasable: h.releasable(u.c), Next: h.next(u.c)})
				}
			}
		}
	}
	return append(out, unaccounted(ns, accounted, u.c)...), nil
}

// listIn lists the objects of gvk in namespace, metadata-only, through r.
func listIn(ctx context.Context, r client.Reader, gvk schema.GroupVersionKind, namespace string) ([]metav1.PartialObjectMetadata, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := r.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing %s: %w", gvk.Kind, err)
	}
	return list.Items, nil
}

// unaccounted is what the namespace controller reports and no listing explains: a Liqo finalizer on a kind
// the janitor could not read (named by the holder's kind and the count), or a finalizer it does not know.
func unaccounted(ns *corev1.Namespace, accounted map[string]bool, c *Cluster) []liqojanitor.LeftObject {
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
				HeldBy: "finalizer " + finalizer, Releasable: h.releasable(c), Next: h.next(c)})
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
func (u *survey) identitySecretsHeld(ctx context.Context, ns *corev1.Namespace, h holder) []liqojanitor.LeftObject {
	if finalizersRemaining(ns)[h.finalizer] == 0 {
		return nil
	}
	var ids authv1beta1.IdentityList
	if err := u.live.List(ctx, &ids, client.InNamespace(ns.Name)); err != nil {
		return nil // the namespace's own report stays
	}
	var out []liqojanitor.LeftObject
	for _, id := range ids.Items {
		if id.Spec.Type != authv1beta1.ControlPlaneIdentityType || id.Status.KubeconfigSecretRef == nil {
			continue
		}
		out = append(out, liqojanitor.LeftObject{Kind: "Secret", Namespace: ns.Name, Name: id.Status.KubeconfigSecretRef.Name,
			HeldBy: "finalizer " + h.finalizer, Releasable: h.releasable(u.c), Next: h.next(u.c)})
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
