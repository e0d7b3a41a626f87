// Package providerfence is the provider-side fence agent (issue 36, design revision 5): on a provider, it
// stops a lost consumer's pods by itself once that consumer's renewals of a Lease stop, so that the
// consumer, which computes the same deadline from the contract the agent publishes, may act on a mark
// knowing its workloads no longer run here. It runs in the same binary, in its own Deployment
// (--enable-provider-fence), elected leader among its replicas.
//
// # The provider fence's rules
//
// The code cites them as "fence rule N".
//
//  1. Opt-in, per consumer, by the provider's admin: only a Tenant (authentication.liqo.io) carrying
//     liqo-janitor.io/fence-after, in the tenant namespace Liqo made for its spec.clusterID (labels
//     liqo.io/remote-cluster-id=<id> and liqo.io/tenant-namespace, as Liqo's pkg/tenantNamespace finds it),
//     is looked at. For any other Tenant the agent writes nothing.
//  2. The Lease liqo-janitor-fence in that namespace is the consumer's; the agent creates it with its
//     contract and otherwise only writes its own annotations there (contract, armed-at, seen-rv, status, a
//     copy of its fence record). What it decides on it keeps where the consumer cannot write: the Lease
//     liqo-janitor-fence-state beside it (its observation, arming and fence) and the Tenant.
//  3. Judged by its own clock at observation: every poll reads the Lease live from the API server; a
//     renewal is a change of spec.renewTime or spec.holderIdentity, compared as text, observed at the
//     agent's time of that read. renewTime is never compared with a clock: a renewTime a year ahead extends
//     nothing. The observation is persisted before it counts, so a new leader fences at the same deadline.
//  4. Armed only by an observed renewal, and only with safe settings: fenceAfter at least 6 × the renew
//     interval the consumer states (spec.leaseDurationSeconds) + poll, and the deadline the consumer
//     computes (FenceContract.SafeAfter) within Kubernetes' 300 s taint eviction; otherwise an Event and
//     the Lease's status say why, with the computed limit. A consumer that never renewed is never fenced.
//  5. The fence, when armed and no renewal was observed for fenceAfter: the Tenant set Cordoned (only from
//     Active; Cordoned or Drained are left as they are), so that Liqo's ShadowPod webhook refuses the
//     consumer's new ShadowPods; exactly that consumer's ShadowPods deleted (label offloading.liqo.io/origin
//     = its cluster ID, in namespaces labelled liqo.io/remote-cluster-id with it and whose
//     liqo.io/managed-by-namespace-map annotation names its tenant namespace) with UID preconditions, and
//     their pods (liqo.io/managed-by=shadowpod in those namespaces) with their grace period capped at
//     --fence-grace-cap. Never a namespace, PVC, Service, ConfigMap or Secret: the fence stops execution
//     and keeps the state. It is recorded (fenced-at and the counts, what could not be stopped: pods on a
//     node that is not Ready), with an Event on the Tenant, a metric and an alert.
//  6. Latched: the fence is recorded before its first write, and a fenced consumer stays fenced — every
//     poll deletes again what appears — whatever it renews, until the provider's admin clears it
//     (`kubectl liqo-janitor unfence`).
//  7. No fence without its own API server: a poll whose reads fail decides nothing. When reads succeed
//     again, or a new leader polls for the first time, with the deadline already past, the consumer gets a
//     reconnect grace of 2 renew intervals to renew first (it could not while the API server was away);
//     the published failover bound includes it.
package providerfence

// RBAC of the agent (generated into its own ClusterRole, liqo-janitor-provider-fence, by `make manifests`).
// +kubebuilder:rbac:groups=authentication.liqo.io,resources=tenants,verbs=get;list;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;patch
// +kubebuilder:rbac:groups=offloading.liqo.io,resources=shadowpods,verbs=list;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;delete
// +kubebuilder:rbac:groups="",resources=namespaces;nodes,verbs=get;list
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=list,namespace=liqo
