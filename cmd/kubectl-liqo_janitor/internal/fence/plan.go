package fence

import (
	"context"
	"fmt"
	"slices"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// Plan is what fence would remove on the provider: the consumer's ShadowPods and the pods Liqo's
// shadowpod controller made from them, per namespace, and with --all its tenant namespace's copies.
type Plan struct {
	ForeignCluster    string `json:"foreignCluster"`
	ProviderClusterID string `json:"providerClusterID"`
	LocalClusterID    string `json:"localClusterID"`
	// Provider is the provider's API server, and Via how fence reaches it.
	Provider string `json:"provider"`
	Via      string `json:"via"`
	// Kept is the API server liqo-janitor kept for the mark: fence went on only once Provider was that
	// server and its certificate verified against the CA kept with it.
	Kept *Kept `json:"kept"`
	// ProviderLiqoClusterID is what the provider's own cluster-ID ConfigMap says (fence goes no further
	// unless it is ProviderClusterID), and ProviderLiqoClusterIDFrom that ConfigMap.
	ProviderLiqoClusterID     string             `json:"providerLiqoClusterID"`
	ProviderLiqoClusterIDFrom string             `json:"providerLiqoClusterIDFrom"`
	Namespaces                []PlannedNamespace `json:"namespaces"`
	All                       bool               `json:"all"`
	TenantNamespaces          []PlannedTenant    `json:"tenantNamespaces,omitempty"`

	shadowPods []offloadingv1beta1.ShadowPod
	tenants    []*tenantFootprint
}

// PlannedNamespace is one namespace of the provider where the consumer's ShadowPods are.
type PlannedNamespace struct {
	Namespace  string `json:"namespace"`
	ShadowPods int    `json:"shadowPods"`
	Pods       int    `json:"pods"`
}

// PlannedTenant is the consumer's tenant namespace on the provider: the copies fence --all deletes, in
// Liqo's order, and the remote namespaces Liqo then deletes.
type PlannedTenant struct {
	Namespace        string   `json:"namespace"`
	ResourceSlices   int      `json:"resourceSlices"`
	NamespaceMaps    int      `json:"namespaceMaps"`
	Renews           int      `json:"renews"`
	RemoteNamespaces []string `json:"remoteNamespaces"`
}

// tenantFootprint is what fence --all found in one tenant namespace.
type tenantFootprint struct {
	namespace        string
	resourceSlices   []client.Object
	namespaceMaps    []client.Object
	renews           []client.Object
	remoteNamespaces []client.Object
}

// shadowPodSelector selects the ShadowPods the consumer localID reflected to the provider providerID.
func shadowPodSelector(localID, providerID string) client.MatchingLabels {
	return client.MatchingLabels{liqojanitor.ShadowPodOriginLabel: localID, liqojanitor.ShadowPodDestinationLabel: providerID}
}

// ownsShadowPod re-checks, on the object itself, what the selector asked the API server for.
func (s *scope) ownsShadowPod(obj client.Object) bool {
	l := obj.GetLabels()
	return l[liqojanitor.ShadowPodOriginLabel] == s.localID && l[liqojanitor.ShadowPodDestinationLabel] == s.providerID
}

// ownsCopy re-checks that obj is a copy the consumer's crdReplicator made.
func (s *scope) ownsCopy(obj client.Object) bool {
	l := obj.GetLabels()
	return l[liqojanitor.ReplicationStatusLabel] == "true" && l[liqojanitor.ReplicationOriginLabel] == s.localID
}

// computePlan lists, on the provider, what fence removes.
func computePlan(ctx context.Context, s *scope) (*Plan, error) {
	p := &Plan{ForeignCluster: s.fc.Name, ProviderClusterID: s.providerID, LocalClusterID: s.localID,
		Provider: s.provider.host, Via: s.provider.via, ProviderLiqoClusterID: s.providerRead.id,
		ProviderLiqoClusterIDFrom: s.providerRead.from, All: s.all, Kept: s.kept.planned(s.ignored)}
	if err := p.listShadowPods(ctx, s); err != nil {
		return nil, err
	}
	if !s.all {
		return p, nil
	}
	return p, p.listTenants(ctx, s)
}

func (p *Plan) listShadowPods(ctx context.Context, s *scope) error {
	var list offloadingv1beta1.ShadowPodList
	if err := s.provider.c.List(ctx, &list, shadowPodSelector(s.localID, s.providerID)); err != nil {
		return providerErr("listing ShadowPods in every namespace", err)
	}
	p.shadowPods = slices.DeleteFunc(list.Items, func(sp offloadingv1beta1.ShadowPod) bool { return !s.ownsShadowPod(&sp) })
	byNS := map[string][]types.UID{}
	for _, sp := range p.shadowPods {
		byNS[sp.Namespace] = append(byNS[sp.Namespace], sp.UID)
	}
	for _, ns := range sortedNamespaces(byNS) {
		pods, err := ownedPods(ctx, s.provider.c, ns, byNS[ns])
		if err != nil {
			return err
		}
		p.Namespaces = append(p.Namespaces, PlannedNamespace{Namespace: ns, ShadowPods: len(byNS[ns]), Pods: len(pods)})
	}
	return nil
}

func sortedNamespaces(m map[string][]types.UID) []string {
	out := make([]string, 0, len(m))
	for ns := range m {
		out = append(out, ns)
	}
	slices.Sort(out)
	return out
}

// ownedPods are the pods of namespace ns whose controller is one of the ShadowPods owners: Liqo's shadowpod
// controller creates each pod, of the ShadowPod's name and labels, with a controller reference to its
// ShadowPod (Reconciler.Reconcile, pkg/liqo-controller-manager/offloading/shadowpod-controller/shadowpod_controller.go:
// ctrl.SetControllerReference, which also sets blockOwnerDeletion; v1.0.3, v1.1.0 and v1.2.0), so the
// garbage collector deletes it once the ShadowPod is gone. fence deletes no pod itself.
func ownedPods(ctx context.Context, c client.Client, ns string, owners []types.UID) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return nil, providerErr("listing pods in namespace "+ns, err)
	}
	return slices.DeleteFunc(pods.Items, func(pod corev1.Pod) bool {
		ref := metav1.GetControllerOf(&pod)
		return ref == nil || ref.Kind != "ShadowPod" || !slices.Contains(owners, ref.UID)
	}), nil
}

