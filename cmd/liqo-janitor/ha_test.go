package main

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
	"github.com/liqo-janitor/liqo-janitor/webhook"
)

// Two replicas of the real binary, both with --leader-elect, as the install runs them: every replica
// serves the webhook, the janitor runs on the elected leader only.

// haLayout is a dead provider with 1,000 terminating pods and 100 ResourceSlices (plus its own), and a
// live one whose objects must never be written.
var haLayout = fixture.Spec{Providers: 2, PodsPerProvider: 1000, ExtraResourceSlices: 99}

// startPair starts two replicas electing a leader (the chart's --leader-elect) through a Lease in a
// namespace of their own (leaseNamespace), which is also their janitor's own namespace. The first
// serves the webhook port the registered configurations call; the second a port of its own. The janitor
// runs slowly (one worker, 200 writes a second) so that a test can act mid-clean-up.
func startPair(t *testing.T, leaseNS string) (a, b *harness.Replica) {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	args := []string{"--namespace=" + leaseNS, "--grace-period=0",
		"--janitor-workers=1", "--kube-api-qps=200", "--kube-api-burst=1", stormGuardOff}
	pair := fixture.Prefix("ha")
	a, err := env.StartReplica(pair+"-a", args...)
	g.Expect(err).NotTo(HaveOccurred())
	addr, err := harness.FreeLocalAddr()
	g.Expect(err).NotTo(HaveOccurred())
	_, port, err := net.SplitHostPort(addr)
	g.Expect(err).NotTo(HaveOccurred())
	b, err = env.StartReplica(pair+"-b", append(args, "--webhook-port="+port)...)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _, _ = a.Kill(), b.Kill() })
	return a, b
}

// leaseNamespace is a namespace for one test's replicas, granted what the chart grants its ServiceAccount
// in the release namespace (the Lease, the brake, the records): a Lease no replica of another test holds.
func leaseNamespace(t *testing.T) string {
	t.Helper()
	return harness.Require(t).OwnNamespace(t)
}

// leads reports whether the replica holds the Lease (controller-runtime's leader_election_master_status).
func leads(r *harness.Replica) func() (float64, error) {
	return func() (float64, error) {
		return r.Metric("leader_election_master_status", map[string]string{"name": leaderElectionID})
	}
}

func written(r *harness.Replica) func() (float64, error) {
	return func() (float64, error) { return r.Metric("liqo_janitor_objects_total", nil) }
}

// podsOn counts the pods still bound to the provider's virtual node (one list).
func podsOn(t *testing.T, p *fixture.Provider) func() (int, error) {
	t.Helper()
	env := harness.Require(t)
	return func() (int, error) {
		var pods corev1.PodList
		err := env.Client.List(t.Context(), &pods, client.MatchingFields{"spec.nodeName": p.Node.Name})
		return len(pods.Items), err
	}
}

// layoutDead lays out haLayout, lets prepare (if any) change the dead provider's objects, then kills it
// and starts its unpeering.
func layoutDead(t *testing.T, prepare func(dead *fixture.Provider)) (dead, live *fixture.Provider) {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	spec := haLayout
	spec.Prefix = fixture.Prefix("ha")
	cons, err := fixture.Build(t.Context(), env.Client, spec)
	g.Expect(err).NotTo(HaveOccurred())
	dead, live = cons.Providers[0], cons.Providers[1]
	if prepare != nil {
		prepare(dead)
	}
	g.Expect(fixture.Kill(t.Context(), env.Client, dead)).To(Succeed())
	g.Expect(fixture.Terminate(t.Context(), env.Client, dead)).To(Succeed())
	// pods of the live provider deleted too: its kubelet would finish them; the janitor must not
	for _, pod := range live.Pods[:20] {
		g.Expect(env.Client.Delete(t.Context(), pod, client.GracePeriodSeconds(30))).To(Succeed())
	}
	return dead, live
}

// expectBothAnswerAdmission sends the same refusable request to both replicas' webhook servers.
func expectBothAnswerAdmission(t *testing.T, replicas ...*harness.Replica) {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	for _, r := range replicas {
		resp, err := env.Review(r, webhook.ValidatePath, harness.UnconfirmedMarkReview())
		g.Expect(err).NotTo(HaveOccurred(), r.Name)
		g.Expect(resp.Allowed).To(BeFalse(), r.Name)
		g.Expect(resp.Result.Message).To(ContainSubstring(liqojanitor.ConfirmAnnotation), r.Name)
	}
}

