package providerfence

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

func leaseRenewed(rv string, renewTime time.Time, renew int32) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}}
	if !renewTime.IsZero() {
		l.Spec = coordinationv1.LeaseSpec{HolderIdentity: ptr.To("consumer"), RenewTime: &metav1.MicroTime{Time: renewTime},
			LeaseDurationSeconds: ptr.To(renew)}
	}
	return l
}

// TestDecide is the agent's judgement of one poll, rule by rule (fence rules 3, 4, 6 and 7).
func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	o := Options{LiqoNamespace: "liqo", Poll: time.Second, GraceCap: 5 * time.Second}.Default()
	c := o.contract(8*time.Second, "provider")
	armedAt := t0.Add(-time.Second)
	observed := func(at time.Time, rv string, renewTime time.Time) liqojanitor.FenceState {
		return liqojanitor.FenceState{SeenRenewal: renewalOf(leaseRenewed(rv, renewTime, 1)), SeenRV: rv, ObservedAt: &at, ArmedAt: &armedAt}
	}
	for _, tc := range []struct {
		name      string
		now       time.Time
		lease     *coordinationv1.Lease
		state     liqojanitor.FenceState
		resumed   bool
		holdUntil time.Time
		// want
		armed, observed, fence bool
		deadline               time.Time
		refused                string
	}{
		{name: "never renewed: nothing to arm on, nothing refused", now: t0, lease: leaseRenewed("1", time.Time{}, 0)},
		{name: "a first renewal arms", now: t0, lease: leaseRenewed("2", t0.Add(-time.Hour), 1),
			armed: true, observed: true, deadline: t0.Add(8 * time.Second)},
		{name: "a renewal with an unsafe interval does not arm, and says the minimum", now: t0, lease: leaseRenewed("2", t0, 2),
			observed: true, refused: "below the minimum 13s"},
		{name: "no renewal since the observation: due fenceAfter after it", now: t0.Add(7 * time.Second),
			lease: leaseRenewed("5", t0, 1), state: observed(t0, "5", t0), armed: true, deadline: t0.Add(8 * time.Second)},
		{name: "no renewal for fenceAfter: fence", now: t0.Add(8 * time.Second),
			lease: leaseRenewed("5", t0, 1), state: observed(t0, "5", t0), armed: true, fence: true, deadline: t0.Add(8 * time.Second)},
		{name: "only the agent's own writes since (another resourceVersion, the same renewal): still due", now: t0.Add(8 * time.Second),
			lease: leaseRenewed("6", t0, 1), state: observed(t0, "5", t0), armed: true, fence: true, deadline: t0.Add(8 * time.Second)},
		{name: "a renewTime a year ahead extends nothing: judged from the observation", now: t0.Add(8 * time.Second),
			lease: leaseRenewed("5", t0.AddDate(1, 0, 0), 1), state: observed(t0, "5", t0.AddDate(1, 0, 0)), armed: true, fence: true,
			deadline: t0.Add(8 * time.Second)},
		{name: "a renewal observed moves the deadline", now: t0.Add(8 * time.Second),
			lease: leaseRenewed("7", t0.Add(-time.Minute), 1), state: observed(t0, "5", t0), armed: true, observed: true,
			deadline: t0.Add(16 * time.Second)},
		{name: "first poll after failed reads, deadline past: the reconnect grace", now: t0.Add(30 * time.Second), resumed: true,
			lease: leaseRenewed("5", t0, 1), state: observed(t0, "5", t0), armed: true, deadline: t0.Add(32 * time.Second)},
		{name: "the reconnect grace is kept until it ends", now: t0.Add(31 * time.Second), holdUntil: t0.Add(32 * time.Second),
			lease: leaseRenewed("5", t0, 1), state: observed(t0, "5", t0), armed: true, deadline: t0.Add(32 * time.Second)},
		{name: "and fences when it ends", now: t0.Add(32 * time.Second), holdUntil: t0.Add(32 * time.Second),
			lease: leaseRenewed("5", t0, 1), state: observed(t0, "5", t0), armed: true, fence: true, deadline: t0.Add(32 * time.Second)},
		{name: "first poll after failed reads, deadline ahead: the same deadline", now: t0.Add(5 * time.Second), resumed: true,
			lease: leaseRenewed("5", t0, 1), state: observed(t0, "5", t0), armed: true, deadline: t0.Add(8 * time.Second)},
		{name: "the consumer's interval turns unsafe: disarmed", now: t0.Add(time.Second),
			lease: leaseRenewed("8", t0.Add(time.Second), 5), state: observed(t0, "5", t0), observed: true, refused: "below the minimum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := decide(tc.now, c, nil, tc.lease, tc.state, tc.resumed, tc.holdUntil)
			if got := v.state.ArmedAt != nil; got != tc.armed {
				t.Errorf("armed = %v, want %v", got, tc.armed)
			}
			if v.observed != tc.observed || v.fence != tc.fence || !v.deadline.Equal(tc.deadline) {
				t.Errorf("observed, fence, deadline = %v, %v, %s; want %v, %v, %s", v.observed, v.fence, v.deadline, tc.observed, tc.fence, tc.deadline)
			}
			if tc.refused == "" && v.refused != nil || tc.refused != "" && (v.refused == nil || !strings.Contains(v.refused.Error(), tc.refused)) {
				t.Errorf("refused = %v, want one saying %q", v.refused, tc.refused)
			}
			if v.observed && (v.state.SeenRV != tc.lease.ResourceVersion || !v.state.ObservedAt.Equal(tc.now)) {
				t.Errorf("an observation records the renewal's resourceVersion and the agent's time: %+v", v.state)
			}
		})
	}
}

