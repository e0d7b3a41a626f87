package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/view"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
	"github.com/liqo-janitor/liqo-janitor/webhook"
)

const (
	alice = "alice" // may update ForeignClusters and holds the break-glass verb
	bob   = "bob"   // may update ForeignClusters, nothing more
)

func TestMain(m *testing.M) {
	code := harness.Run(m, harness.Options{GeneratedWebhooks: true}, func(e *harness.Env) error {
		ctx := context.Background()
		if err := e.InstallLocalClusterID(ctx, liqojanitor.DefaultLiqoNamespace, "consumer"); err != nil {
			return err
		}
		if err := e.InstallOperators(ctx, []string{alice}, []string{bob}); err != nil {
			return err
		}
		if err := e.InstallPlanReaders(ctx, alice, bob); err != nil {
			return err
		}
		if err := e.InstallGateWebhookConfiguration(ctx); err != nil {
			return err
		}
		// The gate guards storms as installed (the tests retire their layouts, so each storm count is a test's own).
		return e.StartGate(webhook.Options{MinUnreachable: time.Minute, Storm: liqojanitor.DefaultStormGuard})
	})
	stopProvider() // the fence tests' second API server, if one of them started it
	os.Exit(code)
}

// kubectl runs the plugin as user with stdin, the way kubectl runs it (--kubeconfig, --as).
func kubectl(t *testing.T, user, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	testEnv := harness.Require(t)
	var out, errOut bytes.Buffer
	cmd := newRootCommand(genericiooptions.IOStreams{In: bytes.NewBufferString(stdin), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append([]string{"--kubeconfig", testEnv.KubeconfigPath, "--as", user}, args...))
	err = run(t.Context(), cmd)
	return out.String(), errOut.String(), err
}

// asJanitor is a client as the janitor's identity (the install's ServiceAccount, as which the gate and
// the janitor run), the only one gate rule 14 lets write the janitor's keys.
func asJanitor(t *testing.T) client.Client {
	t.Helper()
	c, err := harness.Require(t).JanitorClient()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return c
}

// deadAndLive lays out a consumer with a dead provider (unreachable for 10 minutes, unpeering stuck) and a
// live one.
func deadAndLive(t *testing.T) (dead, live *fixture.Provider) {
	t.Helper()
	testEnv := harness.Require(t)
	g := NewWithT(t)
	cons := layOut(t, fixture.Spec{Providers: 2, PodsPerProvider: 3})
	dead, live = cons.Providers[0], cons.Providers[1]
	g.Expect(fixture.Kill(t.Context(), testEnv.Client, dead)).To(Succeed())
	g.Expect(fixture.Terminate(t.Context(), testEnv.Client, dead)).To(Succeed())
	return dead, live
}

// markedByAlice lays out a dead and a live provider, starts a janitor with an hour's grace period and has
// alice mark the dead one with the plugin, giving reason.
func markedByAlice(t *testing.T, reason string) *fixture.Provider {
	t.Helper()
	testEnv := harness.Require(t)
	g := NewWithT(t)
	dead, _ := deadAndLive(t)
	stop, err := testEnv.StartJanitor(janitor.Options{Namespace: janitorNamespace(t), GracePeriod: time.Hour})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = stop() })
	_, _, err = kubectl(t, alice, "", "mark", dead.ForeignCluster.Name, "--reason", reason, "--yes")
	g.Expect(err).NotTo(HaveOccurred())
	return dead
}

func rvs(t *testing.T, ps ...*fixture.Provider) map[string]string {
	t.Helper()
	testEnv := harness.Require(t)
	var objs []client.Object
	for _, p := range ps {
		objs = append(append(objs, p.Objects()...), p.ForeignCluster)
	}
	return fixture.ResourceVersionsOf(t, testEnv.Client, objs...)
}

func annotations(t *testing.T, p *fixture.Provider) map[string]string {
	t.Helper()
	testEnv := harness.Require(t)
	fc := p.ForeignCluster.DeepCopy()
	NewWithT(t).Expect(testEnv.Client.Get(t.Context(), client.ObjectKeyFromObject(fc), fc)).To(Succeed())
	return fc.Annotations
}

