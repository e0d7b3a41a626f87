// Package janitor is the controller that, for ForeignClusters whose permanently-unreachable mark is set,
// confirmed and still valid, releases exactly the objects a dead provider leaves stuck: it force-deletes
// the terminating pods on the cluster's virtual nodes and removes the Liqo finalizers that can never be
// satisfied, and writes nothing for a live cluster or an object that is not being deleted.
//
// # The janitor's rules
//
// The code cites them by number.
//
//  1. Dead by cluster ID: a cluster ID is dead when every ForeignCluster Liqo could take for it (by
//     spec.clusterID or by its liqo.io/remote-cluster-id label) is marked "true", confirmed, the one Liqo's
//     own lookup finds (label equal to spec.clusterID), not Established, its data plane not up
//     (NetworkConnectionStatus Established: the provider's pods still run and serve), not paused, not held by
//     a storm (rule 18), past its grace period and past its provider's fence deadline (rule 22) — re-read
//     from the API server before every batch of writes. The grace period ends --grace-period after the later of marked-at and the janitor's first sight
//     of the mark, which it records on the ForeignCluster (first-seen-at, grace-ends-at) so that it survives
//     restarts and failovers: a forged or pre-written marked-at never shortens it. One ForeignCluster that is
//     not dead keeps the cluster ID alive (assessClusterID).
//  2. Marked but not dead: nothing of the cluster is written, its ForeignCluster included (but rule 9's
//     plan in the grace period and while the provider's fence holds it, rule 22); an Event may say why it
//     waits.
//  3. Trust: an object is tied to a cluster only through what the consumer's own Liqo controllers write.
//     A Node is the cluster's when its labels say so and a VirtualNode of the same name has that
//     spec.clusterID (the provider writes the Node's labels, the consumer the VirtualNode).
//  4. Targets (the table in pass_releaser.go; target_pods.go, target_replicated.go, target_offloading.go,
//     target_identity.go): terminating pods on the cluster's virtual nodes are force-deleted; on a Node whose
//     VirtualNode is being deleted, so are the pods Liqo's own drain selects, terminating or not
//     (liqo.io/shadowPod=true, not DaemonSet or mirror pods: virtualnode-controller/drain.go
//     getPodsForDeletion), and every other pod there is left alone and counted as blocked, its reason logged;
//     terminating ResourceSlices, NamespaceMaps and Renews routed to the cluster lose
//     crdreplicator.liqo.io/resource; terminating NamespaceOffloadings lose their finalizer only after Liqo's
//     own deletion did its local part and only dead clusters are left, decided again on every attempt on live
//     reads and on the dead set re-read before every batch and every retry (target_offloading.go); opt-in,
//     the control-plane identity Secret loses crdreplicator.liqo.io/operator.
//  5. Only finalizers of the allow-list are removed, with JSON patches that test the object's UID and the
//     exact entry; pods are deleted with grace 0 and a UID precondition; a pod's finalizers are never
//     stripped. Every such write is internal/release's; what the janitor owns (its annotations on a
//     ForeignCluster, its records in its namespace) is written by internal/records alone, and the files of
//     package janitor write nothing (but events), which a lint rule checks (.golangci.yml).
//  6. Nothing that is not being deleted is written, but the pods Liqo's drain selects on rule 4's
//     VirtualNode.
//  7. Stateless and watch-driven: killed at any point and restarted, it finishes the job; no polling. A
//     pass does not watch its own writes: the pod watches of the nodes it writes pause until it ends, and
//     then enqueue only for what differs from what it left (internal/podwatch).
//  8. Every action is visible: events (quoting the operator's reason; on the ForeignCluster, one per kind
//     per pass with the count and the first and last object, per object only with --object-events), the
//     cleanup annotation, metrics, logs (every release); --dry-run writes nothing but events and logs.
//     The cleanup annotation is the clean-up's one record: each pass derives it from the record it read
//     live and what it did (report_progress.go), never from one process's memory, and CleanupStarted and
//     CleanupDone fire on the record's own transitions after the write that made them — once per
//     clean-up, across restarts and failovers.
//  9. The grace period is an informed undo window: while a confirmed mark waits it out (and nothing else
//     keeps the cluster alive), each pass computes with the same targets and selection what it would
//     release — as if the cluster were dead, every write replaced by its outcome — and shows it on the
//     ForeignCluster: the cleanup annotation ("grace 22s left: would release pods 400, …; blocked 1") and
//     one Waiting event, written when the plan is made and again only when its numbers change, the
//     annotation only onto the ForeignCluster version the plan was made for, compared with the live
//     annotation so a removed or forged plan is written again, and never over the record of a clean-up
//     that has begun. With the plan go the janitor's first-seen-at and grace-ends-at records. It is the
//     one exception to rule 2; nothing of the cluster's objects is written. The same holds while the
//     provider's fence holds the cluster past its grace period (rule 22): the plan is led by what the
//     janitor waits for, and its countdown is the whole hold's.
//  10. A provider that answers again after its mark has returned: it is not gone, and the copies of the pods
//     the consumer force-deleted may still run there. The evidence is Liqo's APIServerStatus or its data
//     plane (NetworkConnectionStatus) turning Established after the mark, or an answer to the janitor's own
//     probe of the status' API-server URLs (every --return-probe-interval, marked clusters only:
//     return_probe.go), for every marked ForeignCluster — in its grace period, during and after a clean-up,
//     paused or not (return_seen.go). It stops every release for that mark at the next re-check, for good
//     (the record below keeps it returned when the provider goes away again); the janitor writes the return
//     first into the cleanup annotation (the second exception to rule 2), sends one Warning ProviderReturned
//     event on that record's transition (who marked it and when, how many pods it force-deleted, the fence
//     command), and counts it in liqo_janitor_returned_clusters until the operator's `kubectl liqo-janitor
//     fence` records its fence (liqo-janitor.io/fenced), which it quotes in the record and a Fenced event. The
//     gauge counts the returns kept in the janitor's namespace (rule 17) too, so neither deleting the
//     ForeignCluster nor a restart silences it: a kept return counts until the janitor sees its fence (and
//     marks it fenced in the kept record), or until the operator removes the record by hand. An
//     Established status from before the mark is no return but rule 1's veto (the gate refuses that mark).
//  11. Another admission webhook may refuse the janitor's writes (Liqo's own use failurePolicy Fail: while
//     Liqo's webhook pod is down, ResourceSlice finalizer patches and every ForeignCluster metadata patch
//     fail): the janitor tells that from other failures (release.RefusingWebhook), counts the objects as
//     refused_by_webhook, names the webhooks in one BlockedByWebhook event (WebhookAnswering when they
//     let writes through again), writes no more of that kind in the pass and only one at first in the
//     next, and comes back after a short capped backoff (1 s doubling to 8 s), so the rest goes within
//     seconds of the webhook answering; what it released meanwhile joins the record once it can be written.
//  12. For an older Liqo what a newer Liqo does by itself, nothing more (internal/liqoversion reads the
//     installed version from Liqo's controller-manager image, else from its CRDs): on Liqo before v1.2.0, the
//     legacy internalfabric-controller.liqo.io/finalizer of an InternalFabric of a dead cluster, being
//     deleted in that cluster's tenant namespace that is itself being deleted, is removed once it has been
//     deleting for --fabric-settle (default 2m; Liqo's fabric removes it itself when it can, after its node's
//     geneve interface), as v1.2.0's internalfabric controller removes it at once (target_fabric.go); the
//     drain selects as the installed Liqo's dead drain does (v1.0 and v1.1: every liqo.io/shadowPod=true pod;
//     v1.2 and unknown: not DaemonSet or mirror pods). The route and firewall finalizers (they guard the
//     nodes' kernels), the VirtualNode finalizer and the namespace's finalization stay Liqo's and
//     Kubernetes': reported, never written.
//  13. Done means the unpeering: for a dead cluster each pass follows the consumer's side of the peering
//     to its end (internal/unpeering) — its tenant namespaces (by Liqo's labels, and the one the
//     ForeignCluster's status names), what holds a terminating one (every object with a Liqo finalizer, and
//     what the namespace controller reports), its VirtualNodes, and every object Liqo re-creates the
//     ForeignCluster from (liqojanitor.PeeringKinds labelled with the cluster ID, in any namespace: its
//     networking Configuration, Connection and gateways, Tenant, Identities, VirtualNodes and virtual Nodes,
//     what Liqo's foreigncluster controller watches with its enqueuer, foreigncluster_controller.go, v1.0.3 to
//     v1.2.0) — and records each object left, what holds it, whether liqo-janitor releases it and the next
//     step in liqo-janitor.io/unpeering, written with the cleanup record. The record is complete when none of
//     those objects and no VirtualNode of the cluster is left: the ForeignCluster, deleted then, stays
//     deleted (gate rule 16 holds it until then). A namespace that carries Liqo's tenant labels counts only
//     through those objects in it: one with nothing of them holds nothing, and one still there once they
//     are gone is a note. While only kinds the janitor does not watch hold it (a Tenant, an Identity, the
//     networking objects), a pass looks again every 30 s. UnpeeringComplete is sent once, on the record's
//     transition to complete; CleanupDone means only that liqo-janitor's own part is done. After it
//     released an identity Secret the record says that Liqo's crd-replicator leaks that cluster's reflector
//     until it restarts. (A provider can label its virtual Node with another cluster ID through its
//     ResourceSlice's node labels: that holds the other cluster's record in progress, the safe side.)
//  14. A brake that needs no ForeignCluster write: while the ConfigMap liqo-janitor-brake exists in the
//     janitor's own namespace (Options.Namespace), nothing is released for any cluster — read live before a
//     pass releases and before every batch (verdict_brake.go), watched so that setting or removing it starts
//     a pass, shown by a Waiting event, liqo_janitor_brake and the LiqoJanitorBraked alert. Pause and unmark
//     are ForeignCluster writes another webhook (Liqo's, failurePolicy Fail) may refuse; this one is not.
//     Writes another webhook refuses never make a pass return a requeue and an error together (the capped
//     backoff of rule 11 holds).
//  15. The janitor's records belong to one mark: a time record older than marked-at is an earlier mark's
//     (markRecord, recordedReturn), and on a ForeignCluster it sees without the mark — an unmark the gate
//     did not see — it ends them itself (verdict_marks.go): first-seen-at, grace-ends-at, a grace-window plan
//     and the unpeering record go, as the gate removes them with a mark (gate rule 7), and a return record
//     stays as history under "ended with its mark: ". The next mark gets its whole grace window, and a return
//     seen during an earlier mark never holds it.
//  16. A return is seen whatever Liqo forgot (return_targets.go): at its first sight of a confirmed mark the
//     janitor keeps where the provider's API server is and how Liqo reaches it — the status' URLs and the
//     control-plane Identity's authParams (apiServer, proxyURL, ca), or, where Liqo cleared them before
//     that sight (or knows no CA the gate saw), the targets the gate recorded when it admitted the mark
//     (liqo-janitor.io/mark-targets, gate rule 23) — in the ConfigMap liqo-janitor-records of its own
//     namespace, one key per ForeignCluster, for that mark; its probe then uses those targets
//     after Liqo has cleared the status (force unpeer), through Liqo's proxy when there is one, and counts
//     an answer only when the server's certificate verifies against the provider's CA (without a CA any
//     answer counts, and the return says it was not verified). The plugin's plan and status name these
//     targets, or say that a mark has none. No blind window: besides its rounds it probes a confirmed mark's
//     provider once at its first sight of the mark and once right before its first release for it (an
//     answer stops that release; probeNow).
//  17. A return is never forgotten (return_targets.go, return_probe.go): the janitor keeps a return in
//     liqo-janitor-records before it writes it onto the ForeignCluster, where another webhook may refuse it
//     (Liqo's fc.mutate.liqo.io while Liqo's webhook is down); ProviderReturned fires on the first of the
//     two records. Every leader reads the ConfigMap before its first verdict, so a restart or a failover
//     never forgets a return and never releases after it; the refused record write is named in a
//     BlockedByWebhook event and retried on rule 11's capped backoff (a requeue, never with an error).
//     ProviderReturned is never lost: it is sent for a kept return whose record says it has not been told,
//     before the ForeignCluster's record is written, and the kept record then says it was (told) — so a
//     conflict or a refusal of that write, or a leader change between keeping and telling, still ends with
//     one event (two only if the told record itself cannot be written).
//  18. Storm guard, before the janitor's first write for a mark: while Options.Storm (the gate's
//     --storm-min-unreachable and --storm-max-unreachable-share) sees a storm — at least that many and more
//     than that share of this consumer's providers unreachable by Liqo's evidence at once
//     (liqojanitor.CountStorm: API server not Established and data plane not up) — a mark it has not begun
//     with (no first-seen-at record of it) and that carries no acknowledgement stamped by the gate
//     (liqo-janitor.io/acknowledge-unreachable with the gate's acknowledged-by of that count) waits:
//     nothing is written for it, one Waiting event says why, and its grace period starts when the hold ends.
//     So many at once is more likely this consumer's own cut than every provider's death, and the gate's
//     probe runs from the same side of it (gate rule 21 refuses such a mark; this holds one made past the
//     gate). A mark begun before the storm keeps its course; an acknowledged one proceeds. The providers,
//     the unreachable ones and the storm are exported (liqo_janitor_providers,
//     liqo_janitor_unreachable_providers, liqo_janitor_storm; the LiqoJanitorStorm alert).
//  19. Nothing silently off: the janitor's own namespace (Options.Namespace, the binary's --namespace, the
//     pod's by default) holds the brake (rule 14), the kept probe targets (16) and the kept returns (17);
//     Setup refuses to run without it, and the binary out of a cluster without --namespace refuses to
//     start, naming the flag. The leader-election Lease lives there too by default.
//  20. A held mark resumes when the storm ends: every change of the count of unreachable providers or of the
//     storm itself enqueues every marked ForeignCluster (watchStorm), and a held mark is assessed again at
//     least every minute besides; its grace period starts when the hold ends (rule 18).
//  21. A marked-at in the future is no stamp: one more than liqojanitor.MaxClockSkew (30s) ahead of the
//     janitor's clock was not the gate's (it stamps its own clock, in this cluster), so the janitor ignores
//     it (ignoreFutureStamps) and counts the grace period from its own first sight, rather than waiting
//     until a time the writer chose.
//  22. The janitor waits for the provider's fence (verdict_fence.go): where a provider fences this
//     consumer by itself (its agent, janitor/providerfence), the janitor's renewer keeps its renewals of that
//     provider's Lease and the contract the provider published, per provider cluster ID, in the ConfigMap
//     liqo-janitor-fence-renewals of the janitor's own namespace (liqojanitor.FenceRenewal). Nothing of a
//     cluster ID is released — no pod force-deleted, no finalizer removed — before its provider has surely
//     fenced this consumer: liqojanitor.FenceRenewal.Deadline, the last renewal that may have landed plus the
//     contract's SafeAfter, on this consumer's clock; whoever set the mark and however, through the gate or
//     past it (the policy fallback, Liqo v1.0's own tools). The record is read live with the verdict, before
//     a pass and before every batch of writes as rule 1's evidence is, so a stale cache never lets a release
//     through early. A ConfigMap the API server does not give is no verdict (an error: nothing is
//     released); a record that does not parse, or whose contract does not (liqojanitor.ParseFenceRenewal),
//     holds its cluster ID (WaitFenceUnreadable, one Waiting event saying which key and why) until it reads
//     again — a consumer that had a contract never acts as if it had none. A record without a contract, or
//     without a renewal that may have landed (the provider's agent never armed), holds nothing. The grace
//     period and the deadline both hold and the later wins; while the deadline holds (WaitFenceDeadline) the
//     cluster is held as in its grace period: nothing of its objects is written, and the plan is still shown
//     (rule 9) — the mark is still an undo window, and what goes at the deadline is what the operator needs
//     to see then — led by "waiting for the provider's fence until <UTC> (the provider's contract: …)" in the
//     cleanup annotation (a grace plan, so a removed mark takes it along: gate rule 7, rule 15) and one
//     Waiting event; the pass comes back at the deadline itself, not by polling. A change of the ConfigMap
//     (watched alone) enqueues the marked clusters whose record changed: a record that appears during a
//     clean-up stops it at its next batch and brings the cluster back to wait, and one fixed by hand
//     releases a held cluster at once; an unreadable one is assessed again every 30 s besides. PlanCluster
//     carries the deadline, the contract, the time left or why the record is unreadable
//     (Plan.FenceDeadline, FenceContract, FenceLeft, FenceUnreadable). The one way past the wait is the
//     operator's break-glass override as the gate stamped it in the marking request (gate rule 31: the
//     override naming the cluster ID, its stamp naming the marked-by user at marked-at; fenceOverridden);
//     an override written past the gate lifts nothing.
//  23. The volumes released from a cluster are never forgotten (return_targets.go releasedCopy): when a
//     pass sees, on a marked ForeignCluster, the released-volumes record the gate stamps (gate rule 32:
//     liqo-janitor.io/volumes-released, a liqojanitor.VolumesReleased that parses and carries a readable
//     time and a user), it merges the record's volumes, by UID, into its copy under the cluster ID in the
//     ConfigMap liqo-janitor-released-volumes of its own namespace (created if missing; read live, patched
//     under the optimistic lock; a record that adds no volume writes nothing). It never drops a volume nor
//     deletes an entry: the unmark drops the record from the ForeignCluster and the ForeignCluster may be
//     deleted, and the gate warns from this copy when the cluster ID is peered again (the provider's new
//     virtual kubelet would delete the remote PVCs holding the released data). A dry run keeps nothing. The
//     janitor itself never writes a PVC or a PV.
//
// # Reading order
//
// Files are named by role, one prefix per role, read in the order the data flows:
//
//   - controller_ — what is watched and why each watch enqueues (controller_setup.go), a pass: read,
//     assess live, then wait, show the plan or clean up (controller_reconcile.go), and the options.
//   - verdict_ — whether a marked cluster is dead (verdict_dead.go), its one remembered input, the first
//     sight of a mark (verdict_sight.go), the brake (verdict_brake.go), the provider's fence it waits for
//     (verdict_fence.go), and the end of a mark's records when it goes unseen by the gate (verdict_marks.go).
//   - pass_ — what one pass knows and the one place it stops (pass_scope.go), the target table and the
//     worker pool that runs it (pass_releaser.go), what it did (pass_tally.go), what paces the next one
//     after refused writes (pass_pacing.go); the installed Liqo it acts for is internal/liqoversion's.
//   - target_ — the targets, on their sources (target_sources.go): pods, replicated objects,
//     NamespaceOffloadings, the identity Secret, and what an older Liqo's fabric needs (target_fabric.go).
//   - report_ — the clean-up's record (report_progress.go), the events and what the janitor's own keys say
//     (report_publish.go, written through internal/records), what the reports remember between passes (report_memory.go), the metrics,
//     the unpeering internal/unpeering surveyed (report_unpeering.go), and the plan for the plugin
//     (report_plan.go, PlanCluster, with the pinned volumes release-volumes reads).
//   - return_ — a provider that answers again (return_seen.go), the janitor's own probe
//     (return_probe.go), and the probe targets, returns and released volumes it keeps in its namespace
//     (return_targets.go).
//
// The leaves below it are self-contained and one-way: internal/release (every write to an object the
// janitor does not own, and the reading of another admission webhook's refusal), internal/records (every
// write to what it owns: its annotations, onto the version read, and its records ConfigMaps),
// internal/podwatch (the pods of dead nodes, watched per node or listed live), internal/liqoversion
// (the installed Liqo's version, read at most once a minute) and internal/unpeering (what an unpeering
// left, and the volumes pinned to a dead cluster: read live, one entry point for the pass, Survey). Test
// files take the prefix of what they test.
package janitor
