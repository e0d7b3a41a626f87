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
//
// # Files
//
// By prefix, in this order:
//
//   - env: the control plane and the test process — env.go (Start, Run, Require, clients, a namespace per
//     test), env_paths.go (the repository, the binaries, Liqo's CRDs), env_pods.go (an API server that
//     pods reach), env_controllermanager.go and env_controllers.go (kube-controller-manager),
//     env_tokencontroller.go (Kubernetes' token controller, played), env_pause.go (a frozen API server),
//     env_metrics.go (metrics of this process and of the API server), env_panics.go (panics fail the
//     package).
//   - net: what stands between processes — net_outage.go (an API server that goes away and comes back),
//     net_proxy.go (an HTTP CONNECT proxy), net_servicerouting.go (a chart's Service routed to a process
//     here), net_pki.go (a CA that signed nothing).
//   - addon: liqo-janitor as installed — addon.go (its cluster ID, operators and in-process gate and
//     janitor), addon_install.go (the chart's ServiceAccount and RBAC), addon_build.go and
//     addon_binary.go (the binaries, built from the checkout, and their replicas), addon_webhooks.go (the
//     generated webhook configurations, and writing without the gate), addon_review.go (an
//     AdmissionReview to send), addon_denials.go (RBAC refusals fail the package),
//     addon_providerfence.go and addon_fencerenew.go (the provider fence agent and its renewer).
//   - liqo: Liqo's own — liqo_chart.go (the objects of its chart the harness installs),
//     liqo_webhook.go, liqo_controllermanager.go, liqo_uninstaller.go (its pre-delete Job's pod).
//   - certmanager: cert-manager's controller and cainjector (certmanager.go).
package harness
