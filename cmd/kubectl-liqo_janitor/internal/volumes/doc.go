// Package volumes is `kubectl liqo-janitor release-volumes` (issue 38 item 2): on a provider declared dead
// (marked and confirmed), it releases the PVCs of Liqo's virtual storage class pinned to it — bound to a
// placeholder PV whose node affinity names the dead cluster, so that their workloads are Pending for ever —
// by deleting them, and re-creating those no StatefulSet generates as Liqo's own `liqoctl move volume`
// does. Their data lives only on the dead cluster; releasing them abandons it, which is the operator's
// typed decision (--confirm-data-loss=<cluster ID>). It never removes a finalizer, never deletes a PV and
// never forces a pod: it waits for the janitor's pod rule, and skips a volume whose pod does not go.
//
// Read it in the order a release runs: options.go (Options, Validate, Run: the steps in one place),
// scope.go (what one release knows: the ForeignCluster, the janitor's records, the dead cluster's
// virtual nodes, the pinned volumes), plan.go (what would happen to each, and the exact command),
// dead.go (the cluster re-read before each volume: still dead, no unfenced return), pods.go (who uses a
// volume, and the wait for the pods on the dead cluster's nodes), volume.go (the last checks, the delete with a
// UID precondition), recreate.go (the wait until gone, the re-creation), record.go (the released volumes
// on the ForeignCluster, and the check before anything is deleted that they can be recorded) and report.go (the plan and the result, as lines or the -o document).
package volumes
