package liqojanitor

import (
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"github.com/liqotech/liqo/pkg/consts"
)

// Name is liqo-janitor's name where Kubernetes shows it, and the one place it is spelled for the code, the
// generators and the tests: the install names its objects Name, Name+"-…" (liqo-janitor-webhook, …) or
// Name+":…" (the break-glass ClusterRole); the janitor's controller and the reporting controller of its
// events are Name.
const Name = "liqo-janitor"

// The user-facing API of liqo-janitor: annotations on a ForeignCluster (docs/operations.md, "Marking a
// provider dead"). The mark is Liqo's own key, so Liqo ≥ v1.1 honours it too.
const (
	// AnnotationPrefix is the prefix of every annotation liqo-janitor owns.
	AnnotationPrefix = "liqo-janitor.io/"

	// MarkAnnotation declares a ForeignCluster permanently unreachable; MarkValue is the only value Liqo reads.
	MarkAnnotation = consts.ForeignClusterPermanentlyUnreachableAnnotationKey
	// MarkValue is the value MarkAnnotation must carry.
	MarkValue = "true"

	// ConfirmAnnotation is the second key: it must equal spec.clusterID for the mark to be accepted.
	ConfirmAnnotation = AnnotationPrefix + "confirm-cluster-id"
	// ReasonAnnotation is the operator's free-text reason, copied into events.
	ReasonAnnotation = AnnotationPrefix + "reason"
	// MarkedByAnnotation records the user whose request set the mark; only the mutating webhook writes it.
	MarkedByAnnotation = AnnotationPrefix + "marked-by"
	// MarkedAtAnnotation records when the mark was set (RFC 3339, UTC); only the mutating webhook writes it.
	MarkedAtAnnotation = AnnotationPrefix + "marked-at"
	// PausedAnnotation set to "true" makes the janitor leave the cluster alone.
	PausedAnnotation = AnnotationPrefix + "paused"
	// CleanupAnnotation is the janitor's short progress summary.
	CleanupAnnotation = AnnotationPrefix + "cleanup"
	// NoEvidenceAnnotation is the extra key gate rule 12 asks for when Liqo keeps no APIServerStatus for
	// the ForeignCluster (no reachability evidence at all): it must equal spec.clusterID, and come in the
	// marking request itself.
	NoEvidenceAnnotation = AnnotationPrefix + "no-reachability-evidence"
	// FirstSeenAnnotation is the janitor's own record (RFC 3339, UTC) of when it first saw the confirmed
	// mark: the grace period ends no sooner than this plus --grace-period, across restarts and failovers.
	FirstSeenAnnotation = AnnotationPrefix + "first-seen-at"
	// GraceEndsAnnotation is the janitor's own record (RFC 3339, UTC) of when its grace period for the
	// current mark ends: the later of marked-at and first-seen-at, plus --grace-period. The plugin shows it.
	GraceEndsAnnotation = AnnotationPrefix + "grace-ends-at"
	// GracePlanPrefix starts the cleanup annotation while a confirmed mark waits out the grace period and
	// the annotation shows the plan ("grace 22s left: would release …"); the gate removes such a plan
	// with the mark.
	GracePlanPrefix = "grace "
)

// JanitorOwnedAnnotations are the keys only the janitor's own identity may set, change or remove (gate
// rule 14); the gate removes the grace-window ones together with the mark (rule 7).
var JanitorOwnedAnnotations = []string{CleanupAnnotation, FirstSeenAnnotation, GraceEndsAnnotation, UnpeeringAnnotation}

// Liqo keys the add-on reads.
const (
	// WebhookSkipLabel switches Liqo's own webhooks off for one object (the objectSelector of Liqo v1.2's
	// webhook configurations, deployments/liqo/templates/webhooks/*.yaml); locked while marked (rule 11).
	WebhookSkipLabel = "liqo.io/webhook-skip"
	// ShadowPodLabel marks the consumer's offloaded pods (consts.LocalPodLabelKey, value "true"): the only
	// pods Liqo's VirtualNode drain selects (virtualnode-controller/drain.go getPodsForDeletion).
	ShadowPodLabel = consts.LocalPodLabelKey
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

// Liqo keys of a provider's side of a consumer (liqo-facts.md §12; the same strings in Liqo v1.0.3, v1.1.0
// and v1.2.0): what the provider fence (janitor/providerfence) selects by.
const (
	// TenantNamespaceLabel marks a tenant namespace (pkg/consts/core.go); with RemoteClusterIDLabel it is
	// how Liqo finds the one of a cluster (pkg/tenantNamespace, namespaceManager.go GetNamespace).
	TenantNamespaceLabel = consts.TenantNamespaceLabel
	// ManagedByNamespaceMapAnnotation names, on a remote namespace, the NamespaceMap that made it
	// ("<tenant namespace>/<name>"; consts.RemoteNamespaceManagedByAnnotationKey).
	ManagedByNamespaceMapAnnotation = consts.RemoteNamespaceManagedByAnnotationKey
	// ShadowPodOriginLabel is the consumer's cluster ID on a ShadowPod (pkg/virtualKubelet/forge/meta.go
	// LiqoOriginClusterIDKey; forge is not imported: it pulls in the virtual kubelet).
	ShadowPodOriginLabel = "offloading.liqo.io/origin"
	// ManagedByLabel with ManagedByShadowPod marks the pods Liqo's shadowpod controller makes of ShadowPods.
	ManagedByLabel = consts.ManagedByLabelKey
	// ManagedByShadowPod is ManagedByLabel's value on them.
	ManagedByShadowPod = consts.ManagedByShadowPodValue
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

// The break-glass permission (gate rule 5): setting or removing the mark needs this verb on
// foreignclusters.core.liqo.io beyond update. The gate checks it with a SubjectAccessReview, the policy
// with CEL's authorizer, the plugin with a SelfSubjectAccessReview; the install ships it in a ClusterRole
// bound to nobody.
const (
	// MarkVerb is the break-glass verb, beyond plain update.
	MarkVerb = "mark-unreachable"
	// MarkRoleName is the ClusterRole the manifests ship to grant the break-glass verb.
	MarkRoleName = Name + ":mark-unreachable"
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

// The janitor-wide brake (janitor rule 14): while a ConfigMap of this name exists in the janitor's own
// namespace, the janitor releases nothing, for any cluster. Setting it needs no ForeignCluster write, so it
// works while Liqo's webhook (or the gate) refuses them.
const (
	// BrakeConfigMap names the brake's ConfigMap.
	BrakeConfigMap = "liqo-janitor-brake"
	// BrakeReasonKey is the data key of the operator's reason, quoted by events and `status`.
	BrakeReasonKey = "reason"
)
