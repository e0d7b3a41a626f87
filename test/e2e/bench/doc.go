// Package bench measures liqo-janitor against the API server it runs on, each figure side by side with a
// reference in one run: the janitor releasing a dead provider's objects against an unthrottled 32-worker
// client, its memory with and without tens of thousands of unrelated pods, and the gate's added latency
// against a ValidatingAdmissionPolicy (`make bench`; the report is in test/e2e/bench/REPORT.md).
package bench
