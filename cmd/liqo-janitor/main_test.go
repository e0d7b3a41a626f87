package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

func TestMain(m *testing.M) {
	os.Exit(harness.Run(m, harness.Options{GeneratedWebhooks: true}, func(e *harness.Env) error {
		return e.InstallLocalClusterID(context.Background(), liqojanitor.DefaultLiqoNamespace, "consumer")
	}))
}

// stormGuardOff turns the storm guard off (gate rule 21) for the replicas of tests that are not about it:
// the binary's tests share one API server, whose providers left unreachable by earlier tests (the
// dead ones they lay out) would make a later test's mark a storm. The guard itself is tried through the
// gate's tests (package test/storm), with the binary's defaults.
const stormGuardOff = "--storm-min-unreachable=0"

// asTheServiceAccount has the binary's wiring, run in this process (run), reach the API server as the
// chart's ServiceAccount with the chart's RBAC (harness.DefaultInstall), as a pod of the install does.
func asTheServiceAccount(t *testing.T) {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	inst, err := env.DefaultInstall()
	g.Expect(err).NotTo(HaveOccurred())
	kubeconfig, err := env.ServiceAccountKubeconfig(inst.Namespace, inst.ServiceAccount)
	g.Expect(err).NotTo(HaveOccurred())
	t.Setenv("KUBECONFIG", kubeconfig)
}

// TestBinaryServesProbesAndTheGate runs the binary's own wiring (flags → manager → gate) against the real
// API server, as the chart's ServiceAccount: /healthz and /readyz answer, and the webhooks registered from
// the generated configuration reach the gate, which refuses an unconfirmed mark.
func TestBinaryServesProbesAndTheGate(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	asTheServiceAccount(t)
	probeAddr := freeAddr(t)
	wo := env.WebhookOptions()

	o := parseFlags(t,
		"--metrics-bind-address=0", "--health-probe-bind-address="+probeAddr,
		"--webhook-port="+strconv.Itoa(wo.Port), "--webhook-cert-dir="+wo.CertDir,
		"--enable-janitor=false", "--namespace=liqo-janitor-system",
	)

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx, o) }()
	t.Cleanup(func() { cancel(); NewWithT(t).Expect(<-done).To(Succeed()) })

	for _, path := range []string{"/healthz", "/readyz"} {
		g.Eventually(func() (int, error) {
			resp, err := http.Get("http://" + probeAddr + path) //nolint:noctx // a probe in a test
			if err != nil {
				return 0, err
			}
			defer resp.Body.Close()
			return resp.StatusCode, nil
		}).WithTimeout(30*time.Second).Should(Equal(http.StatusOK), path)
	}

	fc := &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: "provider-bin"},
		Spec: liqov1beta1.ForeignClusterSpec{ClusterID: "provider-bin"}}
	g.Expect(env.Client.Create(ctx, fc)).To(Succeed())
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, liqojanitor.MarkAnnotation)
	err := env.Client.Patch(ctx, fc, rawMerge(patch))
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "the gate refuses an unconfirmed mark: %v", err)
	g.Expect(err.Error()).To(ContainSubstring("kubectl annotate foreigncluster provider-bin liqo-janitor.io/confirm-cluster-id=provider-bin"))

	// Gate rule 18 is off by default: even a live pod of Liqo's pre-delete Job, with its pod-bound token, is
	// refused the bare mark for want of the verb (no released Liqo marks ForeignClusters when it uninstalls).
	_, cfg, err := env.LiqoUninstallerPod(t, liqojanitor.DefaultLiqoNamespace)
	g.Expect(err).NotTo(HaveOccurred())
	uninstallerUser := "system:serviceaccount:" + liqojanitor.DefaultLiqoNamespace + ":" + liqojanitor.LiqoPreDeleteServiceAccount
	patcher := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "test-uninstaller-patches-foreignclusters"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"core.liqo.io"}, Resources: []string{"foreignclusters"}, Verbs: []string{"get", "patch"}}}}
	for _, o := range []client.Object{patcher, harness.ClusterRoleBinding(patcher.Name, patcher.Name, uninstallerUser)} {
		g.Expect(env.Client.Create(ctx, o)).To(Succeed())
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
	}
	uninstaller, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	err = uninstaller.Patch(ctx, fc, rawMerge(patch))
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "gate rule 18 is off by default: %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`user "` + uninstallerUser + `" may not mark it permanently unreachable`))
}

