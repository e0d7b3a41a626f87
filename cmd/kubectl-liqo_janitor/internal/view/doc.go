// Package view is what `plan`, `mark` and `status` show of one ForeignCluster, and their -o documents
// (PlanReport, StatusReport): read from the cluster with the root package's names and parsers, and from
// the janitor package only its plan (janitor.PlanCluster); the janitor's record of a return is read
// through the root (liqojanitor.RecordedReturn). Every text that comes from the cluster is escaped as
// the tables escape it (output.Printable). It writes nothing to the cluster: the gate's answer to a mark
// (GateCheck) is the mark package's to ask.
//
// Read it from the cluster to the screen: janitor.go (the janitor's ConfigMaps, read in its namespace
// only), grace.go (the grace window the janitor recorded), evidence.go (what "unreachable" rests on: Liqo's
// conditions, the storm count), probe.go (where the janitor's return probe looks), providerfence.go (the
// provider's fence of this consumer, and the deadline before which the gate refuses a mark), plan.go and
// plan_print.go (plan's report and its tables), status.go, status_report.go and status_print.go (status's
// reader, its report and its lines, with --watch).
package view
