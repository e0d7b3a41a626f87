package liqojanitor

import (
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/liqotech/liqo/pkg/consts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Every Liqo key, kind, finalizer and install name liqo-janitor reads, each with the Liqo versions it was
// checked in: this is the only product file that imports Liqo's pkg/consts, so that a change of Liqo's
// spelling is a change here. The keys liqo-janitor owns are in keys.go.

// The mark is Liqo's own key, so Liqo ≥ v1.1 honours it too (docs/operations.md, "Marking a provider dead").
const (
	// MarkAnnotation declares a ForeignCluster permanently unreachable; MarkValue is the only value Liqo reads.
	MarkAnnotation = consts.ForeignClusterPermanentlyUnreachableAnnotationKey
	// MarkValue is the value MarkAnnotation must carry.
	MarkValue = "true"
)

// Liqo keys the add-on reads.
const (
	// WebhookSkipLabel switches Liqo's own webhooks off for one object (the objectSelector of Liqo v1.2's
	// webhook configurations, deployments/liqo/templates/webhooks/*.yaml); locked while marked (gate rule 11).
	WebhookSkipLabel = "liqo.io/webhook-skip"
	// ShadowPodLabel marks the consumer's offloaded pods (consts.LocalPodLabelKey, value "true"): the only
	// pods Liqo's VirtualNode drain selects (virtualnode-controller/drain.go getPodsForDeletion).
	ShadowPodLabel = consts.LocalPodLabelKey
	// ShadowPodLabelValue is ShadowPodLabel's value on them (consts.LocalPodLabelValue, the same in v1.0.3,
	// v1.1.0 and v1.2.0).
	ShadowPodLabelValue = consts.LocalPodLabelValue
	// RemoteClusterIDLabel ties Liqo objects (and virtual Nodes) to a remote cluster.
	RemoteClusterIDLabel = consts.RemoteClusterID
	// ClusterIDConfigMapKey is the data key of the local cluster ID in Liqo's cluster-ID ConfigMap.
	ClusterIDConfigMapKey = consts.ClusterIDConfigMapKey
	// ClusterIDConfigMapNameLabel and ClusterIDConfigMapNameValue select Liqo's cluster-ID ConfigMap
	// (named liqo-clusterid-configmap by default; the name changes with the Helm release name).
	ClusterIDConfigMapNameLabel = "app.kubernetes.io/name"
	// ClusterIDConfigMapNameValue is the value of ClusterIDConfigMapNameLabel on that ConfigMap.
	ClusterIDConfigMapNameValue = consts.ClusterIDConfigMapNameLabelValue
)

// MarkLockedLabels are Liqo's labels that no request adds, removes or changes on a marked ForeignCluster
// (gate rule 11): the first decides which ForeignCluster Liqo's lookup by cluster ID finds, the second
// switches Liqo's own webhooks off for it.
var MarkLockedLabels = []string{RemoteClusterIDLabel, WebhookSkipLabel}

// Liqo keys of a provider's side of a consumer (liqo-facts.md §12; the same strings in Liqo v1.0.3, v1.1.0
// and v1.2.0): what the provider fence (janitor/providerfence and the plugin's fence) selects by.
const (
	// TenantNamespaceLabel marks a tenant namespace (pkg/consts/core.go); with RemoteClusterIDLabel it is
	// how Liqo finds the one of a cluster (pkg/tenantNamespace, namespaceManager.go GetNamespace:
	// TenantNamespaces).
	TenantNamespaceLabel = consts.TenantNamespaceLabel
	// ManagedByNamespaceMapAnnotation names, on a remote namespace, the NamespaceMap that made it
	// ("<tenant namespace>/<name>"; consts.RemoteNamespaceManagedByAnnotationKey).
	ManagedByNamespaceMapAnnotation = consts.RemoteNamespaceManagedByAnnotationKey
	// ShadowPodOriginLabel is the consumer's cluster ID on a ShadowPod (pkg/virtualKubelet/forge/meta.go
	// LiqoOriginClusterIDKey; forge is not imported: it pulls in the virtual kubelet).
	ShadowPodOriginLabel = "offloading.liqo.io/origin"
	// ShadowPodDestinationLabel is the provider's cluster ID on a ShadowPod (forge/meta.go
	// LiqoDestinationClusterIDKey).
	ShadowPodDestinationLabel = "offloading.liqo.io/destination"
	// ManagedByLabel with ManagedByShadowPod marks the pods Liqo's shadowpod controller makes of ShadowPods.
	ManagedByLabel = consts.ManagedByLabelKey
	// ManagedByShadowPod is ManagedByLabel's value on them.
	ManagedByShadowPod = consts.ManagedByShadowPodValue
	// ReplicationStatusLabel ("liqo.io/replicated", "true") and ReplicationOriginLabel ("liqo.io/originID",
	// the consumer's cluster ID) are what the consumer's crdReplicator puts on the copies it creates in its
	// tenant namespace on the provider (Reflector.mutateLabelsForRemote,
	// internal/crdReplicator/reflection/handler.go; consts.ReplicationStatusLabel and ReplicationOriginLabel,
	// the same in v1.0.3, v1.1.0 and v1.2.0).
	ReplicationStatusLabel = consts.ReplicationStatusLabel
	// ReplicationOriginLabel is the consumer's cluster ID on those copies.
	ReplicationOriginLabel = consts.ReplicationOriginLabel
	// RemoteTenantNamespaceAnnotation is, on the consumer's control-plane identity Secret, its tenant
	// namespace on the provider (consts.RemoteTenantNamespaceAnnotKey, pkg/consts/authentication.go, the
	// same in v1.0.3, v1.1.0 and v1.2.0).
	RemoteTenantNamespaceAnnotation = consts.RemoteTenantNamespaceAnnotKey
	// KubeconfigSecretKey is the data key of the kubeconfig in Liqo's identity Secrets
	// (consts.KubeconfigSecretField, pkg/consts/authentication.go, the same in v1.0.3, v1.1.0 and v1.2.0).
	KubeconfigSecretKey = consts.KubeconfigSecretField
)

// Liqo labels and finalizers the janitor matches on (liqo-facts.md; the same strings in Liqo v1.0 to v1.2).
const (
	// ReplicationLabel marks our own replicated copies (ResourceSlice, NamespaceMap, Renew): "true" on the
	// consumer's objects, "false" on the copies a peer replicated to us.
	ReplicationLabel = consts.ReplicationRequestedLabel
	// RemoteIDLabel is where the crdReplicator sends a replicated object (internal/crdReplicator/reflection,
	// LocalResourcesLabelSelector: replication=true and this label present); it routes on this label alone.
	RemoteIDLabel = consts.ReplicationDestinationLabel
	// SchedulingLabel on a namespace lets its pods be scheduled on virtual nodes; Liqo's NamespaceOffloading
	// deletion removes it first, and Liqo's pod webhook matches on it.
	SchedulingLabel = consts.SchedulingLiqoLabel
	// NodeTypeLabel and VirtualNodeType identify Liqo virtual Nodes.
	NodeTypeLabel = consts.TypeLabel
	// VirtualNodeType is the value of NodeTypeLabel on virtual Nodes.
	VirtualNodeType = consts.TypeNode
	// IdentityTypeLabel and ControlPlaneIdentity select the control-plane identity Secret of a peer.
	IdentityTypeLabel = consts.IdentityTypeLabelKey
	// ControlPlaneIdentity is the value of IdentityTypeLabel on the control-plane identity Secret.
	ControlPlaneIdentity = "ControlPlane"

	// ReplicatorFinalizer is the crdReplicator's finalizer on replicated objects; it waits for the remote copy.
	ReplicatorFinalizer = "crdreplicator.liqo.io/resource"
	// ReplicatorOperatorFinalizer is the crdReplicator's finalizer on the control-plane identity Secret.
	ReplicatorOperatorFinalizer = "crdreplicator.liqo.io/operator"
	// NamespaceOffloadingFinalizer waits until every remote namespace of an offloaded namespace is gone.
	NamespaceOffloadingFinalizer = "namespaceoffloading-controller.liqo.io/finalizer"
)

// Liqo's install, as its chart and liqoctl make it.
const (
	// DefaultLiqoNamespace is the namespace Liqo is installed in unless told otherwise: the default of
	// --liqo-namespace, in the binary and in the plugin.
	DefaultLiqoNamespace = consts.DefaultLiqoNamespace
	// LiqoPreDeleteServiceAccount is the ServiceAccount, in Liqo's namespace, of the Job Liqo's chart runs
	// before it uninstalls (its pre-delete hook, Job and ServiceAccount of one name). No released Liqo's
	// marks a ForeignCluster; with uninstaller.forceUninstall, Liqo's open PR #3333, it bare-marks every one.
	LiqoPreDeleteServiceAccount = "liqo-pre-delete"
)

// Liqo's virtual storage: the provisioner name of its StorageClass (deployments/liqo/templates/
// liqo-storage-class.yaml, v1.0.3 to v1.2.0: no reclaimPolicy, so the API server's default, Delete), and the
// shape of the placeholder PV a virtual kubelet creates for a claim it provisions on its provider
// (pkg/virtualKubelet/reflection/storage/controller.go provisionClaimOperation: name "pvc-" + the claim's
// UID, claimRef the claim's with its UID, annotation annDynamicallyProvisioned pv.kubernetes.io/provisioned-by
// set to the class's provisioner, no finalizer; persistentvolumeclaim.go Handle then sets the claim's
// volumeName; pkg/liqo-controller-manager/offloading/storageprovisioner/remoteprovisioner.go
// ProvisionRemotePVC: hostPath /tmp/liqo-placeholder, nodeAffinity liqo.io/remote-cluster-id In [the cluster
// ID read from the selected Node's labels], reclaim policy the class's; the same in v1.0.3, v1.1.0 and
// v1.2.0). Deleting the claim releases the PV, and Liqo's controller manager deletes it when its storage is
// on (--enable-storage, the chart's default): the Delete of its provisioner (storageprovisioner/delete.go)
// finds no real claim for a placeholder and returns nil, so sig-storage-lib-external-provisioner deletes the
// PV object (test/harness TestLiqoDeletesThePlaceholderOfAReleasedClaim, with Liqo v1.2.0's binary).
// docs/volumes.md has the facts with their citations; records_unpeering.go the janitor's report of them.
const (
	LiqoStorageProvisioner  = "liqo.io/storage"
	PlaceholderPath         = "/tmp/liqo-placeholder"
	ProvisionedByAnnotation = "pv.kubernetes.io/provisioned-by"
	PlaceholderPVPrefix     = "pvc-"
	// SelectedNodeAnnotation is where the scheduler records the node a WaitForFirstConsumer claim is
	// provisioned for (k8s.io/component-helpers storage/volume AnnSelectedNode); a virtual kubelet provisions
	// only the claims whose selected node is one of its provider's (the Node's liqo.io/remote-cluster-id
	// label, persistentvolumeclaim.go Handle).
	SelectedNodeAnnotation = "volume.kubernetes.io/selected-node"
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
// tenant labels re-creates nothing, and one that holds such objects counts through them. PeeringLeft
// (foreigncluster.go) lists them.
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
// gate.go) and so does the janitor (janitor/internal/unpeering): keep their RBAC markers with this list.
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

// Liqo's kinds the janitor releases from or reports on, besides PeeringKinds (the same group, version and
// kind in Liqo v1.0.3, v1.1.0 and v1.2.0).
var (
	// ResourceSliceGVK, RenewGVK and NamespaceMapGVK are kinds the crdReplicator replicates.
	ResourceSliceGVK = authv1beta1.GroupVersion.WithKind("ResourceSlice")
	// RenewGVK is the kind of Liqo's identity renewals.
	RenewGVK = authv1beta1.GroupVersion.WithKind("Renew")
	// NamespaceMapGVK is the kind of Liqo's namespace mappings, one per peer.
	NamespaceMapGVK = offloadingv1beta1.SchemeGroupVersion.WithKind("NamespaceMap")
	// InternalFabricGVK is the kind of Liqo's in-cluster network fabric of one peer.
	InternalFabricGVK = liqoNetworkingGV.WithKind("InternalFabric")
	// ReplicatedGVKs are the kinds the crdReplicator replicates (internal/crdReplicator/resources/resources.go).
	ReplicatedGVKs = []schema.GroupVersionKind{ResourceSliceGVK, NamespaceMapGVK, RenewGVK}
)

// LegacyFabricFinalizer is the InternalFabric finalizer of Liqo before v1.2.0: the fabric (a DaemonSet
// pod on every node) adds it and, once an InternalFabric is being deleted, removes its node's geneve
// interface and then the finalizer (pkg/fabric/internalfabric_controller.go Reconcile, finalizer.go,
// v1.0.3 and v1.1.0). v1.2.0 moved the tunnels to GeneveTunnel objects and its controller-manager removes
// this finalizer from any InternalFabric being deleted, at once
// (pkg/liqo-controller-manager/networking/internal-network/internalfabric-controller/internalfabric_controller.go
// Reconcile: RemoveFinalizer(internalFabric, "internalfabric-controller.liqo.io/finalizer")).
const LegacyFabricFinalizer = "internalfabric-controller.liqo.io/finalizer"
