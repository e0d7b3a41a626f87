package janitor

import (
	"context"
	"errors"
	"fmt"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor/internal/podwatch"
)

// RBAC of the janitor (generated into manifests/chart/liqo-janitor/files/role.yaml by `make manifests`).
// Secrets are not here: their RBAC ships in the opt-in kustomize component for --release-identity-secrets.
// +kubebuilder:rbac:groups=core.liqo.io,resources=foreignclusters,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=authentication.liqo.io,resources=resourceslices;renews,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=offloading.liqo.io,resources=namespacemaps;namespaceoffloadings,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=offloading.liqo.io,resources=virtualnodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes;namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// ReportingController is the reportingController of every event the janitor writes; the chart's events
// policy lets only the janitor's ServiceAccount write events under that name, so the plugin can trust them.
const ReportingController = liqojanitor.Name

// metadataOnly returns a metadata-only object of gvk, to watch and cache without spec or status.
func metadataOnly(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	return obj
}

// CacheByObject narrows the manager's caches to what the janitor reads: our own replicated copies of
// ResourceSlices and Renews, virtual Nodes, namespaces that carry Liqo's scheduling label, and (opt-in)
// control-plane identity Secrets, all metadata-only and filtered by label on the API server. Pods are
// never cached (see package podwatch). The janitor never reads managedFields, the largest part of an object's
// metadata: every cache of its own drops them (cache.TransformStripManagedFields), its pod watches too.
func CacheByObject(o Options) map[client.Object]cache.ByObject {
	strip := cache.TransformStripManagedFields()
	byLabel := func(sel labels.Selector) cache.ByObject { return cache.ByObject{Label: sel, Transform: strip} }
	own := byLabel(labels.SelectorFromSet(labels.Set{liqojanitor.ReplicationLabel: "true"}))
	out := map[client.Object]cache.ByObject{
		metadataOnly(liqojanitor.ResourceSliceGVK): own,
		metadataOnly(liqojanitor.RenewGVK):         own,
		metadataOnly(liqojanitor.NamespaceMapGVK):  own,
		metadataOnly(nodeGVK): byLabel(labels.SelectorFromSet(labels.Set{
			liqojanitor.NodeTypeLabel: liqojanitor.VirtualNodeType})),
		// Offloaded namespaces only: the label going away (Liqo's first deletion step) reaches this
		// filtered watch as a delete.
		metadataOnly(namespaceGVK): byLabel(labels.NewSelector().Add(
			*must(labels.NewRequirement(liqojanitor.SchedulingLabel, selection.Exists, nil)))),
	}
	if o.ReleaseIdentitySecrets {
		out[metadataOnly(secretGVK)] = byLabel(labels.SelectorFromSet(labels.Set{
			liqojanitor.IdentityTypeLabel: liqojanitor.ControlPlaneIdentity}))
	}
	return out
}

// errNoNamespace is Setup's refusal to run without a namespace of its own.
var errNoNamespace = errors.New("the janitor needs a namespace of its own (Options.Namespace; the binary's --namespace): " +
	"its brake, the probe targets and the returns it keeps live there, and it must not run without them")

// Setup registers the janitor with the manager; it runs on the elected leader only. The manager's cache
// must be narrowed with CacheByObject(o). It refuses to run without Options.Namespace.
func Setup(ctx context.Context, mgr ctrl.Manager, o Options) error {
	o = o.Default()
	if o.Namespace == "" {
		return errNoNamespace
	}
	dryRunGauge.Set(0)
	returnedClusters.Set(0) // this janitor's memory starts empty
	if o.DryRun {
		dryRunGauge.Set(1)
	}
	mc, err := metadata.NewForConfig(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("creating the metadata client: %w", err)
	}
	pods := podwatch.New(mc)
	if err := mgr.Add(pods); err != nil {
		return err
	}
	// The replicated target lists NamespaceMaps metadata-only (the watch below caches them whole): start
	// that informer with the manager, so the first clean-up does not wait for it to sync.
	if _, err := mgr.GetCache().GetInformer(ctx, metadataOnly(liqojanitor.NamespaceMapGVK)); err != nil {
		return fmt.Errorf("watching NamespaceMaps: %w", err)
	}
	stormChanges := make(chan event.GenericEvent, 1)
	if err := watchStorm(ctx, mgr.GetCache(), o.Storm, stormChanges); err != nil {
		return err
	}
	r := newReconciler(mgr.GetClient(), mgr.GetAPIReader(), pods, mgr.GetEventRecorder(ReportingController), clock.RealClock{}, o)
	if o.ReturnProbeInterval > 0 {
		if err := mgr.Add(r.probe); err != nil {
			return err
		}
	}
	tenants, err := tenantNamespaceCache(mgr)
	if err != nil {
		return err
	}
	brakes, err := brakeCache(mgr, o.Namespace)
	if err != nil {
		return err
	}
	fences, err := fenceCache(mgr, o.Namespace)
	if err != nil {
		return err
	}
	return r.watch(mgr, pods, tenants, ownCaches{brakes: brakes, fences: fences}, stormChanges)
}

