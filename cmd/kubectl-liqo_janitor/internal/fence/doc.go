// Package fence is `kubectl liqo-janitor fence`: on a provider this consumer marked permanently
// unreachable and that answers again, it stops exactly the workloads this consumer left running there
// (its ShadowPods, whose pods the garbage collector then deletes, and with --all its replicated copies in
// its tenant namespace there), and records it on the ForeignCluster. It acts and records only on a
// provider whose Liqo cluster ID it read there and that matches, after the operator typed that ID, and
// reads there only once the server is the API server the janitor kept for the mark and its certificate
// verified against the CA kept with it.
//
// Read it in the order a fence runs: options.go (Options, Validate, Run: the steps in one place),
// scope.go (what one fence knows), kept.go (the provider the janitor kept: its host and CA, verified
// before anything is read there), provider.go (reaching the provider, never running a credential
// plugin from the cluster), identify.go (is it the marked provider?), plan.go (what this consumer left
// there), report.go (the plan and the result, as tables or the -o document), confirm.go (the typed
// provider ID), delete.go (delete with preconditions, then wait until gone, in Liqo's order), describe.go
// (naming what is left, and why) and record.go (the fenced record on the ForeignCluster).
package fence
