package providerfence_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// electionLease is the Lease the provider fence's replicas compete for (cmd/liqo-janitor).
const electionLease = "liqo-janitor-provider-fence.liqo-janitor.io"

// TestTheStandbyFencesAtTheSameDeadline: two replicas of the real binary, as the provider-only install
// runs them (its ServiceAccount, its RBAC, its arguments, with short settings); the leader is killed 1 s
// before a lost consumer's deadline. The standby takes over and fences judging by the leader's recorded
// observation — the same deadline, not one of its own (fence rule 3) — late by at most the failover bound
// the contract publishes (and a loaded machine's slack).
func TestTheStandbyFencesAtTheSameDeadline(t *testing.T) {
	e := env(t)
	g := NewWithT(t)
	c := e.Client
	inst, err := e.ProviderFenceInstall()
	g.Expect(err).NotTo(HaveOccurred())
	args := []string{"--fence-poll=" + poll.String(), "--fence-grace-cap=" + graceCap.String(), "--liqo-namespace=" + liqoNamespace,
		"--leader-election-lease-duration=4s", "--leader-election-renew-deadline=3s", "--leader-election-retry-period=1s"}
	w := layOut(t, c, fenceAfter.String())
	leader, err := e.StartReplicaOf(inst, "fence-a", args...)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = leader.Kill() })
	g.Eventually(func() string { return holder(t, c, inst.Namespace) }).ShouldNot(BeEmpty())
	first := holder(t, c, inst.Namespace)
	standby, err := e.StartReplicaOf(inst, "fence-b", args...)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = standby.Kill() })

	r := startRenewing(t, c, w, renewEvery, 0)
	g.Eventually(func() *time.Time { return state(t, c, w).ArmedAt }).ShouldNot(BeNil())
	r.Stop()
	var observed time.Time
	g.Eventually(func() bool {
		s := state(t, c, w)
		if s.ObservedAt == nil || s.SeenRenewal != renewalNow(t, c, w) {
			return false
		}
		observed = *s.ObservedAt
		return true
	}).Should(BeTrue(), "the leader observed the last renewal")
	deadline := observed.Add(fenceAfter)
	g.Consistently(func() *liqojanitor.ProviderFence { return state(t, c, w).Fence }).
		WithTimeout(time.Until(deadline.Add(-time.Second))).WithPolling(200*time.Millisecond).
		Should(BeNil(), "not fenced before the deadline, up to the moment the scenario kills the leader at")
	g.Expect(leader.Kill()).To(Succeed())

	f := awaitFence(t, c, w, time.Minute)
	g.Expect(holder(t, c, inst.Namespace)).NotTo(Equal(first), "the standby fenced")
	g.Expect(*f.LastObservedAt).To(BeTemporally("==", observed), "judged by the leader's recorded observation")
	contract, err := liqojanitor.ParseFenceContract(awaitLease(t, c, w).Annotations[liqojanitor.FenceContractAnnotation])
	g.Expect(err).NotTo(HaveOccurred())
	late := f.StartedAt.Sub(deadline)
	t.Logf("killed 1s before the deadline; the standby fenced %s after it (failover bound %s)", late, time.Duration(contract.Failover))
	g.Expect(late).To(BeNumerically(">=", 0))
	g.Expect(late).To(BeNumerically("<=", time.Duration(contract.Failover)+slack))
}

// holder is the elected replica's identity ("" while none).
func holder(t *testing.T, c client.Client, ns string) string {
	t.Helper()
	l := &coordinationv1.Lease{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: electionLease}, l); err != nil {
		return ""
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

// renewalNow identifies w's Lease's last renewal as the agent does (renewTime and holder as text).
func renewalNow(t *testing.T, c client.Client, w *world) string {
	t.Helper()
	l := awaitLease(t, c, w)
	if l.Spec.RenewTime == nil {
		return ""
	}
	return l.Spec.RenewTime.UTC().Format(time.RFC3339Nano) + " " + ptr.Deref(l.Spec.HolderIdentity, "")
}