func TestFlagValidation(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		args []string
		// outOfCluster: the args are given as they are, without the --namespace every other case gets.
		outOfCluster bool
		wantErr      string
		// check says what is wrong with the resolved options, "" when nothing.
		check func(*options) string
	}{
		"defaults are valid": {},
		"out of a cluster the janitor's namespace is required": {outOfCluster: true,
			wantErr: "--namespace is required out of a cluster"},
		"the Lease and the certificates default to the janitor's namespace": {args: []string{"--leader-elect", "--cert-management=self"},
			check: func(o *options) string {
				if o.leaderElectNS != "ns" || o.certs.Namespace != "ns" {
					return fmt.Sprintf("Lease in %q, certificates in %q, want both in ns", o.leaderElectNS, o.certs.Namespace)
				}
				return ""
			}},
		"a negative grace period is refused":      {args: []string{"--grace-period=-1s"}, wantErr: "--grace-period must not be negative"},
		"a return probe in a hot loop is refused": {args: []string{"--return-probe-interval=100ms"}, wantErr: "--return-probe-interval must be 0 (off) or at least 1s"},
		"a negative min-unreachable is refused":   {args: []string{"--min-unreachable=-1s"}, wantErr: "--min-unreachable"},
		"zero QPS is refused":                     {args: []string{"--kube-api-qps=0"}, wantErr: "must be positive"},
		"a negative storm minimum is refused": {args: []string{"--storm-min-unreachable=-1"},
			wantErr: "--storm-min-unreachable must be 0 (off) or a number of providers, got -1"},
		"the storm guard off is valid": {args: []string{"--storm-min-unreachable=0"}},
		"a storm share above 100% is refused": {args: []string{"--storm-max-unreachable-share=101"},
			wantErr: "--storm-max-unreachable-share is a percentage, between 0 and 100, got 101"},
		"a negative storm share is refused": {args: []string{"--storm-max-unreachable-share=-5"},
			wantErr: "--storm-max-unreachable-share is a percentage, between 0 and 100, got -5"},
		"a storm share of 0 and of 100 are valid": {args: []string{"--storm-max-unreachable-share=0", "--storm-max-unreachable-share=100"}},
		"running nothing is refused":              {args: []string{"--enable-webhook=false", "--enable-janitor=false"}, wantErr: "nothing to run"},
		"leader election with a Lease's namespace of its own is valid": {args: []string{"--leader-elect", "--leader-election-namespace=other"},
			check: func(o *options) string {
				if o.leaderElectNS != "other" {
					return fmt.Sprintf("Lease in %q, want other", o.leaderElectNS)
				}
				return ""
			}},
		"shorter leader-election timings are valid": {args: []string{"--leader-election-lease-duration=6s",
			"--leader-election-renew-deadline=4s", "--leader-election-retry-period=1s"}},
		"an unknown certificate management is refused": {args: []string{"--cert-management=helm"},
			wantErr: "--cert-management must be none, cert-manager or self"},
		"self-managed certificates with their namespace are valid": {args: []string{"--cert-management=self", "--cert-namespace=ns"}},
		"a CA that does not outlive its certificates is refused": {args: []string{"--cert-management=self", "--cert-namespace=ns",
			"--cert-validity=1h", "--ca-validity=2h"}, wantErr: "--ca-validity (2h0m0s) must be at least three times --cert-validity (1h0m0s)"},
		"self-managed certificates without the webhook are refused": {args: []string{"--cert-management=self", "--cert-namespace=ns",
			"--enable-webhook=false"}, wantErr: "use --cert-management=none"},
		"a renew deadline not shorter than the lease is refused": {args: []string{"--leader-election-renew-deadline=15s"},
			wantErr: "--leader-election-lease-duration (15s) > --leader-election-renew-deadline (15s)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if tc.outOfCluster && fileExists(inClusterNamespaceFile) {
				t.Skipf("this machine has %s: it is no out-of-cluster run", inClusterNamespaceFile)
			}
			args := tc.args
			if !tc.outOfCluster {
				args = append([]string{"--namespace=ns"}, args...)
			}
			o := parseFlags(t, args...)
			err := o.validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("validate() = %v", err)
				}
				if tc.check != nil {
					if what := tc.check(o); what != "" {
						t.Fatal(what)
					}
				}
				return
			}
			if err == nil || !contains(err.Error(), tc.wantErr) {
				t.Fatalf("validate() = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestOnlyTheJanitorTakesTheLease: a replica that runs the gate alone never takes part in the leader
// election, even with --leader-elect (the chart's argument): it would hold the Lease a replica running the
// janitor waits for, and release nothing itself.
func TestOnlyTheJanitorTakesTheLease(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		args []string
		want bool
	}{
		"the gate and the janitor elect":           {args: []string{"--leader-elect"}, want: true},
		"the janitor alone elects":                 {args: []string{"--leader-elect", "--enable-webhook=false"}, want: true},
		"the gate alone does not, though asked to": {args: []string{"--leader-elect", "--enable-janitor=false"}},
		"nobody elects without --leader-elect":     {},
		"the janitor alone without --leader-elect": {args: []string{"--enable-webhook=false"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o := parseFlags(t, tc.args...)
			if got := managerOptions(o, nil).LeaderElection; got != tc.want {
				t.Fatalf("LeaderElection = %t, want %t", got, tc.want)
			}
		})
	}
}

// TestLiqoUninstallerUsers: --liqo-uninstaller-users names the identities of gate rule 18; not set or
// empty, nobody (no released Liqo marks a ForeignCluster when it uninstalls); only ServiceAccounts of
// --liqo-namespace are accepted.
func TestLiqoUninstallerUsers(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		args    []string
		want    []string
		wantErr string
	}{
		"not set: nobody":   {},
		"set empty: nobody": {args: []string{"--liqo-uninstaller-users="}},
		"a comma-separated list": {args: []string{"--liqo-namespace=x", "--liqo-uninstaller-users=system:serviceaccount:x:a, system:serviceaccount:x:y,"},
			want: []string{"system:serviceaccount:x:a", "system:serviceaccount:x:y"}},
		"Liqo's pre-delete Job": {args: []string{"--liqo-uninstaller-users=system:serviceaccount:liqo:liqo-pre-delete"},
			want: []string{"system:serviceaccount:liqo:liqo-pre-delete"}},
		"a user who is not a ServiceAccount is refused": {args: []string{"--liqo-uninstaller-users=alice"},
			wantErr: `--liqo-uninstaller-users: "alice" is not a ServiceAccount of Liqo's namespace "liqo"`},
		"a ServiceAccount of another namespace is refused": {args: []string{"--liqo-namespace=liqo-system", "--liqo-uninstaller-users=system:serviceaccount:liqo:liqo-pre-delete"},
			wantErr: "e.g. system:serviceaccount:liqo-system:liqo-pre-delete"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o := parseFlags(t, append([]string{"--namespace=ns"}, tc.args...)...)
			if err := o.validate(); tc.wantErr != "" {
				if err == nil || !contains(err.Error(), tc.wantErr) {
					t.Fatalf("validate() = %v, want an error containing %q", err, tc.wantErr)
				}
				return
			} else if err != nil {
				t.Fatalf("validate() = %v", err)
			}
			if got := gateOptions(o).Default().LiqoUninstallerUsers; !slices.Equal(got, tc.want) {
				t.Fatalf("LiqoUninstallerUsers = %#v, want %#v", got, tc.want)
			}
		})
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := harness.FreeLocalAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func rawMerge(patch string) client.Patch { return client.RawPatch(types.MergePatchType, []byte(patch)) }

// TestLeaderElectionOutOfAClusterUsesTheJanitorsNamespace: with --leader-elect and --namespace the binary's
// wiring starts out of a cluster as the chart's ServiceAccount, takes the Lease in the janitor's namespace (granted as the chart grants the release namespace), and releases it
// on the way out.
func TestLeaderElectionOutOfAClusterUsesTheJanitorsNamespace(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	asTheServiceAccount(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: env.OwnNamespace(t)}}

	o := parseFlags(t, "--metrics-bind-address=0", "--health-probe-bind-address="+freeAddr(t),
		"--enable-webhook=false", "--leader-elect", "--namespace="+ns.Name,
		"--leader-election-lease-duration=7s", "--leader-election-renew-deadline=5s", "--leader-election-retry-period=1s")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx, o) }()

	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: leaderElectionID, Namespace: ns.Name}}
	holder := func() string {
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(lease), lease); err != nil || lease.Spec.HolderIdentity == nil {
			return ""
		}
		return *lease.Spec.HolderIdentity
	}
	g.Eventually(holder).WithTimeout(30*time.Second).ShouldNot(BeEmpty(), "the Lease is taken in %s", ns.Name)
	// The API server may hold the Lease before the elector has its answer (a create cancelled in flight is
	// no lead, and nothing to release): a renewal after the acquisition says the elector leads.
	g.Eventually(func() bool {
		holder()
		return lease.Spec.RenewTime != nil && lease.Spec.AcquireTime != nil && lease.Spec.RenewTime.After(lease.Spec.AcquireTime.Time)
	}).WithTimeout(30*time.Second).Should(BeTrue(), "the elector renews the Lease it took")
	g.Expect(lease.Spec.LeaseDurationSeconds).To(HaveValue(BeNumerically("==", 7)), "--leader-election-lease-duration")

	cancel()
	g.Expect(<-done).To(Succeed())
	g.Expect(holder()).To(BeEmpty(), "released on the way out, so a standby takes over at once")
}

