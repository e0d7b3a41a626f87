// Package harness starts a real Kubernetes control plane for tests — etcd and kube-apiserver through
// envtest, optionally kube-controller-manager — with the real Liqo CRDs installed from the Liqo module and
// the project's generated webhook configurations registered, one per test package.
//
// # Two lanes
//
// A test package's TestMain calls Run; a test that needs the API server takes it from Require, the only
// way to reach the Env, and the control plane starts on the first such test (so a package's pure tests
// never wait for etcd, even in `make test`). Under `go test -short` — `make test-unit`, the fast lane —
// Require skips the test with "needs the API server: run make test" instead, and the package's pure tests
// run alone, without bin/k8s. `make test` runs both lanes, without -short. A test that runs one of the
// project's binaries without a control plane takes it from RequireBinary, which skips alike.
//
// # As installed
//
// The product runs as the chart's ServiceAccount, with the chart's RBAC: DefaultInstall applies, once per
// Env, the ServiceAccount, ClusterRoles, ClusterRoleBindings, Roles and RoleBindings of the rendered
// install (InstallFile), and StartReplica runs the binary with a token of that ServiceAccount (the
// TokenRequest API) and the arguments and environment of the install's Deployment, overriding only what a
// process on this machine needs instead (its ports, the webhook certificate, the kubeconfig, the pod's own
// namespace). The in-process managers of StartGate and StartJanitor run as that ServiceAccount too
// (InstallConfig), so the gate knows it as the janitor's identity; a test writes what only the janitor may
// through JanitorClient. A refusal by RBAC of that ServiceAccount fails the test package (RBACDenials),
// even where no assertion noticed it: a permission the code needs and the chart lacks is a failed test.
//
// # Other projects' binaries
//
// Liqo's own webhook (StartLiqoWebhook, `make liqo-webhook`) and controller manager
// (StartLiqoControllerManager, `make liqo-controller-manager`: its tenant, quota, namespacemap and shadowpod
// controllers, on a provider's API server of its own) and cert-manager's controller and cainjector
// (StartCertManager, `make cert-manager`) are the real binaries of the pinned releases, built into bin/ by
// the Makefile from tools modules under test/. With Options.ServiceRouting the API server reaches a
// chart's webhook Service at an EndpointSlice (ServiceRoute), so that a chart's webhook configurations,
// unchanged, call a process on this machine, and cert-manager's injected bundle is what the API server
// trusts.
//
// # Binaries
//
// The binaries a test runs (StartReplica, Binary, RequireBinary) are built from the checkout under test
// with go build, once per process, never taken from an earlier `make build`.
package harness
