// Package harness starts a real Kubernetes control plane for tests — etcd and kube-apiserver through
// envtest, optionally kube-controller-manager — with the real Liqo CRDs installed from the Liqo module and
// the project's generated webhook configurations registered, one per test package.
package harness
