package main

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/view"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// setTunnel sets the ForeignCluster's NetworkConnectionStatus as Liqo's foreigncluster controller derives
// it from the gateway's Connection (status.modules.networking), with the last transition since ago.
func setTunnel(t *testing.T, p *fixture.Provider, status liqov1beta1.ConditionStatusType, since time.Duration) time.Time {
	t.Helper()
	testEnv := harness.Require(t)
	g := NewWithT(t)
	fc := p.ForeignCluster.DeepCopy()
	g.Expect(testEnv.Client.Get(t.Context(), client.ObjectKeyFromObject(fc), fc)).To(Succeed())
	at := time.Now().Add(-since).Truncate(time.Second)
	fc.Status.Modules.Networking.Enabled = true
	fc.Status.Modules.Networking.Conditions = []liqov1beta1.Condition{{
		Type: liqov1beta1.NetworkConnectionStatusCondition, Status: status, LastTransitionTime: metav1.NewTime(at)}}
	g.Expect(testEnv.Client.Status().Update(t.Context(), fc)).To(Succeed())
	return at
}

// apiServerSince is when the provider's APIServerStatus last changed, as Liqo recorded it.
func apiServerSince(t *testing.T, p *fixture.Provider) time.Time {
	t.Helper()
	testEnv := harness.Require(t)
	fc := p.ForeignCluster.DeepCopy()
	NewWithT(t).Expect(testEnv.Client.Get(t.Context(), client.ObjectKeyFromObject(fc), fc)).To(Succeed())
	cond := liqojanitor.APIServerStatus(fc)
	NewWithT(t).Expect(cond).NotTo(BeNil())
	return cond.LastTransitionTime.Time
}

// theOnlyProviders checks that ps are every ForeignCluster of the consumer: the storm guard counts them all,
// and every test's layout is retired when it ends (layOut).
func theOnlyProviders(t *testing.T, ps ...*fixture.Provider) {
	t.Helper()
	testEnv := harness.Require(t)
	var list liqov1beta1.ForeignClusterList
	NewWithT(t).Expect(testEnv.Client.List(t.Context(), &list)).To(Succeed())
	var names, want []string
	for _, fc := range list.Items {
		names = append(names, fc.Name)
	}
	for _, p := range ps {
		want = append(want, p.ForeignCluster.Name)
	}
	NewWithT(t).Expect(names).To(ConsistOf(want), "the consumer peers with this test's providers only (earlier layouts retired)")
}

// idsOf are the providers' cluster IDs, sorted, as the storm count lists them.
func idsOf(ps ...*fixture.Provider) string {
	var ids []string
	for _, p := range ps {
		ids = append(ids, p.ID)
	}
	slices.Sort(ids)
	return strings.Join(ids, ", ")
}

const defaultGuardWords = "by the default guard (3, 50 %); the gate decides with its own flags"