// parseFlags parses args as main does, and fails the test on an error.
func parseFlags(t *testing.T, args ...string) *options {
	t.Helper()
	var o options
	fs := flag.NewFlagSet("liqo-janitor", flag.ContinueOnError)
	o.bindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return &o
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestOutOfAClusterWithoutANamespaceTheBinaryRefusesToStart: the janitor's safety lives in its own
// namespace (the brake, the kept probe targets and returns: janitor rules 14, 16, 17), so the real binary,
// started out of a cluster without --namespace, exits at once with an error that names the flag — before
// it reads a kubeconfig or serves anything — instead of running with that safety quietly off.
func TestOutOfAClusterWithoutANamespaceTheBinaryRefusesToStart(t *testing.T) {
	if fileExists(inClusterNamespaceFile) {
		t.Skipf("this machine has %s: it is no out-of-cluster run", inClusterNamespaceFile)
	}
	binary := harness.RequireBinary(t, "liqo-janitor")
	cmd := exec.CommandContext(t.Context(), binary, "--kubeconfig=/nonexistent", "--metrics-bind-address=0",
		"--health-probe-bind-address=0", "--leader-elect")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("the binary ran without --namespace (err %v): %s", err, out)
	}
	if !strings.Contains(string(out), "--namespace is required out of a cluster") {
		t.Fatalf("the refusal does not name --namespace: %s", out)
	}
	// With it, the same command gets past the namespace (and fails later, on the missing kubeconfig).
	out, _ = exec.CommandContext(t.Context(), binary, "--kubeconfig=/nonexistent", "--metrics-bind-address=0",
		"--health-probe-bind-address=0", "--leader-elect", "--namespace=liqo-janitor-system").CombinedOutput()
	if strings.Contains(string(out), "--namespace is required") || !strings.Contains(string(out), "/nonexistent") {
		t.Fatalf("with --namespace the binary should fail on the kubeconfig alone: %s", out)
	}
}
