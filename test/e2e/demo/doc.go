// Command demo plays out the dead-provider story on a local control plane (`make demo`): a Liqo consumer
// peered with three providers loses one; marking it dead is refused until it is confirmed, and then
// liqo-janitor (the real binary) releases exactly what the dead provider left stuck. Then the provider,
// only cut off by a partition, answers again: the janitor reports its return, and the operator fences it
// (`kubectl liqo-janitor fence`), stopping on the provider exactly this consumer's workloads.
package main