// TestMarkIsRefusedWhileTheTunnelIsUp: with Liqo's data plane to the provider Established, mark says what
// the tunnel shows and refuses before it asks the gate or the operator anything (gate rule 20); once the
// tunnel has been down long enough, the mark goes through.
func TestMarkIsRefusedWhileTheTunnelIsUp(t *testing.T) {
	g := NewWithT(t)
	dead, live := deadAndLive(t)
	id, name := dead.ID, dead.ForeignCluster.Name
	up := setTunnel(t, dead, liqov1beta1.ConditionStatusEstablished, 5*time.Minute).UTC().Format(time.RFC3339)
	before := rvs(t, dead, live)

	out, stderr, err := kubectl(t, alice, id+"\n", "mark", id, "--reason", "API server gone")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("\n  tunnel: NetworkConnectionStatus Established since " + up + " ("))
	g.Expect(stderr).To(HavePrefix("error: ForeignCluster " + name + ": Liqo's data plane to the provider is up " +
		"(NetworkConnectionStatus Established since " + up + " ("))
	g.Expect(stderr).To(ContainSubstring("Nothing was written; the gate refuses such a mark too (rule 20)"))
	g.Expect(stderr).To(ContainSubstring("\n  kubectl get foreigncluster " + name + " -o jsonpath='{.status.modules.networking.conditions}'\n"))
	g.Expect(stderr).NotTo(ContainSubstring("denied the request"), "refused by the plugin, before the gate is asked")
	g.Expect(out).NotTo(ContainSubstring("Type the cluster ID"), "refused before asking")
	_, stderr, err = kubectl(t, alice, "", "mark", id, "--reason", "API server gone", "--yes", "--dry-run=server")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring("Liqo's data plane to the provider is up"))
	g.Expect(rvs(t, dead, live)).To(Equal(before), "nothing was written")

	down := setTunnel(t, dead, liqov1beta1.ConditionStatusError, 10*time.Minute).UTC().Format(time.RFC3339)
	out, _, err = kubectl(t, alice, "", "mark", id, "--reason", "API server gone", "--yes")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("\n  tunnel: NetworkConnectionStatus Error since " + down + " ("))
	g.Expect(annotations(t, dead)).To(HaveKeyWithValue(liqojanitor.MarkedByAnnotation, alice))
}

// TestMarkDuringAStormAsksForTheCount: with 3 of the consumer's 4 providers unreachable, mark explains the
// storm and refuses without the count (--yes alone, nothing typed, a wrong count typed or given); with the
// right count, typed or given, the mark carries it to the gate in liqo-janitor.io/acknowledge-unreachable.
func TestMarkDuringAStormAsksForTheCount(t *testing.T) {
	testEnv := harness.Require(t)
	g := NewWithT(t)
	cons := layOut(t, fixture.Spec{Providers: 4, PodsPerProvider: 1})
	dead := cons.Providers[:3]
	for _, p := range dead {
		g.Expect(fixture.Kill(t.Context(), testEnv.Client, p)).To(Succeed())
	}
	theOnlyProviders(t, cons.Providers...)
	count := "3 of 4 providers unreachable by Liqo's evidence (" + idsOf(dead...) + ")"
	first, second := dead[0], dead[1]
	before := rvs(t, cons.Providers...)

	refused, stderr, err := kubectl(t, alice, "", "mark", first.ID, "--reason", "data centre flooded", "--yes")
	t.Log("mark --yes during a storm:\n" + refused + stderr)
	g.Expect(err).To(HaveOccurred())
	g.Expect(refused).To(ContainSubstring("\nSTORM: " + count + ", this one counted:\na storm " + defaultGuardWords + ".\n"))
	g.Expect(refused).To(ContainSubstring("Check this cluster's own uplink, gateway and DNS first."))
	g.Expect(refused).To(ContainSubstring("  storm now: " + count + ": A STORM " + defaultGuardWords))
	g.Expect(stderr).To(ContainSubstring("error: ForeignCluster " + first.ForeignCluster.Name + ": a mark during a storm needs the count acknowledged: " + count))
	g.Expect(stderr).To(ContainSubstring("with --yes, add --acknowledge-unreachable=3."))

	out, stderr, err := kubectl(t, alice, first.ID+"\n2\n", "mark", first.ID, "--reason", "data centre flooded")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("Type the cluster ID (" + first.ID + ") to confirm: "))
	g.Expect(out).To(HaveSuffix("Type the number of providers unreachable at once (3) to acknowledge the storm: "))
	g.Expect(stderr).To(Equal("error: you typed \"2\", not the number of providers unreachable at once (3): nothing was written\n"))
	_, stderr, err = kubectl(t, alice, first.ID+"\n", "mark", first.ID, "--reason", "data centre flooded")
	g.Expect(err).To(HaveOccurred(), "nothing typed")
	g.Expect(stderr).To(ContainSubstring(`you typed "", not the number of providers unreachable at once (3)`))
	_, stderr, err = kubectl(t, alice, "", "mark", first.ID, "--reason", "data centre flooded", "--yes", "--acknowledge-unreachable=4")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring("error: --acknowledge-unreachable=4 is not the count: " + count))
	g.Expect(stderr).To(ContainSubstring("then give --acknowledge-unreachable=3."))
	g.Expect(rvs(t, cons.Providers...)).To(Equal(before), "nothing was written")

	acknowledged, _, err := kubectl(t, alice, first.ID+"\n3\n", "mark", first.ID, "--reason", "data centre flooded")
	t.Log("mark during a storm, the count typed:\n" + acknowledged)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(acknowledged).To(ContainSubstring("\nSTORM: " + count))
	g.Expect(acknowledged).To(ContainSubstring("is marked permanently unreachable (stamped by the gate: marked-by=" + alice))
	a := annotations(t, first)
	g.Expect(a).To(HaveKeyWithValue(liqojanitor.AcknowledgeUnreachableAnnotation, "3"), "the count went with the mark")
	g.Expect(a).To(HaveKeyWithValue(liqojanitor.MarkAnnotation, liqojanitor.MarkValue))
	g.Expect(a).To(HaveKeyWithValue(liqojanitor.MarkedByAnnotation, alice))

	_, _, err = kubectl(t, alice, "", "mark", second.ID, "--reason", "data centre flooded", "--yes", "--acknowledge-unreachable=3")
	g.Expect(err).NotTo(HaveOccurred(), "the count given for automation")
	g.Expect(annotations(t, second)).To(HaveKeyWithValue(liqojanitor.AcknowledgeUnreachableAnnotation, "3"))
}