func TestPlanShowsTheJanitorsSelectionAndTheGatesAnswer(t *testing.T) {
	g := NewWithT(t)
	dead, live := deadAndLive(t)
	before := rvs(t, dead, live)
	id := string(dead.ForeignCluster.Spec.ClusterID)

	out, _, err := kubectl(t, alice, "", "plan", id)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(MatchRegexp(`(?m)^Pod\s+%d\s+0\s+0$`, len(dead.Pods)))
	g.Expect(out).To(MatchRegexp(`(?m)^ResourceSlice\s+1\s+0\s+0$`))
	g.Expect(out).To(ContainSubstring("Gate: a mark would be accepted now"))
	g.Expect(out).To(ContainSubstring("you hold the break-glass verb"))

	out, _, err = kubectl(t, alice, "", "plan", dead.ForeignCluster.Name, "-o", "json")
	g.Expect(err).NotTo(HaveOccurred())
	var report view.PlanReport
	g.Expect(json.Unmarshal([]byte(out), &report)).To(Succeed())
	g.Expect(report.Plan.Kinds).To(ContainElement(janitor.PlannedKind{Kind: "Pod", Release: len(dead.Pods)}))
	g.Expect(report.Gate).To(Equal(view.GateCheck{MayMark: true, Accepted: true, Answered: true}))

	out, _, err = kubectl(t, bob, "", "plan", id)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("Gate: a mark would be refused now"))
	g.Expect(out).To(ContainSubstring("verb mark-unreachable"))
	g.Expect(out).To(ContainSubstring("you do not hold the break-glass verb"))

	out, _, err = kubectl(t, alice, "", "plan", string(live.ForeignCluster.Spec.ClusterID))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("Gate: a mark would be refused now"), "Liqo sees the live provider answering")

	g.Expect(rvs(t, dead, live)).To(Equal(before), "plan writes nothing")
	_, stderr, err := kubectl(t, alice, "", "plan", "no-such-cluster")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring("kubectl get foreignclusters"))
	_, stderr, err = kubectl(t, alice, "", "plan")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(Equal("error: accepts 1 arg(s), received 0\n"+
		"Usage: kubectl liqo-janitor plan <cluster-id|foreigncluster> [flags]\n"+
		"Run 'kubectl liqo-janitor plan --help' for more information.\n"), "a usage error says so, with the usage line")
	_, stderr, err = kubectl(t, alice, "", "plan", id, "-o", "table")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring("use -o json, -o yaml, -o kyaml, or leave it out for tables"))
}

func TestMarkTakesTheClusterIDTyped(t *testing.T) {
	g := NewWithT(t)
	dead, live := deadAndLive(t)
	id := string(dead.ForeignCluster.Spec.ClusterID)
	before := rvs(t, dead, live)

	_, stderr, err := kubectl(t, alice, "provider-typo\n", "mark", id, "--reason", "data centre flooded")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring("nothing was written"))
	g.Expect(rvs(t, dead, live)).To(Equal(before))

	out, _, err := kubectl(t, alice, "", "mark", id, "--reason", "data centre flooded", "--yes", "--dry-run=server")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("Dry run: the gate accepts this mark (it would stamp marked-by=" + alice + ", marked-at="))
	g.Expect(out).To(ContainSubstring("nothing was stored"))
	g.Expect(rvs(t, dead, live)).To(Equal(before), "--dry-run=server writes nothing")

	_, stderr, err = kubectl(t, alice, id+"\n", "mark", id)
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring("--reason is required"))

	out, _, err = kubectl(t, alice, id+"\n", "mark", id, "--reason", "data centre flooded")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("Type the cluster ID (" + id + ") to confirm"))
	g.Expect(out).To(ContainSubstring("marked permanently unreachable (stamped by the gate: marked-by=" + alice))
	a := annotations(t, dead)
	g.Expect(a).To(HaveKeyWithValue(liqojanitor.MarkAnnotation, liqojanitor.MarkValue))
	g.Expect(a).To(HaveKeyWithValue(liqojanitor.ConfirmAnnotation, id))
	g.Expect(a).To(HaveKeyWithValue(liqojanitor.MarkedByAnnotation, alice))
	g.Expect(a).To(HaveKeyWithValue(liqojanitor.ReasonAnnotation, "data centre flooded"))
	for k, v := range rvs(t, live) {
		g.Expect(before).To(HaveKeyWithValue(k, v), "nothing of the live provider")
	}
}

