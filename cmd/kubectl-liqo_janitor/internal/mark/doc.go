// Package mark is `kubectl liqo-janitor mark`: it declares a provider permanently unreachable through
// liqo-janitor's gate. It shows what the mark would release and what "unreachable" rests on (package
// view), checks before anything is sent what the gate refuses whatever its flags (the data plane up,
// gate rule 20; no reachability evidence without the second key, gate rule 12; a storm's count, gate rule 21),
// sends the mark as a server-side dry run and refuses it when the gate does not answer (no stamps naming
// the requester) unless --without-gate, asks the operator to type the cluster ID (and the storm's count),
// sends it for real, and reports success only once the stored ForeignCluster carries the gate's stamps.
//
// Read it in the order a mark runs: options.go (Options, Validate, Run: the steps in one place),
// report.go (the plan shown first, and what a dry run or a stored mark reports), guard.go (the plugin's
// own checks of gate rules 12, 20 and 21, and the storm's count), request.go (the mark's patch, the
// request that sends it and the gate's stamps on its answer), gate.go (the dry run through the gate, and
// the gate's answer plan shows) and confirm.go (the typed cluster ID and count).
package mark
