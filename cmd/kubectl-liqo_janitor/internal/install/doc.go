// Package install is what `kubectl liqo-janitor version` shows: the plugin's version, and liqo-janitor's
// installs on the cluster (its Deployments, found by the labels the chart puts on them, with their
// versions and images).
package install
