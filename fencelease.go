package liqojanitor

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// The provider-side fence's lease and contract (issues 36 and 37, design revision 5 "At most once, with a
// deadline"): a provider's admin opts a consumer in with FenceAfterAnnotation on that consumer's Tenant;
// the provider's agent then watches the Lease FenceLeaseName in that consumer's tenant namespace, which the
// consumer's janitor renews, publishes its FenceContract there, and stops the consumer's copies once no
// renewal was observed for fenceAfter. The consumer computes from the published contract alone — never a
// setting of its own, never a comparison of the two clusters' clocks — the time after its last acknowledged
// renewal by which the provider has surely fenced itself (FenceContract.SafeAfter), and takes no
// irreversible step before it.
// Its keys (FenceLeaseName, FenceAfterAnnotation, FenceContractAnnotation, ArmedAtAnnotation,
// SeenRVAnnotation) are in keys.go.

// Bounds of the deadline the consumer computes from a contract (issue 37): the rate at which a clock may
// drift (1 %), each cluster's own skew between the nodes its controllers run on (2 s per side), and a
// margin for what neither side measures (15 s).
const (
	ClockRateBound   = 0.01
	IntraClusterSkew = 2 * time.Second
	FenceMargin      = 15 * time.Second
	// TaintEvictionBound is Kubernetes' default toleration of the node.kubernetes.io/unreachable taint
	// (300 s): after it the consumer's own eviction starts replacing a Deployment's pods, so the provider's
	// copies must be stopped by then (SafeAfter at most this).
	TaintEvictionBound = 300 * time.Second
	// MinRenewalsPerFence is how many renew intervals fenceAfter must span, beyond one poll, for a late or
	// lost renewal never to fence a healthy consumer.
	MinRenewalsPerFence = 6
)

// Duration is a time.Duration written in JSON as Go writes it ("2m0s") and read from any Go duration.
type Duration time.Duration

// MarshalJSON writes d as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"2m\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// FenceContract is what the provider's agent promises, published on the Lease (FenceContractAnnotation):
// the bounds of its own timeline from the last renewal it observed to the last of the consumer's pods
// stopped, and who it is.
type FenceContract struct {
	// FenceAfter is how long the agent waits, from its observation of the last renewal, before it fences.
	FenceAfter Duration `json:"fenceAfter"`
	// Poll is how often the agent reads the Lease: a renewal is observed at most Poll after it landed.
	Poll Duration `json:"poll"`
	// GraceCap caps the grace period of the consumer's pods the fence deletes.
	GraceCap Duration `json:"graceCap"`
	// Failover bounds how long the agent can be without a leader (its leader election's lease duration and
	// retry period): a new leader fences at the same deadline, late by at most this.
	Failover Duration `json:"failover"`
	// Stop bounds how long the fence takes, from its start to the last pod gone (GraceCap included).
	Stop Duration `json:"stop"`
	// ProviderClusterID is the provider's Liqo cluster ID, as its cluster-ID ConfigMap says.
	ProviderClusterID string `json:"providerClusterID"`
	// Version is the agent's liqo-janitor version.
	Version string `json:"version,omitempty"`
}

// String is the contract as the annotation holds it.
func (c FenceContract) String() string {
	b, _ := json.Marshal(c) // strings and durations: it always marshals
	return string(b)
}

// ParseFenceContract reads a contract written by String, refusing one that promises nothing (a bound that
// is not positive, no provider cluster ID).
func ParseFenceContract(v string) (FenceContract, error) {
	var c FenceContract
	if err := json.Unmarshal([]byte(v), &c); err != nil {
		return FenceContract{}, fmt.Errorf("not a fence contract: %w", err)
	}
	var errs []error
	for name, d := range map[string]Duration{"fenceAfter": c.FenceAfter, "poll": c.Poll, "failover": c.Failover, "stop": c.Stop} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %s", name, time.Duration(d)))
		}
	}
	if c.GraceCap < 0 || c.GraceCap > c.Stop {
		errs = append(errs, fmt.Errorf("graceCap must be between 0 and stop (%s), got %s", time.Duration(c.Stop), time.Duration(c.GraceCap)))
	}
	if c.ProviderClusterID == "" {
		errs = append(errs, errors.New("providerClusterID is empty"))
	}
	if err := errors.Join(errs...); err != nil {
		return FenceContract{}, fmt.Errorf("fence contract %s: %w", v, err)
	}
	return c, nil
}

