// Package webhook is the gate: the mutating and validating admission webhooks on Liqo ForeignClusters
// that make declaring a provider permanently unreachable a confirmed, authorised and audited act.
//
// The decision is a pure function (decide, stamp) of the old and new objects, the requesting user, the
// local cluster ID, the other ForeignClusters of the same cluster ID, the result of the break-glass
// SubjectAccessReview, the gate's own probe of the provider, the janitor's identity and the time; the
// handlers in gate.go only gather those inputs.
//
// # The gate's rules
//
// They apply to CREATE and UPDATE of ForeignClusters; "setting the mark" means the new object carries
// liqo.io/foreign-cluster-permanently-unreachable and the old one did not. The code cites them by number.
//
//  1. Setting the mark needs liqo-janitor.io/confirm-cluster-id equal to spec.clusterID (it may come
//     earlier). A wrong confirmation is refused wherever it is written.
//  2. The mark's value is exactly "true", the only value Liqo reads.
//  3. The cluster is not the local one (CLUSTER_ID of Liqo's cluster-ID ConfigMap); if that cannot be
//     read, the mark is refused (fail closed).
//  4. Reachability veto: refused while APIServerStatus is Established, or not Established for less than
//     --min-unreachable (a blip is not a death). Where the status names the provider's API server (an
//     https status.apiServerUrl or status.foreignProxyUrl), the gate also probes it itself, bounded by
//     --probe-timeout (2 s): an answer vetoes the mark whatever the status says, since Liqo writes that
//     status only on a transition, only while its controller runs and only for the ForeignCluster its
//     lookup finds (the root package's probe.go).
//  5. Break-glass: setting and removing the mark need verb mark-unreachable on
//     foreignclusters.core.liqo.io (SubjectAccessReview), beyond update.
//  6. Only the mutating webhook writes liqo-janitor.io/marked-by and marked-at: on every request that sets
//     the mark, replacing what the request carried (a replayed or hand-written marked-at never shortens the
//     grace period). The validating webhook accepts only stamps naming the requester, at most a few seconds
//     old. While marked, the confirmation and the stamps are immutable.
//  7. Removing the mark is answered with a warning (nothing released is restored), and removes the stamps,
//     the confirmation, the no-evidence key and the janitor's grace-window record and plan with it (the
//     summary of a clean-up that happened stays).
//  8. Everything else passes, and matchConditions keep it from reaching the gate at all: Liqo's status (a
//     subresource), Liqo's labels and annotations on an unmarked ForeignCluster, and pausing never block
//     when the gate is down.
//  9. One cluster ID, one ForeignCluster, the one Liqo finds: the mark goes only on a ForeignCluster whose
//     liqo.io/remote-cluster-id label equals its spec.clusterID (Liqo's GetForeignClusterByID selects by
//     that label, the oldest match wins: it probes, drains and replicates for that object only), and no
//     other ForeignCluster carries that spec.clusterID or that label value.
//  10. Unpausing a marked cluster (liqo-janitor.io/paused no longer "true") needs the rule-5 permission:
//     it resumes irreversible releases. Pausing is open to anyone who may update the ForeignCluster.
//  11. Liqo's labels are locked while marked: adding, removing or changing liqo.io/remote-cluster-id or
//     liqo.io/webhook-skip on a ForeignCluster marked before or after the request is refused, for everyone
//     (unmark first). Liqo v1.1+'s own ForeignCluster webhook, which re-asserts the first, skips objects
//     carrying the second.
//  12. No evidence is not evidence of death: a ForeignCluster with no APIServerStatus condition (Liqo
//     deletes it when the status names no API server: apiserverchecker.go needCondition) is marked only
//     with liqo-janitor.io/no-reachability-evidence equal to spec.clusterID.
//  13. No ForeignCluster is created marked.
//  14. Only the janitor's own identity (learnt at start with a SelfSubjectReview) sets, changes or removes
//     the janitor's keys (liqo-janitor.io/cleanup, first-seen-at, grace-ends-at), but for rule 7's
//     removal; liqo-janitor.io/reason is immutable while marked.
//  15. The fence record (liqo-janitor.io/fenced, written by kubectl liqo-janitor fence once the consumer's
//     workloads on a returned provider are stopped) ends the janitor's count of that returned provider and
//     its critical alert: setting or changing it on a marked ForeignCluster needs rule 5's permission, and
//     the mutating webhook writes its time and user (the request's), as it stamps a mark; the validating
//     webhook accepts only a record naming the requester, a few seconds old.
//
// The ValidatingAdmissionPolicy in manifests/policy enforces, with the gate absent, what CEL can: rules 1,
// 2, 5, 10 and 15 through the authorizer, 6's immutability, 11, 13, 14 and 15's requester.
package webhook
