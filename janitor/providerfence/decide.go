package providerfence

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// verdict is what one poll decides for one consumer, from what it read and its own clock.
type verdict struct {
	// state is the agent's record after this poll (persisted before it counts: fence rule 3).
	state liqojanitor.FenceState
	// observed: this poll observed a renewal.
	observed bool
	// refused says why the agent does not arm (fence rule 4); nil when armed or nothing to arm on.
	refused error
	// holdUntil is the reconnect grace's end (fence rule 7), carried to the next poll.
	holdUntil time.Time
	// fence: fence now (fence rule 5).
	fence bool
	// deadline is when the fence is due (zero: not armed, or fenced).
	deadline time.Time
}

// renewalOf identifies the Lease's last renewal as its writer wrote it: renewTime and holderIdentity as
// text, never as a time (fence rule 3). "" when it was never renewed.
func renewalOf(l *coordinationv1.Lease) string {
	if l == nil || l.Spec.RenewTime == nil {
		return ""
	}
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	return l.Spec.RenewTime.UTC().Format(time.RFC3339Nano) + " " + holder
}

// renewIntervalOf is the renew interval the consumer states on the Lease (spec.leaseDurationSeconds).
func renewIntervalOf(l *coordinationv1.Lease) time.Duration {
	if l == nil || l.Spec.LeaseDurationSeconds == nil {
		return 0
	}
	return time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
}

// decide is one poll's judgement of one consumer: lease is the consumer's Lease as read now, state the
// agent's record as read now, resumed whether this is the first poll since reads failed or since this
// leader began, holdUntil the reconnect grace carried from the previous poll.
// contractAt is the contract the agent would publish for another fenceAfter (for the limit a refusal names).
func decide(now time.Time, c liqojanitor.FenceContract, contractAt func(time.Duration) liqojanitor.FenceContract,
	lease *coordinationv1.Lease, state liqojanitor.FenceState, resumed bool, holdUntil time.Time) verdict {
	v := verdict{state: state, holdUntil: holdUntil}
	if r := renewalOf(lease); r != "" && r != state.SeenRenewal {
		at := now
		v.state.SeenRenewal, v.state.SeenRV, v.state.ObservedAt = r, lease.ResourceVersion, &at
		v.observed, v.holdUntil = true, time.Time{}
	}
	if v.state.Fence != nil { // latched (fence rule 6): nothing observed changes it
		return v
	}
	renew := renewIntervalOf(lease)
	v.refused = c.CheckArmingFor(renew, contractAt)
	switch {
	case v.refused != nil && v.state.ObservedAt == nil:
		// nothing renewed yet: nothing to arm on, and nothing to refuse either
		v.refused = nil
		return v
	case v.refused != nil:
		v.state.ArmedAt = nil // unsafe settings disarm (fence rule 4)
		return v
	case v.state.ArmedAt == nil && v.observed:
		at := now
		v.state.ArmedAt = &at
	case v.state.ArmedAt == nil:
		return v // armed only by a renewal observed with safe settings
	}
	v.deadline = v.state.ObservedAt.Add(time.Duration(c.FenceAfter))
	if resumed && !now.Before(v.deadline) {
		v.holdUntil = now.Add(reconnectRenewals * renew) // fence rule 7
	}
	if v.holdUntil.After(v.deadline) {
		v.deadline = v.holdUntil
	}
	v.fence = !now.Before(v.deadline)
	return v
}
