// Package liqojanitor is liqo-janitor's shared vocabulary: what the dead mark is and what it means on a
// ForeignCluster (the annotations, IsMarked, Confirmed, MarkedAt, APIServerStatus and Reachable, a
// cluster ID's ForeignClusters), the break-glass verb and its ClusterRole, the Liqo labels, finalizers and
// install names (its namespace, its uninstaller's ServiceAccount) the components match on, the records the
// components read of each other (records*.go), the provider-side fence's lease and contract, with the
// deadline a consumer computes from it (fencelease.go), and the scheme that knows the Kubernetes and Liqo
// types. The gate (package webhook), the janitor (package janitor) and the
// plugin import it and none owns it; it imports none of them.
//
// It is the module's root package, as Go projects keep their domain vocabulary: the top level of the
// repository stays cmd, webhook, janitor, manifests and test, and a reader reads liqojanitor.IsMarked(fc)
// in both halves.
package liqojanitor