// ownCaches are the caches of the janitor's own ConfigMaps it watches: the brake (janitor rule 14) and
// the providers' fence records (rule 22), each narrowed to its one ConfigMap.
type ownCaches struct {
	brakes, fences cache.Cache
}

// tenantNamespaceCache is a cache of its own for Liqo's tenant namespaces (liqo.io/tenant-namespace,
// metadata-only): the manager's cache of namespaces holds only offloaded ones (one label selector per
// kind), and the unpeering (janitor rule 13) follows a tenant namespace until it is gone.
func tenantNamespaceCache(mgr ctrl.Manager) (cache.Cache, error) {
	return ownCache(mgr, "tenant namespaces", cache.Options{
		DefaultLabelSelector: labels.NewSelector().Add(*must(labels.NewRequirement(liqojanitor.TenantNamespaceLabel, selection.Exists, nil))),
	})
}

// ownCache is a cache of the janitor's own beside the manager's (which holds one selector per kind), with
// o's selectors, the manager's client, scheme and mapper, managed fields dropped, started with the manager.
func ownCache(mgr ctrl.Manager, what string, o cache.Options) (cache.Cache, error) {
	o.HTTPClient, o.Scheme, o.Mapper = mgr.GetHTTPClient(), mgr.GetScheme(), mgr.GetRESTMapper()
	o.DefaultTransform = cache.TransformStripManagedFields()
	c, err := cache.New(mgr.GetConfig(), o)
	if err != nil {
		return nil, fmt.Errorf("creating the cache of %s: %w", what, err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, err
	}
	return c, nil
}

// watch builds the controller: what the janitor watches, and which ForeignClusters each event concerns.
func (r *reconciler) watch(mgr ctrl.Manager, pods *podwatch.Watcher, tenants cache.Cache, own ownCaches, stormChanges <-chan event.GenericEvent) error {
	terminatingOnly := builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
		return !o.GetDeletionTimestamp().IsZero()
	}))
	toCluster := handler.EnqueueRequestsFromMapFunc(r.clusterOfLabel)
	toMarked := handler.EnqueueRequestsFromMapFunc(r.markedClusters)
	b := ctrl.NewControllerManagedBy(mgr).
		Named(liqojanitor.Name).
		For(&liqov1beta1.ForeignCluster{}).
		// One ForeignCluster of a cluster ID changes: the verdict of the others with that ID may change too.
		Watches(&liqov1beta1.ForeignCluster{}, handler.EnqueueRequestsFromMapFunc(r.sameClusterID)).
		// A replicated object of a cluster starts or finishes terminating: work for its ForeignCluster.
		WatchesMetadata(metadataOnly(liqojanitor.ResourceSliceGVK), toCluster, terminatingOnly).
		WatchesMetadata(metadataOnly(liqojanitor.RenewGVK), toCluster, terminatingOnly).
		// NamespaceMaps are read whole (spec.desiredMapping decides NamespaceOffloadings of every marked
		// cluster, and Liqo's second deletion step changes it); few, one per peer.
		Watches(&offloadingv1beta1.NamespaceMap{}, toMarked).
		// A NamespaceOffloading may span several clusters: any terminating one is work for every marked cluster.
		Watches(&offloadingv1beta1.NamespaceOffloading{}, toMarked, terminatingOnly).
		// An offloaded namespace loses Liqo's scheduling label (Liqo's first deletion step): a waiting
		// NamespaceOffloading may go.
		WatchesMetadata(metadataOnly(namespaceGVK), toMarked, builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(event.CreateEvent) bool { return false },
			UpdateFunc: func(event.UpdateEvent) bool { return false },
		})).
		// A VirtualNode appears, changes or starts being deleted: its Node's pods and who owns it change.
		Watches(&offloadingv1beta1.VirtualNode{}, handler.EnqueueRequestsFromMapFunc(r.clusterOfVirtualNode)).
		// A virtual node appears or goes: its cluster's pod watches change.
		WatchesMetadata(metadataOnly(nodeGVK), toCluster).
		// A terminating pod on a dead cluster's virtual node (see package podwatch).
		WatchesRawSource(source.Channel(pods.Events(), &handler.EnqueueRequestForObject{})).
		// A tenant namespace starts terminating, changes what holds it, or goes: the unpeering moves
		// (janitor rule 13).
		WatchesRawSource(source.Kind[client.Object](tenants, metadataOnly(namespaceGVK), toCluster)).
		// The provider of a marked cluster answers the janitor's probe (returnProbe).
		WatchesRawSource(source.Channel(r.probe.events, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.options.Concurrency})
	// The janitor-wide brake is set or removed (janitor rule 14): every marked cluster's next pass.
	b = b.WatchesRawSource(source.Kind[client.Object](own.brakes, &corev1.ConfigMap{}, toMarked))
	// A provider's fence record changes (janitor rule 22): the marked clusters of that provider.
	b = b.WatchesRawSource(source.Kind[client.Object](own.fences, &corev1.ConfigMap{}, r.fenceChanges()))
	// The storm count changes (a storm ends): every marked cluster, so a mark the storm held resumes (rule 20).
	b = b.WatchesRawSource(source.Channel(stormChanges, toMarked))
	if r.options.ReleaseIdentitySecrets {
		// A control-plane identity Secret starts or finishes terminating.
		b = b.WatchesMetadata(metadataOnly(secretGVK), toCluster, terminatingOnly)
	}
	return b.Complete(r)
}

