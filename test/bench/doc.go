// Package bench measures the janitor against the API server it runs on: releasing a dead provider's
// terminating pods and ResourceSlices, side by side with an unthrottled 32-worker client doing the same
// deletes and patches (`make bench`; the report is in test/bench/REPORT.md).
package bench