// TestTwoOfTwoUnreachableIsNoStorm: a consumer with two providers is never in a storm: both unreachable,
// mark asks for nothing beyond the cluster ID and sends no acknowledgement, unless given one (a gate with
// other flags may want it).
func TestTwoOfTwoUnreachableIsNoStorm(t *testing.T) {
	testEnv := harness.Require(t)
	g := NewWithT(t)
	dead, other := deadAndLive(t)
	g.Expect(fixture.Kill(t.Context(), testEnv.Client, other)).To(Succeed())
	theOnlyProviders(t, dead, other)

	out, _, err := kubectl(t, alice, dead.ID+"\n", "mark", dead.ID, "--reason", "gone")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("  storm now: 2 of 2 providers unreachable by Liqo's evidence (" + idsOf(dead, other) +
		"): no storm " + defaultGuardWords + "\n"))
	g.Expect(out).NotTo(ContainSubstring("STORM"))
	g.Expect(out).NotTo(ContainSubstring("Type the number"))
	g.Expect(annotations(t, dead)).NotTo(HaveKey(liqojanitor.AcknowledgeUnreachableAnnotation))
	g.Expect(annotations(t, dead)).To(HaveKeyWithValue(liqojanitor.MarkedByAnnotation, alice))

	out, _, err = kubectl(t, alice, "", "mark", other.ID, "--reason", "gone", "--yes", "--acknowledge-unreachable=2")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("\nNo storm " + defaultGuardWords + ": --acknowledge-unreachable=2 is sent for the gate to judge.\n"))
	g.Expect(annotations(t, other)).To(HaveKeyWithValue(liqojanitor.AcknowledgeUnreachableAnnotation, "2"),
		"given, it goes with the mark: the gate may count with other flags")
}