// Bound is the provider's own worst case from a renewal landing to the consumer's last pod stopped, on its
// own clock: observed within a poll, fenced fenceAfter after that observation, late by at most a failover,
// done within the stop bound.
func (c FenceContract) Bound() time.Duration {
	return time.Duration(c.Poll + c.FenceAfter + c.Failover + c.Stop)
}

// SafeAfter is T_safe: how long after its last acknowledged renewal (its own clock) the consumer may take
// it that the provider has fenced itself — the contract's Bound stretched by the clock-rate bound, plus
// each side's intra-cluster skew and the margin. Computed from the contract alone, never configured.
func (c FenceContract) SafeAfter() time.Duration {
	return time.Duration((1+ClockRateBound)*float64(c.Bound())) + 2*IntraClusterSkew + FenceMargin
}

// CheckArming says why the agent must not arm with this contract for a consumer renewing every renew
// (issue 36 item 4), naming the computed limit: fenceAfter below MinRenewalsPerFence renew intervals plus a
// poll would fence a consumer whose renewals are merely late; a SafeAfter beyond TaintEvictionBound would
// let the consumer's own eviction duplicate a workload before the provider's copies are stopped. nil: it
// may arm. The limit it names for fenceAfter takes the other bounds as fixed; CheckArmingFor names it for
// an agent whose bounds change with fenceAfter.
func (c FenceContract) CheckArming(renew time.Duration) error {
	return c.CheckArmingFor(renew, nil)
}

// CheckArmingFor is CheckArming for an agent that would publish contractAt(f) for a fenceAfter f (its
// failover bound may grow with f): the largest fenceAfter it names is the largest, in whole seconds, whose
// contract's SafeAfter is within TaintEvictionBound. contractAt nil: the other bounds are fixed.
func (c FenceContract) CheckArmingFor(renew time.Duration, contractAt func(fenceAfter time.Duration) FenceContract) error {
	if contractAt == nil {
		contractAt = func(f time.Duration) FenceContract { d := c; d.FenceAfter = Duration(f); return d }
	}
	var errs []error
	if renew <= 0 {
		errs = append(errs, errors.New("the consumer states no renew interval (spec.leaseDurationSeconds): it has not renewed as a liqo-janitor consumer does"))
	} else if minimum := MinRenewalsPerFence*renew + time.Duration(c.Poll); time.Duration(c.FenceAfter) < minimum {
		errs = append(errs, fmt.Errorf("fenceAfter %s is below the minimum %s (%d × the consumer's renew interval %s + poll %s): "+
			"a few late renewals would fence a healthy consumer; set %s to at least %s",
			time.Duration(c.FenceAfter), minimum, MinRenewalsPerFence, renew, time.Duration(c.Poll), FenceAfterAnnotation, minimum))
	}
	if safe := c.SafeAfter(); safe > TaintEvictionBound {
		limit := "no fenceAfter fits: shorten the agent's poll, grace cap or leader election"
		if m := maxFenceAfter(time.Duration(c.FenceAfter), contractAt); m > 0 {
			limit = fmt.Sprintf("lower %s to at most %s", FenceAfterAnnotation, m)
		}
		errs = append(errs, fmt.Errorf("the deadline the consumer computes, %s (poll + fenceAfter + failover + stop = %s, "+
			"with the clock bounds and margin), exceeds Kubernetes' %s taint eviction: the consumer's own eviction could "+
			"duplicate a workload before the fence stopped it; %s",
			safe.Round(time.Second), c.Bound(), TaintEvictionBound, limit))
	}
	return errors.Join(errs...)
}

// maxFenceAfter is the largest fenceAfter, in whole seconds below above, whose contract's SafeAfter is
// within TaintEvictionBound (SafeAfter grows with fenceAfter); 0 if none is.
func maxFenceAfter(above time.Duration, contractAt func(time.Duration) FenceContract) time.Duration {
	fits := func(s int64) bool { return contractAt(time.Duration(s)*time.Second).SafeAfter() <= TaintEvictionBound }
	lo, hi := int64(0), int64(above/time.Second) // fits(lo) unless lo is 0; !fits(hi)
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return time.Duration(lo) * time.Second
}
