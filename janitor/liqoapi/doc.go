// Package liqoapi names the part of the Liqo API that both the gate and the janitor rely on: the scheme
// that knows Kubernetes and Liqo types, and the Liqo label, annotation and finalizer keys, taken from the
// Liqo module itself wherever it exports them.
package liqoapi
