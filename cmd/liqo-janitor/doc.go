// Command liqo-janitor runs the gate (an admission webhook on Liqo ForeignClusters) and the janitor (the
// controller that releases what a dead provider leaves stuck) in one controller-runtime manager. This
// package holds flags and wiring only.
package main