func TestARefusedMarkShowsTheGatesMessage(t *testing.T) {
	g := NewWithT(t)
	dead, live := deadAndLive(t)
	id := string(dead.ForeignCluster.Spec.ClusterID)
	_, stderr, err := kubectl(t, bob, "", "mark", id, "--reason", "gone", "--yes")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring(`admission webhook "vforeigncluster.liqo-janitor.io" denied the request`))
	g.Expect(stderr).To(ContainSubstring("verb mark-unreachable"))
	g.Expect(annotations(t, dead)).NotTo(HaveKey(liqojanitor.MarkAnnotation))

	out, stderr, err := kubectl(t, bob, id+"\n", "mark", id, "--reason", "gone")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring("denied the request"))
	g.Expect(out).NotTo(ContainSubstring("Type the cluster ID"), "the dry run through the gate comes before the typing")

	_, stderr, err = kubectl(t, alice, "", "mark", string(live.ForeignCluster.Spec.ClusterID), "--reason", "gone", "--yes")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring("denied the request"), "Liqo sees it answering: the gate's reachability veto")
	g.Expect(annotations(t, live)).NotTo(HaveKey(liqojanitor.MarkAnnotation))
}

func TestStatusShowsThePlanInTheGraceWindow(t *testing.T) {
	g := NewWithT(t)
	dead := markedByAlice(t, "gone for good")

	g.Eventually(func() string {
		out, _, _ := kubectl(t, alice, "", "status", dead.ForeignCluster.Name)
		return out
	}).WithTimeout(30 * time.Second).Should(And(
		ContainSubstring("marked permanently unreachable"),
		ContainSubstring("marked by "+alice),
		ContainSubstring(`reason: "gone for good"`),
		MatchRegexp(`cleanup: grace\b.*would release pods %d`, len(dead.Pods)),
		Not(MatchRegexp(`cleanup: grace \S+ left`)), // the countdown the janitor wrote with the plan is stale when read
		ContainSubstring("Waiting: "),
	))
	out, _, err := kubectl(t, alice, "", "status")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring(dead.ForeignCluster.Name), "every marked cluster is listed")
}

// TestPlanIsWhatTheJanitorThenReleases: the counts `plan -o json` gives before the mark are those of the
// janitor's cleanup annotation once it is done.
func TestPlanIsWhatTheJanitorThenReleases(t *testing.T) {
	testEnv := harness.Require(t)
	g := NewWithT(t)
	dead, live := deadAndLive(t)
	liveBefore := rvs(t, live)
	out, _, err := kubectl(t, alice, "", "plan", dead.ForeignCluster.Name, "-o", "yaml")
	g.Expect(err).NotTo(HaveOccurred())
	var report view.PlanReport
	g.Expect(yaml.Unmarshal([]byte(out), &report)).To(Succeed())
	var parts []string
	for _, k := range report.Plan.Kinds {
		parts = append(parts, fmt.Sprintf("%ss %d/%d", strings.ToLower(k.Kind), k.Release-k.Blocked, k.Release))
	}
	g.Expect(parts).NotTo(BeEmpty())

	stop, err := testEnv.StartJanitor(janitor.Options{Namespace: janitorNamespace(t), GracePeriod: time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = stop() })
	_, _, err = kubectl(t, alice, "", "mark", dead.ForeignCluster.Name, "--reason", "gone", "--yes")
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() string { return annotations(t, dead)[liqojanitor.CleanupAnnotation] }).WithTimeout(60*time.Second).
		Should(Equal(strings.Join(parts, ", ")), "released is what the plan said")
	g.Expect(rvs(t, live)).To(Equal(liveBefore), "nothing of the live provider")
}

