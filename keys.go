package liqojanitor

// Every key liqo-janitor owns — its annotations, labels and the names of its ConfigMaps and Leases — one
// block per writer: the operator's (through kubectl or the plugin), the gate's stamps, the janitor's
// records, the provider-side agent's records, and the names the install ships. The formats of the values
// are in records*.go and fence*.go; the keys of Liqo the add-on reads are in liqo.go.

// Name is liqo-janitor's name where Kubernetes shows it, and the one place it is spelled for the code, the
// generators and the tests: the install names its objects Name, Name+"-…" (liqo-janitor-webhook, …) or
// Name+":…" (the break-glass ClusterRole); the janitor's controller and the reporting controller of its
// events are Name.
const Name = "liqo-janitor"

// AnnotationPrefix is the prefix of every annotation liqo-janitor owns.
const AnnotationPrefix = "liqo-janitor.io/"

// The operator's keys: the user-facing API of liqo-janitor, annotations on a ForeignCluster
// (docs/operations.md, "Marking a provider dead") beside Liqo's mark (MarkAnnotation, liqo.go), and the
// objects an operator makes in the janitor's namespace or on a provider.
const (
	// ConfirmAnnotation is the second key: it must equal spec.clusterID for the mark to be accepted.
	ConfirmAnnotation = AnnotationPrefix + "confirm-cluster-id"
	// ReasonAnnotation is the operator's free-text reason, copied into events.
	ReasonAnnotation = AnnotationPrefix + "reason"
	// PausedAnnotation set to "true" makes the janitor leave the cluster alone.
	PausedAnnotation = AnnotationPrefix + "paused"
	// NoEvidenceAnnotation is the extra key gate rule 12 asks for when Liqo keeps no APIServerStatus for
	// the ForeignCluster (no reachability evidence at all): it must equal spec.clusterID, and come in the
	// marking request itself.
	NoEvidenceAnnotation = AnnotationPrefix + "no-reachability-evidence"
	// AcknowledgeUnreachableAnnotation acknowledges a mark set during a storm (gate rule 21, janitor rule
	// 18): its value is the number of this consumer's providers unreachable at once, typed by the
	// operator, and it counts only when stamped like the other break-glass keys (storm.go).
	AcknowledgeUnreachableAnnotation = AnnotationPrefix + "acknowledge-unreachable"
	// AllowDeleteAnnotation is the operator's break-glass override of the gate's deletion rule: a marked
	// ForeignCluster whose unpeering still runs may be deleted when it carries this key equal to its
	// spec.clusterID and the requester holds the break-glass verb (records_unpeering.go).
	AllowDeleteAnnotation = AnnotationPrefix + "allow-delete-while-unpeering"
	// OverrideFenceDeadlineAnnotation, set to the cluster ID with the break-glass verb, lets a mark be set
	// before the provider's fence has surely completed; the gate stamps it.
	OverrideFenceDeadlineAnnotation = AnnotationPrefix + "override-fence-deadline"
	// FencedAnnotation is the operator's record, written by `kubectl liqo-janitor fence` once the
	// consumer's workloads on the returned provider are stopped, and stamped by the gate (FenceRecord):
	// "<RFC 3339> by <user>: <counts>; fences the return at <RFC 3339>". The janitor quotes it in its
	// Fenced event and summary and stops counting the cluster among the returned ones; it never resumes a
	// clean-up because of it.
	FencedAnnotation = AnnotationPrefix + "fenced"
	// VolumesReleasedAnnotation is the record of `kubectl liqo-janitor release-volumes` (VolumesReleased,
	// gate rule 32): which pinned volumes' data the operator released; the gate stamps its time and user.
	VolumesReleasedAnnotation = AnnotationPrefix + "volumes-released"

	// BrakeConfigMap names the janitor-wide brake (janitor rule 14): while a ConfigMap of this name exists
	// in the janitor's own namespace, the janitor releases nothing, for any cluster. Setting it needs no
	// ForeignCluster write, so it works while Liqo's webhook (or the gate) refuses them.
	BrakeConfigMap = "liqo-janitor-brake"
	// BrakeReasonKey is the data key of the operator's reason, quoted by events and `status`.
	BrakeReasonKey = "reason"

	// ProviderFenceSecretLabel labels, in the janitor's namespace, the Secret holding a provider's fence
	// credential (the kubeconfig `kubectl liqo-janitor fence-credential` prints on the provider), with the
	// provider's cluster ID as value.
	ProviderFenceSecretLabel = AnnotationPrefix + "provider-fence"
	// ProviderFenceKubeconfigKey is the Secret's key of that kubeconfig (as Liqo's identity Secrets hold
	// theirs).
	ProviderFenceKubeconfigKey = "kubeconfig"

	// FenceAfterAnnotation is the provider's admin's opt-in, on the consumer's Tenant: how long the agent
	// may go without observing a renewal before it fences the consumer (a Go duration, e.g. "120s").
	FenceAfterAnnotation = AnnotationPrefix + "fence-after"
)

