package liqojanitor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The predicates and lookups on ForeignClusters, and the lookups of what Liqo keeps of a cluster, each
// done as Liqo does it (its pkg/utils/foreigncluster getters and conditions): what the gate, the janitor
// and the plugin read alike. Reading only: nothing here writes.

// IsMarked reports whether annotations carry the mark with the one value Liqo honours.
func IsMarked(annotations map[string]string) bool {
	return annotations[MarkAnnotation] == MarkValue
}

// Confirmed reports whether fc carries the second key: the confirmation equals its (non-empty)
// spec.clusterID.
func Confirmed(fc *liqov1beta1.ForeignCluster) bool {
	return fc.Spec.ClusterID != "" && fc.Annotations[ConfirmAnnotation] == string(fc.Spec.ClusterID)
}

// MarkedAt is the gate's marked-at stamp, and whether fc carries a readable one.
func MarkedAt(fc *liqov1beta1.ForeignCluster) (time.Time, bool) {
	at, err := time.Parse(time.RFC3339, fc.Annotations[MarkedAtAnnotation])
	return at, err == nil
}

// MaxClockSkew is how far in the future a marked-at stamp may lie and still be believed: the gate stamps
// with its own clock, the janitor reads with its own, both in this cluster. A stamp further ahead was not
// the gate's (a mark made while the webhook was down, whose request carried it) and counts as no stamp.
const MaxClockSkew = 30 * time.Second

// StampFromTheFuture reports whether fc's marked-at lies more than MaxClockSkew after now.
func StampFromTheFuture(fc *liqov1beta1.ForeignCluster, now time.Time) bool {
	at, ok := MarkedAt(fc)
	return ok && at.After(now.Add(MaxClockSkew))
}

// Paused reports whether an operator paused the janitor on fc.
func Paused(fc *liqov1beta1.ForeignCluster) bool {
	return fc.Annotations[PausedAnnotation] == "true"
}

// APIServerStatus returns fc's first APIServerStatus condition, the one Liqo's own IsDead reads
// (pkg/utils/foreigncluster/conditions.go, Liqo v1.1 and v1.2), or nil if it has none.
func APIServerStatus(fc *liqov1beta1.ForeignCluster) *liqov1beta1.Condition {
	for i := range fc.Status.Conditions {
		if fc.Status.Conditions[i].Type == liqov1beta1.APIServerStatusCondition {
			return &fc.Status.Conditions[i]
		}
	}
	return nil
}

// Reachable reports whether Liqo's API-server checker sees fc's provider answering (APIServerStatus
// Established). No condition at all counts as unreachable, as in Liqo's IsDead.
func Reachable(fc *liqov1beta1.ForeignCluster) bool {
	c := APIServerStatus(fc)
	return c != nil && c.Status == liqov1beta1.ConditionStatusEstablished
}

// ForeignClustersOf returns the ForeignClusters of fcs that Liqo could take for clusterID's: those whose
// spec.clusterID is clusterID, and those its own lookup finds by the label liqo.io/remote-cluster-id of that
// value (GetForeignClusterByID, pkg/utils/foreigncluster/getters.go, Liqo v1.0.3 to v1.2.0: a label
// selector, the oldest match wins). Liqo probes, drains and replicates for only the one it finds.
func ForeignClustersOf(fcs []liqov1beta1.ForeignCluster, clusterID liqov1beta1.ClusterID) []*liqov1beta1.ForeignCluster {
	var out []*liqov1beta1.ForeignCluster
	for i := range fcs {
		if fcs[i].Spec.ClusterID == clusterID || fcs[i].Labels[RemoteClusterIDLabel] == string(clusterID) {
			out = append(out, &fcs[i])
		}
	}
	return out
}

// FoundByLiqo reports whether fc is the object Liqo's own lookup finds for its cluster ID: its
// liqo.io/remote-cluster-id label equals its spec.clusterID (GetForeignClusterByID selects by that label).
// An object without it is never probed again, so its APIServerStatus is frozen.
func FoundByLiqo(fc *liqov1beta1.ForeignCluster) bool {
	return fc.Spec.ClusterID != "" && fc.Labels[RemoteClusterIDLabel] == string(fc.Spec.ClusterID)
}

// Liqo's evidence that a provider is alive, beyond its API server: the data plane. Liqo's foreigncluster
// controller derives status.modules.networking's NetworkConnectionStatus from the Connection resource the
// gateway's connection checker keeps (foreigncluster-controller/status.go handleConnectionStatus, the same
// in Liqo v1.0.3, v1.1.0 and v1.2.0: Connected → Established, Connecting → Pending, anything else →
// Error; no Connection → the condition is deleted). A provider whose API server is down but whose tunnel
// is Established still runs its pods, which keep serving and reaching the consumer: it is alive, and
// releasing the consumer's copies would run every workload twice. No condition at all (the networking
// module off, or no Connection) is no evidence either way.

