// Package liqojanitor is the API of liqo-janitor on a ForeignCluster: what the gate (package webhook),
// the janitor (package janitor) and the plugin read and write of each other, and of Liqo. None of them
// owns it; it imports none of them. It holds declarations, their formats and read-only lookups, and one
// piece of shared behaviour, the prober; the one write left here is ApplyFenceCredential
// (fencecredential.go), which the plugin and the test harness share.
//
// The map, file by file:
//
//   - keys.go: every key liqo-janitor owns (annotations, labels, ConfigMap and Lease names), one block per
//     writer: the operator's, the gate's stamps, the janitor's records, the provider-side agent's records,
//     the install's names.
//   - liqo.go: every Liqo key, kind (PeeringKinds), finalizer and install name the add-on reads, with the
//     Liqo versions checked; the only product file that imports Liqo's pkg/consts.
//   - foreigncluster.go: the predicates on a ForeignCluster (IsMarked, Confirmed, MarkedAt, Paused,
//     Reachable, TunnelUp, UnreachableByLiqo, FoundByLiqo) and the lookups done as Liqo does them
//     (ForeignClustersOf, TenantNamespaces, LocalClusterID, VirtualNodeNames, PeeringLeft).
//   - records.go: every annotation record's format, one String and one Parse each (RecordTime and the time
//     records, MarkStamp, GracePlan, Progress, ReturnRecord with the ended-mark form, Acknowledgement,
//     FenceRecord, RecordedReturn, MarkTargets, VolumesReleased).
//   - records_unpeering.go: the unpeering record (Unpeering, LeftObject) and the pinned volumes it reports
//     (PinnedVolume).
//   - records_store.go: the janitor's ConfigMap records in its namespace (KeptRecord in
//     liqo-janitor-records, the released volumes) and their readers.
//   - fencelease.go, fencestate.go, fencerenewal.go, fencedeadline.go: the provider-side fence's contract,
//     the agent's records, the consumer's renewal records and the deadline read from them;
//     fencecredential.go: ApplyFenceCredential, the fence credential the plugin and the test harness make
//     on a provider.
//   - storm.go: the storm policy (StormGuard, CountStorm, Storm).
//   - probe.go: the prober, the one piece of shared behaviour.
//   - scheme.go: the scheme that knows the Kubernetes and Liqo types.
//
// It is the module's root package, as Go projects keep their domain vocabulary: the top level of the
// repository stays cmd, webhook, janitor, manifests and test, and a reader reads liqojanitor.IsMarked(fc)
// in both halves.
package liqojanitor
