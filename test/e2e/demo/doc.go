// Command demo plays out the dead-provider story on a local control plane (`make demo`): a Liqo consumer
// peered with three providers loses one; marking it dead is refused until it is confirmed, and then
// liqo-janitor (the real binary) releases exactly what the dead provider left stuck. The operator deletes
// the tenant namespace (what `liqoctl force unpeer` does), the janitor's record names what holds it (the
// fabric's finalizers it never releases, the VirtualNode), the demo plays Liqo's own controllers, and the
// namespace controller deletes the namespace: unpeering complete. Then the provider, only cut off by a
// partition, answers again: the janitor reports its return, and the operator fences it
// (`kubectl liqo-janitor fence`), stopping on the provider exactly this consumer's workloads. In the last
// chapter a third provider fences itself (issue 37): its admin opts the consumer in and runs the provider
// fence agent, the consumer's janitor renews its Lease with the credential the provider handed out; after
// a partition the agent stops the consumer's pods there by itself, the gate refuses the operator's mark
// until the deadline computed from the provider's contract and then admits it, and the demo shows on one
// clock that the provider's last copy was gone before the consumer's first force-delete.
package main
