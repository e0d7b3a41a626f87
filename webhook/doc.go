// Package webhook is the gate: the mutating and validating admission webhooks on Liqo ForeignClusters
// that make declaring a provider permanently unreachable a confirmed, authorised and audited act.
//
// The decision is a pure function (decide, decideDelete, stamp) of the old and new objects, the requesting
// user, the local cluster ID, the other ForeignClusters of the same cluster ID, the count of this
// consumer's providers unreachable at once (the storm count), what is left that Liqo re-creates a
// ForeignCluster of the cluster ID from, the provider's return the janitor recorded, the janitor's record
// of its renewals of the provider's fence Lease, the result of the break-glass SubjectAccessReview, the gate's own probe of the provider,
// the janitor's identity, Liqo's uninstaller identities and the time; the handlers in gate.go only gather
// those inputs.
//
// # Reading order
//
// options.go is what the binary configures. gate.go serves the webhooks: Setup, the handlers, and the
// reads that gather a decision's inputs (Liqo's cluster-ID ConfigMap, every ForeignCluster — the others
// of the cluster ID and the storm count — the peering objects left (liqojanitor.PeeringLeft), the janitor's kept
// records and its renewal records in its namespace, the break-glass SubjectAccessReview, the probe). decision.go is the
// decision on CREATE and UPDATE: its inputs, what the request does to the mark (transition), the verdict
// and its reasons, and decide, which runs the checks of rules.go (one or more per rule below). stamp.go is
// the mutating webhook's decision, deletion.go the decision on DELETE (rules 16, 17 and 30), released.go the
// peering warning of rule 32 (a fourth webhook, which only warns). messages.go words
// every refusal and warning with its next step; metrics.go counts the verdicts by reason; requestlog.go
// keeps a request's log keys until a line is written. The tables of
// decision_test.go, storm_decision_test.go, stamp_test.go and deletion_test.go try the pure decisions;
// gate_test.go and the other tests of package webhook_test try them through a real API server with the
// generated configurations, and package test/storm tries rule 21 through an API server of its own.
//
// # The gate's rules
//
// Rules 1 to 15, 18 to 23, 31 and 32 apply to CREATE and UPDATE of ForeignClusters, 16, 17 and 30 to
// DELETE; "setting the mark" means the new object carries liqo.io/foreign-cluster-permanently-unreachable
// and the old one did not. The code cites them by number; rules 20 and 21 (issue 28), 22 on (issue 35), 31
// (issue 37) and 32 (issue 38) came last, numbered after the others so that no citation changes (30 is the
// DELETE rule of issue 35).
//
//  1. Setting the mark needs liqo-janitor.io/confirm-cluster-id equal to spec.clusterID (it may come
//     earlier, from a holder of rule 5's verb: rule 19). A wrong confirmation is refused wherever it is
//     written.
//  2. The mark's value is exactly "true", the only value Liqo reads.
//  3. The cluster is not the local one (CLUSTER_ID of Liqo's cluster-ID ConfigMap); if that cannot be
//     read, the mark is refused (fail closed).
//  4. Reachability veto: refused while APIServerStatus is Established, or not Established for less than
//     --min-unreachable (a blip is not a death). Where the status names the provider's API server (an
//     https status.apiServerUrl or status.foreignProxyUrl), the gate also probes it itself, bounded by
//     --probe-timeout (2 s): an answer vetoes the mark whatever the status says, since Liqo writes that
//     status only on a transition, only while its controller runs and only for the ForeignCluster its
//     lookup finds (the root package's probe.go). Where the consumer holds the provider's CA (the
//     control-plane Identity's authParams, in the tenant namespace the status names), the probe goes to
//     the Identity's API server, through its proxy URL as Liqo's client does, and only an answer whose
//     certificate verifies against that CA vetoes (ProviderTargets, ProbeTargets).
//  5. Break-glass: setting and removing the mark need verb mark-unreachable on
//     foreignclusters.core.liqo.io (SubjectAccessReview), beyond update.
//  6. Only the mutating webhook writes liqo-janitor.io/marked-by and marked-at: on every request that sets
//     the mark, replacing what the request carried (a replayed or hand-written marked-at never shortens the
//     grace period). The validating webhook accepts only stamps naming the requester, at most a few seconds
//     old. While marked, the confirmation and the stamps are immutable.
//  7. Removing the mark is answered with a warning (nothing released is restored), and removes the stamps,
//     the confirmation, the no-evidence key, the janitor's grace-window record and plan, its record of the
//     unpeering, the deletion override (rule 17) and the storm's acknowledgement and its stamp (rule 21)
//     with it, the fence deadline's override and its stamp (rule 31), and the released-volumes record (rule
//     32, with its warning) (the summary of a clean-up that happened stays).
//  8. Everything else passes, and matchConditions keep it from reaching the gate at all: Liqo's status (a
//     subresource), Liqo's labels and annotations on an unmarked ForeignCluster, pausing, removing a fence
//     record, creating a ForeignCluster (rule 32's warning comes from a webhook that fails open), and
//     deleting an unmarked ForeignCluster never block when the gate is down.
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
//     with liqo-janitor.io/no-reachability-evidence equal to spec.clusterID, in the marking request itself:
//     setting or changing the key on a ForeignCluster that stays unmarked is refused, for everyone, and one
//     the old object already carried (written while the gate was absent) does not count — the mark is
//     refused, saying to remove it and give it with the mark. Removing it is anyone's.
//  13. No ForeignCluster is created marked.
//  14. Only the janitor's own identity (learnt at start with a SelfSubjectReview) sets, changes or removes
//     the janitor's keys (liqo-janitor.io/cleanup, first-seen-at, grace-ends-at, unpeering), but for rule
//     7's removal; liqo-janitor.io/reason is immutable while marked.
//  15. The fence record is the gate's. The record (liqo-janitor.io/fenced, written by kubectl liqo-janitor
//     fence once the consumer's workloads on a returned provider are stopped) ends the janitor's count of
//     that returned provider and its critical alert. Setting or changing it on a ForeignCluster unmarked
//     after the request is refused, for everyone (removing it is anyone's), and the mutating webhook drops
//     it from a request that sets or removes the mark, so a record placed before a mark never survives into
//     it (the validating webhook refuses a mark still carrying one). On a marked ForeignCluster it needs
//     rule 5's permission and a return the janitor recorded for the current mark (its cleanup annotation
//     starting "provider returned at <RFC 3339>", not older than marked-at: liqojanitor.ReturnRecordedAt);
//     without one it is refused, nothing to fence. The mutating webhook rewrites whatever the request
//     carried into liqojanitor.FenceRecord — now, the requester and that recorded return, the request's
//     counts kept — and the validating webhook accepts only that form: the requester, a few seconds old,
//     naming the recorded return.
//  16. A marked ForeignCluster is not deleted while its unpeering runs: while anything is left that Liqo
//     re-creates it from — an object of liqojanitor.PeeringKinds labelled liqo.io/remote-cluster-id=<its
//     spec.clusterID>, in any namespace, Terminating or not: its networking Configuration, Connection,
//     GatewayServer and GatewayClient, its Tenant and Identities, its VirtualNodes, and its virtual Nodes
//     (liqo.io/type=virtual-node), exactly what Liqo's foreigncluster controller watches with its enqueuer,
//     which creates a missing ForeignCluster named <id> with only that label on any event of such an object
//     (foreigncluster_controller.go SetupWithManager and foreignclusterEnqueuer, Liqo v1.0.3 to v1.2.0) —
//     read live, metadata only, one of each kind at most; or while the janitor's record
//     (liqo-janitor.io/unpeering) is there and not Complete. Deleted then, it would come back without the
//     mark, re-arming Liqo's replicator and drain as if the provider were alive, and the janitor's records
//     would go with the old object. A namespace is not such an object: one that carries Liqo's tenant
//     labels and holds nothing of the kinds re-creates nothing, and holds nothing (a tenant namespace that
//     still holds them counts through them). Fail closed when they cannot be listed (the reads are bounded
//     within the webhook's 5 s timeout). Deleting an unmarked ForeignCluster is nobody's
//     business.
//  17. Break-glass override of rules 16 and 30: liqo-janitor.io/allow-delete-while-unpeering equal to
//     spec.clusterID on the ForeignCluster, and the requester deleting it holds rule 5's verb: the deletion
//     passes with a warning saying what it overrode (and, for rule 30, to fence the provider), and a log line with the user (the API server's audit log has the
//     request). Setting or changing the override on a marked ForeignCluster needs rule 5's permission and
//     the exact cluster ID; removing it needs nothing.
//  18. Liqo's uninstaller may bare-mark, when the operator turns it on, and only from a live pod of its
//     pre-delete Job. Off by default (Options.LiqoUninstallerUsers empty, --liqo-uninstaller-users): no
//     released Liqo marks a ForeignCluster when it uninstalls — v1.0.3, v1.1.0 and v1.2.0's pre-delete Job
//     (Liqo's cmd/uninstaller/main.go main) checks for peerings (pkg/utils/preuninstall.go PreUninstall) and
//     deletes every ForeignCluster (pkg/uninstaller/deletion.go DeleteAllForeignClusters), liqoctl
//     uninstall (pkg/liqoctl/uninstall/handler.go Run) marks nothing either; only liqoctl force unpeer
//     (v1.1.0+, pkg/liqoctl/force/unpeer/handler.go) and Liqo's open force-uninstall PR #3333
//     (uninstaller.forceUninstall) write the mark. Turned on for the ServiceAccounts of Liqo's namespace it
//     names (system:serviceaccount:<Liqo's namespace>:liqo-pre-delete for Liqo's chart), a mark whose
//     request's token is bound to a pod (userInfo.extra authentication.kubernetes.io/pod-name, pod-uid and
//     credential-id, as kube-apiserver sets them for a pod-bound ServiceAccount token) that exists now, read
//     live, in that namespace, with that UID, not ended, running as that ServiceAccount and controlled by
//     the Job of the same name (Liqo's chart names its pre-delete Job and ServiceAccount alike:
//     liqo.prefixedName of "pre-delete", v1.0.3 to v1.2.0) needs neither rule 5's verb nor rule 12's key;
//     the mutating webhook writes the confirmation (rule 1 then holds) and a liqo-janitor.io/reason
//     "marked by Liqo's uninstaller (<user>)" when the request carries none, beside the stamps naming that
//     identity, and the validating webhook emits an Event MarkedByLiqoUninstaller. A token of that
//     ServiceAccount requested without a pod binding, or an impersonation of it, is judged as anyone's,
//     with a warning saying why. Rules 2, 3, 4 (the probe included), 6, 9, 11, 13, 14, 20, 21 and 31
//     still hold; setting rule 17's override, rule 21's acknowledgement or rule 31's override with it still
//     needs the verb. The
//     limit: whoever may impersonate userextras (verb impersonate on resource userextras, for these three
//     keys) and names a live pod of the Job with its UID, or may create pods running as that
//     ServiceAccount in Liqo's namespace, passes as Liqo's uninstaller — both are cluster-admin-grade.
//  19. Keys that arm a bare mark are typed by someone who may mark: setting or changing
//     liqo-janitor.io/confirm-cluster-id or liqo-janitor.io/reason on a ForeignCluster unmarked before and
//     after the request needs rule 5's verb (removing them is anyone's). liqoctl force unpeer sends, as the
//     user, a bare merge patch of the mark alone, which counts a confirmation and a reason set earlier as
//     the marker's; so they are refused from anyone who could not have marked (the gate does not record
//     who confirmed: refusing at the write is the simpler of the two, and costs the one who marks nothing,
//     since marking needs the verb anyway). Liqo's uninstaller keeps rule 18's exemption for its mark, not
//     for keys ahead of it. A key written while neither the gate nor the policy ran cannot be told apart.
//  20. Data-plane veto: refused while Liqo's NetworkConnectionStatus (status.modules.networking.conditions)
//     is Established, or changed less than --min-unreachable ago — the same staleness rules as rule 4. Liqo's
//     foreigncluster controller derives it from the Connection the gateway's connection checker keeps
//     (foreigncluster-controller/status.go handleConnectionStatus, the same in Liqo v1.0.3, v1.1.0 and
//     v1.2.0: Connected → Established, Connecting → Pending, else Error) and stamps its LastTransitionTime
//     only on a change (pkg/utils/foreigncluster/conditions.go EnsureModuleCondition), so a condition that
//     changed a moment ago may have been Established just before. A provider whose API server is down but
//     whose tunnel is up still runs its pods, which keep serving and reaching the consumer: releasing their
//     copies runs every workload twice. No condition at all (the networking module off, or no Connection:
//     handleConnectionStatus deletes it) is no evidence either way, and rule 12's refusal says so. Liqo's
//     uninstaller's marks are held too (rule 18): a tunnel that is up means the provider's pods still run.
//  21. Storm guard: setting a mark is refused while at least --storm-min-unreachable (default 3; 0 turns
//     the guard off) and more than --storm-max-unreachable-share (default 50 %) of this consumer's
//     providers are unreachable by Liqo's evidence at once (liqojanitor.CountStorm over a live list of
//     every ForeignCluster, one per cluster ID, the one being marked counted; unreachable: APIServerStatus
//     not Established and the tunnel not up, liqojanitor.UnreachableByLiqo), unless the marking request
//     carries liqo-janitor.io/acknowledge-unreachable equal to that count. When the consumer itself is cut
//     off, every provider turns unreachable at once and the gate's probe runs from the same side of the
//     cut, so the count is the one hint that the cause is ours. The acknowledgement is stamped like the
//     other break-glass keys: it comes in the marking request itself, which needs rule 5's verb (a mark by
//     Liqo's uninstaller that carries it too), and one the old object already carried does not count (the
//     mark is refused, saying to remove it and give it with the mark); setting or changing it on a
//     ForeignCluster unmarked after the request is refused, for everyone; the mutating webhook writes
//     liqo-janitor.io/acknowledged-by (liqojanitor.Acknowledgement: the time, the requester, the count) and
//     the validating webhook accepts only its own stamp, as rule 6's; both are immutable while marked and
//     go with the mark (rule 7). An acknowledgement given outside a storm must still name the count (the
//     janitor reads it), and a wrong count is refused with the right one. Fail closed when the
//     ForeignClusters cannot be listed. Liqo's uninstaller's marks are held too (rule 18): its bare mark
//     cannot give the count, so a force uninstall in a storm waits for the operator to look (a force
//     uninstall marks every ForeignCluster, but an uninstall and this cluster's own cut look alike here).
//  22. The deletion override cannot be pre-placed: setting or changing
//     liqo-janitor.io/allow-delete-while-unpeering (rule 17) on a ForeignCluster unmarked after the request is
//     refused, for everyone, a holder of rule 5's verb included (removing it is anyone's), as the fence
//     record is (rule 15); the mutating webhook drops it from a request that sets the mark, so one placed
//     before the mark (while the gate was absent) or given with it never survives into it, and the
//     validating webhook refuses a mark still carrying one. A holder of the verb sets it on the marked
//     ForeignCluster, for that mark (rule 17); removing the mark removes it (rule 7).
//  23. The gate records where the provider was when it admitted the mark: on the request that sets the mark
//     the mutating webhook writes liqo-janitor.io/mark-targets (liqojanitor.MarkTargets: the
//     liqojanitor.Targets that liqojanitor.ProviderTargets gathers — the status' apiServerUrl and
//     foreignProxyUrl, and the control-plane Identity's API server, proxy URL and CA in the tenant namespace
//     the status names — where they came from, and when), replacing whatever the request carried; the read
//     of the Identity is live and bounded (1 s), and when it fails the record says so in its from and keeps
//     what the status gives. liqoctl force unpeer (v1.1.0+) deletes the tenant namespace, with the Identity,
//     and Liqo's status rebuild then drops the URLs (foreigncluster-controller/status.go
//     clearStatusExceptConditions, v1.0.3 to v1.2.0): a janitor that first sees the mark after that falls
//     back to this record. Setting
//     or changing it on a ForeignCluster unmarked after the request is refused, for everyone (as the stamps
//     are, rule 6); it is immutable while marked; removing the mark removes it (rule 7).
//  30. A recorded, unfenced return holds the ForeignCluster: a marked ForeignCluster whose provider's return
//     the janitor recorded for the current mark — on it (liqo-janitor.io/cleanup starting "provider
//     returned at <RFC 3339>", not older than marked-at: liqojanitor.ReturnRecordedAt), or, when that write
//     was refused (another webhook: Liqo's fc.mutate.liqo.io while its pod is down), kept in the janitor's
//     records (ConfigMap liqojanitor.RecordsConfigMap, read live in the janitor's own namespace,
//     Options.Namespace, and nowhere else: a look-alike in another namespace is nobody's record;
//     liqojanitor.KeptRecordOf of that mark) — is not deleted until a fence record stamped by the gate for
//     that very return is there (rule 15: liqojanitor.FenceRecord Stamped, naming that return's time,
//     stamped no earlier), or rule 17's override is used. The provider may still run this consumer's
//     workloads, the copies of the pods released here; deleting the ForeignCluster would take the janitor's
//     record of the return, the reason to fence, with it. The refusal names the return (when, how) and
//     gives `kubectl liqo-janitor fence <cluster ID>` and the override. Fail closed when the records cannot
//     be read (the gate refuses to start without the janitor's namespace). The gate reads that one ConfigMap with get, granted in
//     the release namespace by name (the chart's templates/brake-rbac.yaml, shared with the janitor: one
//     ServiceAccount).
//  31. A mark waits for the provider's fence: with a contract the janitor recorded for the provider — its
//     record of its renewals of the provider's fence Lease (liqojanitor.FenceRenewal, by spec.clusterID in
//     ConfigMap liqojanitor.FenceRenewalsConfigMap, read live in the janitor's own namespace,
//     Options.Namespace, and nowhere else) — setting the mark is refused before FenceRenewal.Deadline: the
//     last renewal that may have landed plus the contract's SafeAfter, by when the provider's agent has
//     surely stopped this consumer's pods (janitor/providerfence). Liqo ≥ v1.1 force-deletes this
//     consumer's pods of the provider on the mark, and their controllers replace them: before the deadline
//     the provider may still run the copies, and a workload would run twice. The refusal gives the deadline
//     (UTC, RFC 3339), the contract and the next step; the gate's clock and the janitor's are this
//     cluster's. No record, or one without a contract or without a renewal that may have landed, is no
//     deadline (the provider's agent never armed for this consumer): as before. Fail closed when the
//     ConfigMap cannot be read, or the provider's record is there but cannot (not JSON, or renewals that may
//     have landed under a contract that does not parse: the agent may be armed, the deadline cannot be
//     computed). Liqo's uninstaller's marks are held too (rule 18). The break-glass override:
//     liqo-janitor.io/override-fence-deadline equal to spec.clusterID, in the marking request itself (rule
//     5's verb, Liqo's uninstaller's mark included), passes the deadline, and an unreadable record, with a
//     warning; it is stamped like rule 21's acknowledgement — the mutating webhook writes
//     liqo-janitor.io/fence-deadline-overridden (liqojanitor.FenceDeadlineOverride: the time, the requester
//     and the deadline it read) and the validating webhook accepts only its own stamp — cannot be
//     pre-placed (setting or changing it on a ForeignCluster unmarked after the request is refused, for
//     everyone; one the old object carried does not count for the mark: remove it and give it with the
//     mark), is immutable while marked with its stamp, and goes with the mark (rule 7). The gate gets that
//     one ConfigMap by name in the release namespace (the chart's templates/brake-rbac.yaml); only the
//     janitor's ServiceAccount writes it.
//  32. The released-volumes record is the gate's. kubectl liqo-janitor release-volumes deletes the PVCs
//     of Liqo's virtual storage pinned to a dead provider, on the operator's typed data-loss confirmation,
//     and records on the ForeignCluster which remote PVCs' data it abandoned there
//     (liqo-janitor.io/volumes-released: liqojanitor.VolumesReleased, JSON, every volume released under the
//     current mark). As the fence record (rule 15): setting or changing it on a ForeignCluster unmarked after
//     the request is refused, for everyone (removing it there is anyone's), and the mutating webhook drops it
//     from a request that sets the mark (the validating webhook refuses a mark still carrying one). On a
//     marked ForeignCluster setting or changing it needs rule 5's permission; the mutating webhook rewrites
//     its at (now, RFC 3339, UTC) and by (the requester), keeping its volumes, and the validating webhook
//     accepts only that form: one that does not parse, names no volume, another user or a time more than a
//     few seconds old (or ahead) is refused. While marked it only grows: a change that drops a volume it
//     listed (by UID), or removes it, is refused, saying what it would lose. Removing the mark removes it
//     (rule 7) and is answered with liqojanitor.VolumesReleased.RepeerWarning: peered again, the provider's
//     new virtual kubelet deletes the remote PVCs it finds with no local claim — the data released. The
//     janitor keeps a copy of every stamped record it sees on a marked ForeignCluster, merged by cluster ID
//     and never dropping a volume (janitor rule 23), in ConfigMap liqojanitor.ReleasedVolumesConfigMap in its
//     own namespace (Options.Namespace, and nowhere else); a fourth webhook, failurePolicy Ignore (it only
//     warns: peering never waits for the gate, rule 8), answers a CREATE of a ForeignCluster, or an UPDATE
//     that sets or changes spec.clusterID, whose cluster ID that copy names with the same warning (or, when
//     the copy cannot be read, a warning that the gate cannot tell). The gate gets that one ConfigMap by name,
//     live, in the release namespace (the chart's templates/brake-rbac.yaml); only the janitor's
//     ServiceAccount writes it.
//
// The ValidatingAdmissionPolicy in manifests/policy enforces, with the gate absent, what CEL can: rules 1,
// 2, 5, 10, 15 and 19 through the authorizer, 6's immutability, 11, 13, 14; of 20, the mark refused while
// the tunnel is Established (not the wait after it left: CEL has no clock); of 6, the stamps set only in
// the marking request, marked-by naming its requester, and a marked-at written before the mark refused in
// it; 23's record only in the marking request and immutable while marked (not its content: CEL reads no
// Identity); of 21, the acknowledgement
// only in the marking request and not counted from the old object, its stamp only with the mark and naming
// the requester, both immutable while marked, and Liqo's uninstaller needing the verb to give it (not the
// count itself: CEL cannot list the other ForeignClusters); of 12, the no-evidence key
// refused ahead of the mark and not counted from the old object (not the evidence itself); of 15, the
// record refused on an unmarked ForeignCluster and in a request that sets the mark (with the gate absent
// nothing drops it: remove it first), and on a marked one the requester's name and a recorded return (no
// time: CEL has no clock; not the return's time); 16 by the janitor's record alone (read as text: it must
// contain "phase":"Complete"; CEL cannot list the objects Liqo re-creates the ForeignCluster from, so one
// that comes back after the janitor recorded the unpeering complete is the gate's to see), and 17; 22 (the
// override refused on an unmarked ForeignCluster and in a request that sets the mark: with the gate absent
// nothing drops it, remove it first); 30 by the return record on the ForeignCluster and the fence record
// (its time, its user, the return it names: CEL's timestamp()), not a return kept only in the janitor's
// namespace (CEL reads no other object); 18 only where the mutating webhook ran (a bare mark has no
// confirmation: with the gate absent it is refused) and from a pod-bound token (the extras only: CEL
// cannot read the pod). Not 31: CEL reads no ConfigMap, so with the gate absent the provider's fence
// deadline is held by the janitor alone (it releases and force-deletes nothing before it), while Liqo ≥
// v1.1 acts on the mark at once; an override or its stamp written then does not count for a mark the gate
// judges later (refused as pre-placed). Not 32: CEL cannot parse the record's JSON nor read the janitor's
// copy; with the gate absent a record is neither stamped nor kept append-only, and the janitor copies only a
// record that carries a readable time and a user.
package webhook