// clusterOfLabel maps an object to the ForeignClusters whose spec.clusterID its liqo.io/remote-cluster-id
// label names.
func (r *reconciler) clusterOfLabel(ctx context.Context, obj client.Object) []reconcile.Request {
	id, ok := obj.GetLabels()[liqojanitor.RemoteClusterIDLabel]
	if !ok {
		return nil
	}
	return r.clusters(ctx, func(fc *liqov1beta1.ForeignCluster) bool { return string(fc.Spec.ClusterID) == id })
}

// clusterOfVirtualNode maps a VirtualNode to the ForeignClusters of its spec.clusterID.
func (r *reconciler) clusterOfVirtualNode(ctx context.Context, obj client.Object) []reconcile.Request {
	vn, ok := obj.(*offloadingv1beta1.VirtualNode)
	if !ok {
		return nil
	}
	return r.clusters(ctx, func(fc *liqov1beta1.ForeignCluster) bool { return fc.Spec.ClusterID == vn.Spec.ClusterID })
}

// sameClusterID maps a ForeignCluster to the others Liqo's lookup could take for the same cluster: those
// with its spec.clusterID, those whose spec.clusterID its liqo.io/remote-cluster-id label names, and those
// whose label names its spec.clusterID (janitor rule 1 decides on all of them together).
func (r *reconciler) sameClusterID(ctx context.Context, obj client.Object) []reconcile.Request {
	fc, ok := obj.(*liqov1beta1.ForeignCluster)
	if !ok {
		return nil
	}
	ids := map[string]bool{string(fc.Spec.ClusterID): true}
	if id, ok := fc.Labels[liqojanitor.RemoteClusterIDLabel]; ok {
		ids[id] = true
	}
	return r.clusters(ctx, func(other *liqov1beta1.ForeignCluster) bool {
		return other.Name != fc.Name && (ids[string(other.Spec.ClusterID)] || ids[other.Labels[liqojanitor.RemoteClusterIDLabel]])
	})
}

func (r *reconciler) markedClusters(ctx context.Context, _ client.Object) []reconcile.Request {
	return r.clusters(ctx, func(fc *liqov1beta1.ForeignCluster) bool { return liqojanitor.IsMarked(fc.Annotations) })
}

func (r *reconciler) clusters(ctx context.Context, match func(*liqov1beta1.ForeignCluster) bool) []reconcile.Request {
	var fcs liqov1beta1.ForeignClusterList
	if err := r.client.List(ctx, &fcs); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing ForeignClusters to map an event failed")
		return nil
	}
	var reqs []reconcile.Request
	for i := range fcs.Items {
		if match(&fcs.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&fcs.Items[i])})
		}
	}
	return reqs
}