// TunnelStatus returns fc's NetworkConnectionStatus condition, or nil if Liqo keeps none for it.
func TunnelStatus(fc *liqov1beta1.ForeignCluster) *liqov1beta1.Condition {
	for i := range fc.Status.Modules.Networking.Conditions {
		if c := &fc.Status.Modules.Networking.Conditions[i]; c.Type == liqov1beta1.NetworkConnectionStatusCondition {
			return c
		}
	}
	return nil
}

// TunnelUp reports whether Liqo's data plane to fc's provider is up (NetworkConnectionStatus Established).
func TunnelUp(fc *liqov1beta1.ForeignCluster) bool {
	c := TunnelStatus(fc)
	return c != nil && c.Status == liqov1beta1.ConditionStatusEstablished
}

// UnreachableByLiqo reports whether Liqo's evidence says fc's provider cannot be reached at all: its
// API server is not Established (or Liqo keeps no APIServerStatus for it) and its tunnel is not up.
func UnreachableByLiqo(fc *liqov1beta1.ForeignCluster) bool {
	return !Reachable(fc) && !TunnelUp(fc)
}

// The lookups, each as Liqo does it: reads through a client.Reader, writing nothing.

// LocalClusterID reads this cluster's Liqo cluster ID: CLUSTER_ID of the ConfigMap in Liqo's namespace
// labelled as Liqo labels it (app.kubernetes.io/name=clusterid-configmap), selected by label as Liqo does
// (pkg/utils/cluster_info.go GetClusterIDWithControllerClient, v1.0.3 to v1.2.0). Several that disagree, or none, are an error that
// names what was looked for.
func LocalClusterID(ctx context.Context, reader client.Reader, liqoNamespace string) (string, error) {
	var cms corev1.ConfigMapList
	if err := reader.List(ctx, &cms, client.InNamespace(liqoNamespace),
		client.MatchingLabels{ClusterIDConfigMapNameLabel: ClusterIDConfigMapNameValue}); err != nil {
		return "", fmt.Errorf("listing ConfigMaps in namespace %q: %w", liqoNamespace, err)
	}
	ids := map[string]bool{}
	for i := range cms.Items {
		if id := cms.Items[i].Data[ClusterIDConfigMapKey]; id != "" {
			ids[id] = true
		}
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("no ConfigMap labelled %s=%s with a %s key in namespace %q",
			ClusterIDConfigMapNameLabel, ClusterIDConfigMapNameValue, ClusterIDConfigMapKey, liqoNamespace)
	case 1:
		for id := range ids {
			return id, nil
		}
	}
	return "", fmt.Errorf("several cluster-ID ConfigMaps in namespace %q disagree: %s", liqoNamespace,
		strings.Join(slices.Sorted(maps.Keys(ids)), ", "))
}

// TenantNamespaces lists clusterID's tenant namespaces as Liqo finds the one of a cluster: labelled
// liqo.io/remote-cluster-id=<clusterID> and carrying liqo.io/tenant-namespace, whatever its value
// (pkg/tenantNamespace/namespaceManager.go tenantNamespaceManager.GetNamespace, the same selector in Liqo
// v1.0.3, v1.1.0 and v1.2.0: RemoteClusterID Equals the cluster, TenantNamespaceLabel Exists). Liqo takes
// exactly one; the caller decides what none or several mean. The error is the List's, unwrapped, so that a
// caller can tell a refusal (apierrors.IsForbidden). The gate's and the janitor's unpeering survey, the
// janitor's fabric release and the plugin's fence (on the consumer, and on the provider for this consumer)
// all look a tenant namespace up here.
func TenantNamespaces(ctx context.Context, r client.Reader, clusterID string) (corev1.NamespaceList, error) {
	var list corev1.NamespaceList
	err := r.List(ctx, &list, tenantNamespacesOf(clusterID))
	return list, err
}

// tenantNamespacesOf is the selector of TenantNamespaces: clusterID's tenant namespaces as Liqo finds them.
func tenantNamespacesOf(clusterID string) client.MatchingLabelsSelector {
	return client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(labels.Set{RemoteClusterIDLabel: clusterID}).
		Add(*tenantNamespaceExists)}
}