// listTenants finds the consumer's tenant namespaces on the provider and the copies in them.
func (p *Plan) listTenants(ctx context.Context, s *scope) error {
	nss, err := liqojanitor.TenantNamespaces(ctx, s.provider.c, s.localID)
	if err != nil {
		return providerErr("listing the tenant namespaces of this consumer", err)
	}
	for _, ns := range nss.Items {
		t, err := listTenant(ctx, s, ns.Name)
		if err != nil {
			return err
		}
		p.tenants = append(p.tenants, t)
		p.TenantNamespaces = append(p.TenantNamespaces, t.planned())
	}
	return nil
}

func listTenant(ctx context.Context, s *scope, ns string) (*tenantFootprint, error) {
	t := &tenantFootprint{namespace: ns}
	var err error
	sel := []client.ListOption{client.InNamespace(ns), client.MatchingLabels{liqojanitor.ReplicationStatusLabel: "true", liqojanitor.ReplicationOriginLabel: s.localID}}
	if t.resourceSlices, err = listCopies(ctx, s, &authv1beta1.ResourceSliceList{}, sel); err != nil {
		return nil, err
	}
	if t.namespaceMaps, err = listCopies(ctx, s, &offloadingv1beta1.NamespaceMapList{}, sel); err != nil {
		return nil, err
	}
	if t.renews, err = listCopies(ctx, s, &authv1beta1.RenewList{}, sel); err != nil {
		return nil, err
	}
	t.remoteNamespaces, err = remoteNamespaces(ctx, s.provider.c, t.namespaceMaps)
	return t, err
}

// listCopies lists the crdReplicator's copies of one kind, each re-checked.
func listCopies(ctx context.Context, s *scope, list client.ObjectList, opts []client.ListOption) ([]client.Object, error) {
	if err := s.provider.c.List(ctx, list, opts...); err != nil {
		return nil, providerErr(fmt.Sprintf("listing %T", list), err)
	}
	var out []client.Object
	switch l := list.(type) {
	case *authv1beta1.ResourceSliceList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *offloadingv1beta1.NamespaceMapList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *authv1beta1.RenewList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	}
	return slices.DeleteFunc(out, func(o client.Object) bool { return !s.ownsCopy(o) }), nil
}

// remoteNamespaces are the namespaces Liqo's namespacemap controller created for the NamespaceMap copies
// maps: annotated liqojanitor.ManagedByNamespaceMapAnnotation=<namespace>/<name> (createNamespace,
// pkg/liqo-controller-manager/offloading/namespacemap-controller/enforcement.go). On a copy's deletion the
// same controller deletes exactly those namespaces (NamespaceMapDeletionProcess → ensureNamespacesDeletion
// → deleteNamespace, which skips a namespace without the annotation) and then removes its finalizer
// (finalizer.go, RemoveNamespaceMapControllerFinalizer). fence therefore deletes only the NamespaceMap copy
// and waits for Liqo to delete these: deleting them itself would race that controller, which re-creates a
// missing one while the map lives (ensureNamespacesExistence). The same in Liqo v1.0.3, v1.1.0 and v1.2.0.
func remoteNamespaces(ctx context.Context, c client.Client, maps []client.Object) ([]client.Object, error) {
	if len(maps) == 0 {
		return nil, nil
	}
	keys := map[string]bool{}
	for _, nm := range maps {
		keys[nm.GetNamespace()+"/"+nm.GetName()] = true
	}
	var nss corev1.NamespaceList
	if err := c.List(ctx, &nss); err != nil {
		return nil, providerErr("listing namespaces", err)
	}
	var out []client.Object
	for i := range nss.Items {
		ns := &nss.Items[i]
		if keys[ns.Annotations[liqojanitor.ManagedByNamespaceMapAnnotation]] && ns.Labels[liqojanitor.TenantNamespaceLabel] == "" {
			out = append(out, ns)
		}
	}
	return out, nil
}

func (t *tenantFootprint) planned() PlannedTenant {
	p := PlannedTenant{Namespace: t.namespace, ResourceSlices: len(t.resourceSlices), NamespaceMaps: len(t.namespaceMaps),
		Renews: len(t.renews), RemoteNamespaces: []string{}}
	for _, ns := range t.remoteNamespaces {
		p.RemoteNamespaces = append(p.RemoteNamespaces, ns.GetName())
	}
	return p
}

// empty: the plan found nothing of this consumer on the provider.
func (p *Plan) empty() bool {
	if len(p.shadowPods) > 0 {
		return false
	}
	for _, t := range p.tenants {
		if len(t.resourceSlices)+len(t.namespaceMaps)+len(t.renews)+len(t.remoteNamespaces) > 0 {
			return false
		}
	}
	return true
}