// MarkingAnnotations are the operator's keys that come with a mark, in the marking request or ahead of it:
// the confirmation, the reason, the no-evidence key, the storm's acknowledgement and the fence deadline's
// override. The gate sees every request that sets, changes or removes one (gate rules 1, 12, 14, 21 and 31).
var MarkingAnnotations = []string{ConfirmAnnotation, ReasonAnnotation, NoEvidenceAnnotation,
	AcknowledgeUnreachableAnnotation, OverrideFenceDeadlineAnnotation}

// OperatorRecordAnnotations are the operator's records on a marked cluster: the fence record, the
// deletion override and the released-volumes record. None comes ahead of the mark (the gate drops them
// from the request that sets it, gate rules 15, 22 and 32), and the gate sees every request that sets or
// changes one, marked or not (gate rules 15, 17, 22 and 32).
var OperatorRecordAnnotations = []string{FencedAnnotation, AllowDeleteAnnotation, VolumesReleasedAnnotation}

// StampedRecordAnnotations are the operator's records the gate stamps with the requester and the time
// when they are set on a marked cluster: the fence record (FenceRecord, gate rule 15) and the
// released-volumes record (VolumesReleased, gate rule 32).
var StampedRecordAnnotations = []string{FencedAnnotation, VolumesReleasedAnnotation}

// The gate's stamps: only the gate's mutating webhook writes them, in the request that sets the mark (or
// the record they stamp), and they go with the mark (gate rule 7).
const (
	// MarkedByAnnotation records the user whose request set the mark; only the mutating webhook writes it.
	MarkedByAnnotation = AnnotationPrefix + "marked-by"
	// MarkedAtAnnotation records when the mark was set (RFC 3339, UTC); only the mutating webhook writes it.
	MarkedAtAnnotation = AnnotationPrefix + "marked-at"
	// AcknowledgedByAnnotation is the gate's stamp of an acknowledgement (gate rule 21): who acknowledged
	// the storm, when, and the count acknowledged (Acknowledgement). Only the gate's mutating webhook writes
	// it, in the request that sets the mark with AcknowledgeUnreachableAnnotation.
	AcknowledgedByAnnotation = AnnotationPrefix + "acknowledged-by"
	// MarkTargetsAnnotation is the gate's record of the provider's probe targets at marking (MarkTargets,
	// gate rule 23).
	MarkTargetsAnnotation = AnnotationPrefix + "mark-targets"
	// FenceDeadlineOverriddenAnnotation is the gate's stamp of OverrideFenceDeadlineAnnotation (gate rule
	// 31): who set the mark before the provider's fence deadline, when, and the deadline then
	// (FenceDeadlineOverride). Only the mutating webhook writes it, in the request that sets the mark with
	// the override.
	FenceDeadlineOverriddenAnnotation = AnnotationPrefix + "fence-deadline-overridden"
)

// GateStampAnnotations are the gate's stamps: the mark's (gate rule 6), the storm acknowledgement's (gate
// rule 21), the record of the targets at marking (gate rule 23) and the fence deadline override's (gate
// rule 31). The gate sees every request that sets, changes or removes one.
var GateStampAnnotations = []string{MarkedByAnnotation, MarkedAtAnnotation, AcknowledgedByAnnotation,
	MarkTargetsAnnotation, FenceDeadlineOverriddenAnnotation}

// The janitor's records: on the ForeignCluster, the keys only its identity writes (gate rule 14), and the
// ConfigMaps in its own namespace that only it writes, which the gate and the plugin read there
// (records_store.go, fencedeadline.go).
const (
	// CleanupAnnotation is the janitor's short progress summary.
	CleanupAnnotation = AnnotationPrefix + "cleanup"
	// FirstSeenAnnotation is the janitor's own record (RFC 3339, UTC) of when it first saw the confirmed
	// mark: the grace period ends no sooner than this plus --grace-period, across restarts and failovers.
	FirstSeenAnnotation = AnnotationPrefix + "first-seen-at"
	// GraceEndsAnnotation is the janitor's own record (RFC 3339, UTC) of when its grace period for the
	// current mark ends: the later of marked-at and first-seen-at, plus --grace-period. The plugin shows it.
	GraceEndsAnnotation = AnnotationPrefix + "grace-ends-at"
	// UnpeeringAnnotation is the janitor's record of the unpeering of a dead cluster: an Unpeering as JSON.
	UnpeeringAnnotation = AnnotationPrefix + "unpeering"

	// RecordsConfigMap is the name of the ConfigMap in the janitor's namespace that holds its probe targets
	// and kept returns.
	RecordsConfigMap = "liqo-janitor-records"
	// ReleasedVolumesConfigMap is the janitor's copy, by cluster ID, of the operator's released volumes
	// (gate rule 32, janitor rule 23).
	ReleasedVolumesConfigMap = "liqo-janitor-released-volumes"
	// FenceRenewalsConfigMap is the ConfigMap in the janitor's namespace holding, per provider cluster ID,
	// a FenceRenewal as JSON: only the janitor writes it; the gate and the plugin read it there.
	FenceRenewalsConfigMap = "liqo-janitor-fence-renewals"
)

