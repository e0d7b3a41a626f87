// Package webhook is the gate: the mutating and validating admission webhooks on Liqo ForeignClusters
// that make declaring a provider permanently unreachable a confirmed, authorised and audited act.
//
// The decision is a pure function (decide, stamp) of the old and new objects, the requesting user, the
// local cluster ID, the other ForeignClusters of the same cluster ID, the result of the break-glass
// SubjectAccessReview and the time; the handlers in gate.go only gather those inputs.
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
//     --min-unreachable. No condition at all counts as unreachable.
//  5. Break-glass: setting and removing the mark need verb mark-unreachable on
//     foreignclusters.core.liqo.io (SubjectAccessReview), beyond update.
//  6. Only the mutating webhook writes liqo-janitor.io/marked-by and marked-at: on every request that sets
//     the mark, replacing what the request carried (a replayed or hand-written marked-at never shortens the
//     grace period). The validating webhook accepts only stamps naming the requester, at most a few seconds
//     old. While marked, the confirmation and the stamps are immutable.
//  7. Removing the mark is answered with a warning (nothing released is restored), and removes the stamps
//     and the confirmation with it.
//  8. Everything else passes, and matchConditions keep it from reaching the gate at all: Liqo's own
//     updates, pausing and the janitor's reports never block when the gate is down.
//  9. One cluster ID, one ForeignCluster: the mark is refused while another ForeignCluster has the same
//     spec.clusterID (Liqo probes only one of them; the other has no APIServerStatus and would pass rule 4).
//  10. Unpausing a marked cluster (liqo-janitor.io/paused no longer "true") needs the rule-5 permission:
//     it resumes irreversible releases. Pausing is open to anyone who may update the ForeignCluster.
//
// The ValidatingAdmissionPolicy in manifests/policy enforces, with the gate absent, what CEL can: rules 1,
// 2, and 5 and 10 through the authorizer.
package webhook
