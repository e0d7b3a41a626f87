// Package unpeering follows what the unpeering of a dead cluster left on the consumer (janitor rule 13):
// Survey, the one entry point of the janitor's pass, reads — never writes — the cluster's tenant
// namespaces, the objects with a Liqo finalizer that hold a terminating one (holders.go), its VirtualNodes,
// every object Liqo re-creates the ForeignCluster from, and the volumes pinned to the cluster
// (volumes.go), and returns the record the janitor publishes (liqojanitor.Unpeering). The pinned volumes
// are also the plan's (PinnedVolumes) and the plugin's release-volumes' (ClusterNodes, PinnedVolumesOn,
// through package janitor).
package unpeering
