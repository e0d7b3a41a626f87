package liqojanitor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What makes Liqo re-create a deleted ForeignCluster (gate rule 16, janitor rule 13). Liqo's foreigncluster
// controller watches these kinds, and for every event on an object of them that carries
// liqo.io/remote-cluster-id=<id> — in any namespace, being deleted or not, its own deletion included — it
// looks the ForeignCluster of <id> up and, when there is none, creates one named <id> with only that label:
// no mark, so Liqo ≥ v1.1 takes the provider for alive again
// (pkg/liqo-controller-manager/core/foreigncluster-controller/foreigncluster_controller.go SetupWithManager
// and foreignclusterEnqueuer, through pkg/utils GetClusterIDFromLabels; the same watches, label and
// creation in Liqo v1.0.3, v1.1.0 and v1.2.0). Nodes count only when labelled liqo.io/type=virtual-node
// (the watch's virtualNodePredicate). A namespace is none of them: a namespace that only carries Liqo's
// tenant labels re-creates nothing, and one that holds such objects counts through them.
//
// The kinds are named, not imported, for the networking group: Liqo's networking API package imports the
// Prometheus Operator's. Every version below is the one served by Liqo v1.0.3, v1.1.0 and v1.2.0 alike.

// PeeringKind is one kind whose objects make Liqo re-create the ForeignCluster of the cluster ID they carry.
type PeeringKind struct {
	GVK schema.GroupVersionKind
	// Resource is its resource name (what RBAC and kubectl name).
	Resource string
	// Labels are the labels an object must also carry for Liqo's watch to see it (a Node: virtual only).
	Labels map[string]string
}

// liqoNetworkingGV is Liqo's networking API group (apis/networking/v1beta1 groupversion_info.go).
var liqoNetworkingGV = schema.GroupVersion{Group: "networking.liqo.io", Version: "v1beta1"}

// PeeringKinds are the kinds Liqo's foreigncluster controller watches with its enqueuer, in its order
// (foreigncluster_controller.go SetupWithManager, v1.0.3 to v1.2.0). The gate needs list on each (webhook
// gate.go) and so does the janitor (report_unpeering.go): keep their RBAC markers with this list.
var PeeringKinds = []PeeringKind{
	{GVK: liqoNetworkingGV.WithKind("Configuration"), Resource: "configurations"},
	{GVK: liqoNetworkingGV.WithKind("Connection"), Resource: "connections"},
	{GVK: liqoNetworkingGV.WithKind("GatewayServer"), Resource: "gatewayservers"},
	{GVK: liqoNetworkingGV.WithKind("GatewayClient"), Resource: "gatewayclients"},
	{GVK: authv1beta1.GroupVersion.WithKind("Tenant"), Resource: "tenants"},
	{GVK: authv1beta1.GroupVersion.WithKind("Identity"), Resource: "identities"},
	{GVK: offloadingv1beta1.SchemeGroupVersion.WithKind("VirtualNode"), Resource: "virtualnodes"},
	{GVK: corev1.SchemeGroupVersion.WithKind("Node"), Resource: "nodes", Labels: map[string]string{NodeTypeLabel: VirtualNodeType}},
}

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
