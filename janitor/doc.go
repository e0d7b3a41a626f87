// Package janitor is the controller that, for ForeignClusters whose permanently-unreachable mark is set,
// confirmed and still valid, releases exactly the objects a dead provider leaves stuck: it force-deletes
// the terminating pods on the cluster's virtual nodes and removes the Liqo finalizers that can never be
// satisfied, and writes nothing for a live cluster or an object that is not being deleted.
package janitor
