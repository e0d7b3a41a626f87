package main

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/view"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
)

// The provider fence as plan, status and mark show it (issue 37): the janitor's renewal record of the
// provider (ConfigMap liqo-janitor-fence-renewals in its namespace), written here as the janitor's renewer
// writes it (FenceRenewal.String).

// testContract is a provider's contract: SafeAfter 195.75 s.
func testContract(id string) liqojanitor.FenceContract {
	return liqojanitor.FenceContract{FenceAfter: liqojanitor.Duration(90 * time.Second), Poll: liqojanitor.Duration(5 * time.Second),
		GraceCap: liqojanitor.Duration(30 * time.Second), Failover: liqojanitor.Duration(20 * time.Second),
		Stop: liqojanitor.Duration(60 * time.Second), ProviderClusterID: id}
}

// recordRenewal writes r as the janitor's renewal record of p's provider.
func recordRenewal(t *testing.T, p *fixture.Provider, r liqojanitor.FenceRenewal) {
	t.Helper()
	putConfigMapData(t, janitorNamespace(t), liqojanitor.FenceRenewalsConfigMap, map[string]string{p.ID: r.String()})
}

// renewalWithDeadline is a record of p's provider, renewals acknowledged 2 s before the last that may have
// landed, whose deadline is deadline (whole seconds).
func renewalWithDeadline(p *fixture.Provider, deadline time.Time) liqojanitor.FenceRenewal {
	c := testContract(p.ID)
	landed := deadline.Add(-c.SafeAfter())
	ack := landed.Add(-2 * time.Second)
	return liqojanitor.FenceRenewal{Contract: c.String(), LastAck: &ack, LastLanded: &landed}
}

// TestPlanAndMarkShowTheProvidersFenceDeadline: for an unmarked provider with a contract, plan shows the
// contract, the last acknowledged renewal and the deadline, and that the gate refuses a mark until then
// (the gate's dry run says so too); mark shows the same before its dry run, which the gate refuses.
func TestPlanAndMarkShowTheProvidersFenceDeadline(t *testing.T) {
	g := NewWithT(t)
	dead, _ := deadAndLive(t)
	deadline := time.Now().Add(2 * time.Minute).UTC().Truncate(time.Second)
	r := renewalWithDeadline(dead, deadline)
	recordRenewal(t, dead, r)
	completes := "the provider's fence completes by " + deadline.Format(time.RFC3339) + " (in "

	out, _, err := kubectl(t, alice, "", "plan", dead.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(And(
		ContainSubstring("provider fence: contract fenceAfter 1m30s, poll 5s, failover 20s, stop 1m0s, provider cluster ID "+dead.ID+
			": surely fenced 3m16s after the last renewal that may have landed"),
		ContainSubstring("  last acknowledged renewal at "+r.LastAck.UTC().Format(time.RFC3339)+" ("),
		ContainSubstring("  renewals not stopped (no mark seen)"),
		ContainSubstring(completes),
		ContainSubstring("a mark is refused until then (gate rule 31"),
		ContainSubstring("Gate: a mark would be refused now"),
		ContainSubstring("completes by "+deadline.Format(time.RFC3339)+" (in ")))

	js, _, err := kubectl(t, alice, "", "plan", dead.ID, "-o", "json")
	g.Expect(err).NotTo(HaveOccurred())
	var report view.PlanReport
	g.Expect(json.Unmarshal([]byte(js), &report)).To(Succeed())
	g.Expect(report.ProviderFence.Deadline.Time).To(BeTemporally("==", deadline))
	g.Expect(report.ProviderFence.Contract.ProviderClusterID).To(Equal(dead.ID))

	out, stderr, err := kubectl(t, alice, "", "mark", dead.ID, "--reason", "gone", "--yes")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(And(ContainSubstring(completes), ContainSubstring("a mark is refused until then (gate rule 31")))
	g.Expect(stderr).To(ContainSubstring("completes by " + deadline.Format(time.RFC3339)))
	g.Expect(annotations(t, dead)).NotTo(HaveKey(liqojanitor.MarkAnnotation))
}

// TestStatusShowsTheProvidersFence: once marked, status shows the renewals stopped for the mark, the
// deadline passed and the provider's record of its fence; without a record, plan and status say there is
// no provider-side fence.
func TestStatusShowsTheProvidersFence(t *testing.T) {
	g := NewWithT(t)
	dead, live := deadAndLive(t)

	out, _, err := kubectl(t, alice, "", "plan", dead.ID)
	g.Expect(err).NotTo(HaveOccurred())
	none := "provider fence: none (no renewal record): no provider-side fence: its copies may still run"
	g.Expect(out).To(ContainSubstring(none))

	_, _, err = kubectl(t, alice, "", "mark", dead.ID, "--reason", "gone", "--yes")
	g.Expect(err).NotTo(HaveOccurred())
	out, _, err = kubectl(t, alice, "", "status", dead.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("  " + none))

	markedAt := annotations(t, dead)[liqojanitor.MarkedAtAnnotation]
	deadline := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	r := renewalWithDeadline(dead, deadline)
	r.StoppedForMark = markedAt
	fencedAt := deadline.Add(-time.Minute)
	stoppedAt := fencedAt.Add(20 * time.Second)
	r.ProviderFenced = liqojanitor.ProviderFence{StartedAt: fencedAt, FencedAt: &fencedAt, StoppedAt: &stoppedAt, Tenant: "cordoned",
		ShadowPods: 3, Pods: 3}.String()
	recordRenewal(t, dead, r)

	out, _, err = kubectl(t, alice, "", "status", dead.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(And(
		ContainSubstring("  provider fence: contract fenceAfter 1m30s"),
		ContainSubstring("    renewals stopped for the mark of "+markedAt),
		ContainSubstring("    the provider's fence completed: its deadline passed at "+deadline.Format(time.RFC3339)+" (1m"),
		ContainSubstring("    fenced by the provider at "+fencedAt.Format(time.RFC3339)+": 3 ShadowPods and 3 pods deleted, the Tenant cordoned"),
		Not(ContainSubstring("a mark is refused"))))

	js, _, err := kubectl(t, alice, "", "status", dead.ID, "-o", "json")
	g.Expect(err).NotTo(HaveOccurred())
	var report view.StatusReport
	g.Expect(json.Unmarshal([]byte(js), &report)).To(Succeed())
	g.Expect(report.Clusters[0].ProviderFence.StoppedForMark).To(Equal(markedAt))
	g.Expect(report.Clusters[0].ProviderFence.Deadline.Time).To(BeTemporally("==", deadline))

	// a record that is there but cannot be read: said, with the gate's answer
	putConfigMapData(t, janitorNamespace(t), liqojanitor.FenceRenewalsConfigMap, map[string]string{live.ID: "renewed"})
	out, _, err = kubectl(t, alice, "", "plan", live.ID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("provider fence: unknown: the janitor's renewal record of provider " + live.ID +
		" is not readable"))
}