// TestDecideLatched: once fenced, nothing observed arms, disarms or fences again (fence rule 6).
func TestDecideLatched(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	c := Options{LiqoNamespace: "liqo", Poll: time.Second}.Default().contract(8*time.Second, "provider")
	st := liqojanitor.FenceState{ObservedAt: &t0, ArmedAt: &t0, Fence: &liqojanitor.ProviderFence{StartedAt: t0}}
	v := decide(t0.Add(time.Minute), c, nil, leaseRenewed("9", t0.Add(time.Minute), 1), st, false, time.Time{})
	if !v.observed || v.fence || v.state.Fence == nil || v.state.ArmedAt == nil {
		t.Fatalf("a renewal after the fence is observed and changes nothing else: %+v", v)
	}
}

// TestContract: the published bounds follow from the settings alone, and the defaults leave room for a
// fenceAfter of two minutes within Kubernetes' taint eviction.
func TestContract(t *testing.T) {
	o := Options{LiqoNamespace: "liqo", LeaseDuration: 15 * time.Second, RetryPeriod: 2 * time.Second}.Default()
	c := o.contract(2*time.Minute, "provider")
	// failover: 15 s + 2 s + 5 s + 2 × (120 s − 5 s) / 6
	if want := 15*time.Second + 2*time.Second + 5*time.Second + 2*(115*time.Second/6); time.Duration(c.Failover) != want {
		t.Errorf("failover %s, want %s", time.Duration(c.Failover), want)
	}
	if time.Duration(c.Stop) != 45*time.Second || time.Duration(c.GraceCap) != 30*time.Second {
		t.Errorf("stop %s, grace cap %s", time.Duration(c.Stop), time.Duration(c.GraceCap))
	}
	if err := c.CheckArming(10 * time.Second); err != nil {
		t.Errorf("the defaults with fenceAfter 2m and a 10s renew interval must arm: %v", err)
	}
	if _, err := liqojanitor.ParseFenceContract(c.String()); err != nil {
		t.Errorf("the published contract does not parse: %v", err)
	}
}

// TestTheRefusalNamesTheLargestFenceAfterThatFits: the agent's failover bound grows with fenceAfter, so
// the limit a refusal names is searched on the agent's own contracts: it fits, one second more does not.
func TestTheRefusalNamesTheLargestFenceAfterThatFits(t *testing.T) {
	o := Options{LiqoNamespace: "liqo", LeaseDuration: 15 * time.Second, RetryPeriod: 2 * time.Second}.Default()
	at := func(f time.Duration) liqojanitor.FenceContract { return o.contract(f, "provider") }
	err := at(180*time.Second).CheckArmingFor(10*time.Second, at)
	if err == nil {
		t.Fatal("fenceAfter 180s with the defaults must be refused")
	}
	var limit time.Duration
	for f := time.Second; f < 180*time.Second; f += time.Second {
		if at(f).SafeAfter() <= liqojanitor.TaintEvictionBound {
			limit = f
		}
	}
	if want := "at most " + limit.String(); !strings.Contains(err.Error(), want) {
		t.Errorf("refusal %q does not say %q", err, want)
	}
	if at(limit).CheckArmingFor(10*time.Second, at) != nil || at(limit+time.Second).CheckArmingFor(10*time.Second, at) == nil {
		t.Errorf("%s must arm and one second more must not", limit)
	}
}