// TestPlanAndStatusShowTheEvidence: plan and status say what the verdict rests on for the cluster — Liqo's
// APIServerStatus and NetworkConnectionStatus with their transitions, no networking condition as no
// evidence, the probe, the storm count — in text and in their documents.
func TestPlanAndStatusShowTheEvidence(t *testing.T) {
	g := NewWithT(t)
	dead, live := deadAndLive(t)
	theOnlyProviders(t, dead, live)
	apiSince, liveSince := apiServerSince(t, dead), apiServerSince(t, live)
	tunnelSince := setTunnel(t, dead, liqov1beta1.ConditionStatusError, 7*time.Minute)
	rfc := func(at time.Time) string { return regexp.QuoteMeta(at.UTC().Format(time.RFC3339)) }
	ago := ` \(\d+m\d+s ago\)\n`
	storm := "storm now: 1 of 2 providers unreachable by Liqo's evidence (" + dead.ID + "): no storm " + defaultGuardWords + "\n"

	out, _, err := kubectl(t, alice, "", "plan", dead.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("\nEvidence for this cluster (what \"unreachable\" rests on):\n"))
	g.Expect(out).To(MatchRegexp(`\n  API server: APIServerStatus Error since ` + rfc(apiSince) + ago))
	g.Expect(out).To(MatchRegexp(`\n  tunnel: NetworkConnectionStatus Error since ` + rfc(tunnelSince) + ago))
	g.Expect(out).To(ContainSubstring("\n  return probe: NONE: no API-server URL is known"))
	g.Expect(out).To(ContainSubstring("; the gate probes the same before it accepts a mark: an answer vetoes it (gate rule 4)\n"))
	g.Expect(out).To(ContainSubstring("\n  " + storm))

	out, _, err = kubectl(t, alice, "", "plan", live.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(MatchRegexp(`\n  API server: APIServerStatus Established since ` + rfc(liveSince) + ` \(\d+h\d+m\d+s ago\)\n`))
	g.Expect(out).To(ContainSubstring("\n  tunnel: no networking condition: not evidence either way"))
	g.Expect(out).To(ContainSubstring("\n  storm now: 2 of 2 providers unreachable by Liqo's evidence ("+idsOf(dead, live)+")"),
		"the one a mark would go on counts as unreachable")

	js, _, err := kubectl(t, alice, "", "plan", dead.ID, "-o", "json")
	g.Expect(err).NotTo(HaveOccurred())
	var report view.PlanReport
	g.Expect(json.Unmarshal([]byte(js), &report)).To(Succeed())
	expectEvidence(g, report.Evidence, apiSince, tunnelSince, dead.ID)

	_, _, err = kubectl(t, alice, "", "mark", dead.ID, "--reason", "gone", "--yes")
	g.Expect(err).NotTo(HaveOccurred())
	out, _, err = kubectl(t, alice, "", "status", dead.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(MatchRegexp(`\n  API server: APIServerStatus Error since ` + rfc(apiSince) + ago))
	g.Expect(out).To(MatchRegexp(`\n  tunnel: NetworkConnectionStatus Error since ` + rfc(tunnelSince) + ago))
	g.Expect(out).To(ContainSubstring("\n  return probe: NONE: no API-server URL is known"))
	g.Expect(out).To(ContainSubstring("\n  " + storm))
	js, _, err = kubectl(t, alice, "", "status", dead.ID, "-o", "json")
	g.Expect(err).NotTo(HaveOccurred())
	var status view.StatusReport
	g.Expect(json.Unmarshal([]byte(js), &status)).To(Succeed())
	g.Expect(status.Clusters).To(HaveLen(1))
	expectEvidence(g, status.Clusters[0].Evidence, apiSince, tunnelSince, dead.ID)
}

// expectEvidence checks an evidence document: APIServerStatus and NetworkConnectionStatus Error since the
// times given, unreachable only the provider of that cluster ID, of two, by the default guard.
func expectEvidence(g Gomega, ev *view.Evidence, apiSince, tunnelSince time.Time, unreachable string) {
	g.Expect(ev).NotTo(BeNil())
	g.Expect(ev.APIServer).To(And(HaveField("Status", "Error"), HaveField("Since.Time", BeTemporally("==", apiSince))))
	g.Expect(ev.Tunnel).To(And(HaveField("Status", "Error"), HaveField("Since.Time", BeTemporally("==", tunnelSince))))
	g.Expect(ev.Storm).To(Equal(view.Storm{Unreachable: []string{unreachable}, Providers: 2,
		Guard: view.Guard{MinUnreachable: 3, MaxUnreachableSharePercent: 50}}))
}