// takeover marks the dead provider, stops the leader with stop once it is mid-clean-up, and returns how
// long the standby took to lead; it checks that the standby wrote nothing before it led and finished the
// clean-up after.
func takeover(t *testing.T, standby *harness.Replica, dead, live *fixture.Provider, stop func() error) (gap time.Duration) {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	before, err := fixture.ResourceVersions(t.Context(), env.Client, append(live.Objects(), live.ForeignCluster)...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fixture.Mark(t.Context(), env.Client, dead)).To(Succeed())
	g.Eventually(podsOn(t, dead)).WithPolling(20*time.Millisecond).WithTimeout(60*time.Second).
		Should(BeNumerically("<", 950), "the leader has begun")
	g.Expect(written(standby)()).To(BeZero(), "the standby writes nothing while the leader holds the Lease")
	g.Expect(podsOn(t, dead)()).To(BeNumerically(">", 0), "stopped mid-clean-up")

	g.Expect(stop()).To(Succeed())
	stopped := time.Now()
	g.Eventually(leads(standby)).WithPolling(50 * time.Millisecond).WithTimeout(60 * time.Second).Should(Equal(1.0))
	gap = time.Since(stopped)
	g.Eventually(podsOn(t, dead)).WithTimeout(120 * time.Second).Should(BeZero())
	g.Eventually(func() (int, error) {
		var slices authv1beta1.ResourceSliceList
		err := env.Client.List(t.Context(), &slices, client.InNamespace(dead.TenantNS))
		return len(slices.Items), err
	}).WithTimeout(60*time.Second).Should(BeZero(), "the standby finished the job")
	g.Expect(written(standby)()).To(BeNumerically(">", 0))
	after, err := fixture.ResourceVersions(t.Context(), env.Client, append(live.Objects(), live.ForeignCluster)...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after).To(Equal(before), "nothing of the live provider was written")
	return gap
}

func TestTheStandbyFinishesWhenTheLeaderIsKilledMidCleanup(t *testing.T) {
	g := NewWithT(t)
	dead, live := layoutDead(t, nil)
	a, b := startPair(t, leaseNamespace(t))
	g.Eventually(leads(a)).WithTimeout(60 * time.Second).Should(Equal(1.0))
	g.Expect(leads(b)()).To(BeZero())
	expectBothAnswerAdmission(t, a, b)

	gap := takeover(t, b, dead, live, a.Kill)
	t.Logf("SIGKILL: the standby led %s after the leader died (lease duration 15s)", gap.Round(10*time.Millisecond))
	expectBothAnswerAdmission(t, b)
}

func TestTheLeaderReleasesTheLeaseOnSIGTERM(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	dead, live := layoutDead(t, nil)
	ns := leaseNamespace(t)
	// Someone else holds the Lease at first: neither replica leads, and both answer admission.
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: leaderElectionID, Namespace: ns},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("someone-else"), LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime: &metav1.MicroTime{Time: time.Now()}, RenewTime: &metav1.MicroTime{Time: time.Now()}}}
	g.Expect(env.Client.Create(t.Context(), lease)).To(Succeed())
	a, b := startPair(t, ns)
	expectBothAnswerAdmission(t, a, b)
	g.Expect(leads(a)()).To(BeZero())
	g.Expect(leads(b)()).To(BeZero())

	g.Expect(env.Client.Delete(t.Context(), lease)).To(Succeed())
	g.Eventually(func() (float64, error) {
		x, err := leads(a)()
		y, err2 := leads(b)()
		if err != nil {
			return 0, err
		}
		return x + y, err2
	}).WithTimeout(60 * time.Second).Should(Equal(1.0))
	leader, standby := a, b
	if x, _ := leads(b)(); x == 1 {
		leader, standby = b, a
	}
	gap := takeover(t, standby, dead, live, func() error {
		held := holder(t, ns)
		if err := leader.Terminate(30 * time.Second); err != nil {
			return err
		}
		if now := holder(t, ns); now == held {
			return fmt.Errorf("the Lease is still held by %s after its holder stopped on SIGTERM", held)
		}
		return nil
	})
	t.Logf("SIGTERM: the standby led %s after the leader stopped (it released the Lease on the way out)", gap.Round(10*time.Millisecond))

	held := &coordinationv1.Lease{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(lease), held)).To(Succeed())
	g.Expect(held.Spec.HolderIdentity).NotTo(BeNil())
	g.Expect(held.Spec.LeaseTransitions).To(HaveValue(BeNumerically(">=", 1)), "the Lease changed hands")
}

// holder is who holds the replicas' Lease in ns ("" when nobody does).
func holder(t *testing.T, ns string) string {
	t.Helper()
	env := harness.Require(t)
	lease := &coordinationv1.Lease{}
	NewWithT(t).Expect(env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: leaderElectionID}, lease)).To(Succeed())
	return ptr.Deref(lease.Spec.HolderIdentity, "")
}