// tenantNamespaceExists is the requirement that a namespace carries TenantNamespaceLabel.
var tenantNamespaceExists = func() *labels.Requirement {
	r, err := labels.NewRequirement(TenantNamespaceLabel, selection.Exists, nil)
	utilruntime.Must(err)
	return r
}()

// VirtualNodeNames are the names of clusterID's VirtualNodes among vns (spec.clusterID, the consumer's own
// field), without a name another cluster's VirtualNode also carries (janitor rule 3's tie of a Node to a
// cluster makes that Node nobody's): the nodes a volume pinned to the cluster may have been selected for.
// The janitor and `release-volumes` read them alike.
func VirtualNodeNames(vns []offloadingv1beta1.VirtualNode, clusterID string) map[string]bool {
	out, other := map[string]bool{}, map[string]bool{}
	for _, vn := range vns {
		if string(vn.Spec.ClusterID) == clusterID {
			out[vn.Name] = true
		} else {
			other[vn.Name] = true
		}
	}
	for name := range other {
		delete(out, name)
	}
	return out
}

// What is left of a peering: the objects of PeeringKinds (liqo.go) that make Liqo re-create a deleted
// ForeignCluster.

// PeeringCommands are the kubectl commands that show, for a person, every object of PeeringKinds that
// carries clusterID.
func PeeringCommands(clusterID string) string {
	var namespaced []string
	for _, k := range PeeringKinds {
		if k.GVK.Group != "" {
			namespaced = append(namespaced, k.Resource+"."+k.GVK.Group)
		}
	}
	return fmt.Sprintf("kubectl get %s -A -l %s=%s; kubectl get nodes -l %s=%s,%s=%s", strings.Join(namespaced, ","),
		RemoteClusterIDLabel, clusterID, NodeTypeLabel, VirtualNodeType, RemoteClusterIDLabel, clusterID)
}

// selector selects the objects of k that carry clusterID, as Liqo's watch and enqueuer see them.
func (k PeeringKind) selector(clusterID string) client.MatchingLabels {
	labels := client.MatchingLabels{RemoteClusterIDLabel: clusterID}
	for key, value := range k.Labels {
		labels[key] = value
	}
	return labels
}

// PeeringObject is one object left that would make Liqo re-create the ForeignCluster.
type PeeringObject struct {
	Kind, Namespace, Name string
	// Terminating: it is being deleted (it still counts: its deletion is itself an event Liqo acts on).
	Terminating bool
	// Finalizers are what holds it while it terminates.
	Finalizers []string
}

// String names the object for a person: "Tenant liqo-tenant-x/x (Terminating)".
func (o PeeringObject) String() string {
	name := o.Name
	if o.Namespace != "" {
		name = o.Namespace + "/" + o.Name
	}
	if o.Terminating {
		return o.Kind + " " + name + " (Terminating)"
	}
	return o.Kind + " " + name
}

// PeeringLeft lists live, metadata only, the objects of every PeeringKind that carry clusterID, in any
// namespace: at most limit of each kind (0: all), the kinds read at once (a deletion waits for the
// slowest, not for the sum). A kind the API server does not serve has no objects (a Liqo without it); any
// other error is returned (the caller fails closed: it cannot rule them out).
func PeeringLeft(ctx context.Context, r client.Reader, clusterID string, limit int64) ([]PeeringObject, error) {
	if clusterID == "" {
		return nil, nil
	}
	found := make([][]PeeringObject, len(PeeringKinds))
	errs := make([]error, len(PeeringKinds))
	var wg sync.WaitGroup
	for i, k := range PeeringKinds {
		wg.Go(func() { found[i], errs[i] = k.list(ctx, r, clusterID, limit) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return slices.Concat(found...), nil
}

// list lists the objects of k that carry clusterID (none when the API server does not serve k).
func (k PeeringKind) list(ctx context.Context, r client.Reader, clusterID string, limit int64) ([]PeeringObject, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(k.GVK.GroupVersion().WithKind(k.GVK.Kind + "List"))
	opts := []client.ListOption{k.selector(clusterID)}
	if limit > 0 {
		opts = append(opts, client.Limit(limit))
	}
	if err := r.List(ctx, list, opts...); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing %s labelled %s=%s: %w", k.GVK.Kind, RemoteClusterIDLabel, clusterID, err)
	}
	out := make([]PeeringObject, 0, len(list.Items))
	for i := range list.Items {
		o := &list.Items[i]
		out = append(out, PeeringObject{Kind: k.GVK.Kind, Namespace: o.Namespace, Name: o.Name,
			Terminating: !o.DeletionTimestamp.IsZero(), Finalizers: o.Finalizers})
	}
	return out, nil
}