// TestStatusWatchRefreshes: without a terminal, --watch prints a timestamped block per refresh.
func TestStatusWatchRefreshes(t *testing.T) {
	testEnv := harness.Require(t)
	g := NewWithT(t)
	dead, _ := deadAndLive(t)
	_, _, err := kubectl(t, alice, "", "mark", dead.ForeignCluster.Name, "--reason", "gone", "--yes")
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out syncBuffer
	cmd := newRootCommand(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &out})
	cmd.SetArgs([]string{"--kubeconfig", testEnv.KubeconfigPath, "--as", alice, "status", dead.ForeignCluster.Name, "--watch", "--interval=100ms"})
	done := make(chan error, 1)
	go func() { done <- run(ctx, cmd) }()
	g.Eventually(func() int { return strings.Count("\n"+out.String(), "\n--- ") }).
		Should(BeNumerically(">=", 3), "refreshed at least three times")
	cancel()
	g.Eventually(done).Should(Receive(BeNil()), "interrupted, it stops cleanly")
	g.Expect(out.String()).To(ContainSubstring(dead.ForeignCluster.Name + " (cluster ID"))
	g.Expect(out.String()).NotTo(ContainSubstring("\033["), "no terminal escapes when not on a terminal")
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestPauseResumeUnmarkAndCanI(t *testing.T) {
	g := NewWithT(t)
	dead, _ := deadAndLive(t)
	name := dead.ForeignCluster.Name

	out, _, err := kubectl(t, alice, "", "can-i")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("yes\n"))
	out, stderr, err := kubectl(t, bob, "", "can-i", name)
	g.Expect(err).To(HaveOccurred(), "exit status 1, as kubectl auth can-i")
	g.Expect(out).To(Equal("no\n"))
	g.Expect(stderr).To(ContainSubstring("--clusterrole=" + liqojanitor.MarkRoleName))

	_, _, err = kubectl(t, alice, "", "mark", name, "--reason", "gone", "--yes")
	g.Expect(err).NotTo(HaveOccurred())
	_, _, err = kubectl(t, bob, "", "pause", name)
	g.Expect(err).NotTo(HaveOccurred(), "anyone with update may pause")
	g.Expect(annotations(t, dead)).To(HaveKeyWithValue(liqojanitor.PausedAnnotation, "true"))
	_, stderr, err = kubectl(t, bob, "", "resume", name)
	g.Expect(err).To(HaveOccurred(), "resuming a marked cluster is break-glass")
	g.Expect(stderr).To(ContainSubstring("denied the request"))
	g.Expect(annotations(t, dead)).To(HaveKeyWithValue(liqojanitor.PausedAnnotation, "true"))
	_, _, err = kubectl(t, alice, "", "resume", name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(annotations(t, dead)).NotTo(HaveKey(liqojanitor.PausedAnnotation))

	_, _, err = kubectl(t, bob, "", "unmark", name)
	g.Expect(err).To(HaveOccurred())
	g.Expect(annotations(t, dead)).To(HaveKey(liqojanitor.MarkAnnotation))
	_, stderr, err = kubectl(t, alice, "", "unmark", name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring("Warning:"), "the gate's warning is shown")
	a := annotations(t, dead)
	for _, k := range []string{liqojanitor.MarkAnnotation, liqojanitor.ConfirmAnnotation, liqojanitor.MarkedByAnnotation} {
		g.Expect(a).NotTo(HaveKey(k))
	}

	out, _, err = kubectl(t, bob, "", "version", "--client")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("kubectl-liqo_janitor dev\n"))
}

// layOut builds a layout of spec under a prefix of its own, every provider reachable, and retires it at the
// end of the test (fixture.LayOut): its ForeignClusters unmarked and deleted, after the test's other
// clean-ups (its janitor stopped, the gate no longer bypassed). The API server is one consumer for every
// test, and the storm guard counts all its ForeignClusters (gate rule 21): the unreachable providers a test
// leaves behind would make the next one's mark a storm, or a storm test's count wrong.
func layOut(t *testing.T, spec fixture.Spec) *fixture.Consumer {
	t.Helper()
	return fixture.LayOut(t, harness.Require(t).Client, "k", spec)
}