// JanitorOwnedAnnotations are the keys only the janitor's own identity may set, change or remove (gate
// rule 14); the gate removes the grace-window ones together with the mark (gate rule 7).
var JanitorOwnedAnnotations = []string{CleanupAnnotation, FirstSeenAnnotation, GraceEndsAnnotation, UnpeeringAnnotation}

// The provider-side agent's records (issue 36, fencestate.go): on the consumer's Lease (copies, for the
// consumer to read), on the Tenant, and on the agent's own Lease, which only the agent (and the provider's
// admin) writes.
const (
	// FenceContractAnnotation is the agent's contract on the Lease: a FenceContract as JSON.
	FenceContractAnnotation = AnnotationPrefix + "fence-contract"
	// ArmedAtAnnotation is when the agent first observed a renewal (RFC 3339, its clock): before it, the
	// consumer is never fenced.
	ArmedAtAnnotation = AnnotationPrefix + "armed-at"
	// SeenRVAnnotation is the resourceVersion of the last renewal the agent observed: the consumer counts a
	// renewal as acknowledged when the next one's response carries the previous one's resourceVersion here.
	SeenRVAnnotation = AnnotationPrefix + "seen-rv"
	// FenceStatusAnnotation is, on the consumer's Lease, why the agent does not arm (the computed minimum
	// in the message), or empty once it is armed.
	FenceStatusAnnotation = AnnotationPrefix + "fence-status"
	// ProviderFencedAnnotation is, on the consumer's Lease, a copy of the agent's fence record
	// (ProviderFence as JSON), for the consumer to read with its fence credential.
	ProviderFencedAnnotation = AnnotationPrefix + "provider-fenced"
	// FencedAtAnnotation is, on the Tenant, when the agent fenced that consumer (RFC 3339, its clock).
	FencedAtAnnotation = AnnotationPrefix + "fenced-at"
	// CordonedByFenceAnnotation is, on the Tenant, when the agent set it Cordoned: only a Tenant the fence
	// cordoned is set Active again by `kubectl liqo-janitor unfence`.
	CordonedByFenceAnnotation = AnnotationPrefix + "cordoned-by-fence"
	// FenceStateLeaseName is the agent's own Lease in the tenant namespace of a consumer: its
	// FenceStateAnnotation is the agent's last observation and its fence, so that a new leader fences at
	// the same deadline and a fence stays latched.
	FenceStateLeaseName = "liqo-janitor-fence-state"
	// FenceStateAnnotation holds a FenceState as JSON on FenceStateLeaseName.
	FenceStateAnnotation = AnnotationPrefix + "fence-state"
)

// The install's names: the break-glass permission, and what the fence credential makes on a provider.
const (
	// MarkVerb is the break-glass verb, beyond plain update (gate rule 5): setting or removing the mark
	// needs it on foreignclusters.core.liqo.io. The gate checks it with a SubjectAccessReview, the policy
	// with CEL's authorizer, the plugin with a SelfSubjectAccessReview.
	MarkVerb = "mark-unreachable"
	// MarkRoleName is the ClusterRole the manifests ship to grant the break-glass verb, bound to nobody.
	MarkRoleName = Name + ":mark-unreachable"

	// FenceLeaseName is the coordination.k8s.io/v1 Lease, in the provider's tenant namespace of a consumer,
	// that the consumer renews and the provider's agent observes.
	FenceLeaseName = "liqo-janitor-fence"
	// FenceCredentialName names, in the tenant namespace of a consumer, the ServiceAccount, Role and
	// RoleBinding of the consumer's fence credential (the Role may only get, update and patch the Lease
	// FenceLeaseName); FenceCredentialTokenSecret is its token Secret. Deleting the ServiceAccount
	// revokes it.
	FenceCredentialName = "liqo-janitor-fence"
	// FenceCredentialTokenSecret is the token Secret of a consumer's fence credential (FenceCredentialName).
	FenceCredentialTokenSecret = FenceCredentialName + "-token"
)
