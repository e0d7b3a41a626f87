package providerfence

import (
	"errors"
	"fmt"
	"time"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// Defaults of the agent's settings.
const (
	DefaultPoll     = 5 * time.Second
	DefaultGraceCap = 30 * time.Second
	// stopSlack is what the stop bound allows beyond the grace cap: issuing the deletions and the kubelet
	// reporting the containers stopped.
	stopSlack = 15 * time.Second
	// reconnectRenewals is the reconnect grace in renew intervals (fence rule 7).
	reconnectRenewals = 2
)

// Options are the agent's settings. The contract it publishes is computed from them and each consumer's
// fenceAfter, never configured directly.
type Options struct {
	// LiqoNamespace holds Liqo's cluster-ID ConfigMap: the provider's cluster ID in the contract.
	LiqoNamespace string
	// Poll is how often the agent reads each consumer's Lease; a poll's reads time out after it.
	Poll time.Duration
	// GraceCap caps the grace period of the pods the fence deletes.
	GraceCap time.Duration
	// LeaseDuration and RetryPeriod are the leader election's (zero without it): a standby leads at most
	// their sum after the leader's last renewal, which the failover bound includes.
	LeaseDuration, RetryPeriod time.Duration
	// Version is the agent's version, published in the contract.
	Version string
}

// Default fills the settings left zero with their defaults.
func (o Options) Default() Options {
	if o.Poll == 0 {
		o.Poll = DefaultPoll
	}
	if o.GraceCap == 0 {
		o.GraceCap = DefaultGraceCap
	}
	return o
}

// Validate says what is wrong with the settings, and what to set instead.
func (o Options) Validate() error {
	var errs []error
	if o.LiqoNamespace == "" {
		errs = append(errs, errors.New("the provider fence needs Liqo's namespace (--liqo-namespace), where its cluster-ID ConfigMap is"))
	}
	if o.Poll < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("--fence-poll %s is too short: at least 100ms", o.Poll))
	}
	if o.GraceCap < 0 {
		errs = append(errs, fmt.Errorf("--fence-grace-cap %s must not be negative", o.GraceCap))
	}
	if o.LeaseDuration < 0 || o.RetryPeriod < 0 {
		errs = append(errs, errors.New("the leader election's lease duration and retry period must not be negative"))
	}
	return errors.Join(errs...)
}

// contract is what the agent promises a consumer whose Tenant says fenceAfter, as provider providerID.
//
// The failover bound: a standby leads at most LeaseDuration + RetryPeriod after the leader's last renewal
// of its election Lease, polls within a Poll, and, finding the deadline past, grants the reconnect grace of
// 2 renew intervals (fence rule 7); an armed consumer's renew interval is at most (fenceAfter − poll) / 6
// (FenceContract.CheckArming), so that grace is at most 2 × that. The stop bound: the grace cap and
// stopSlack.
func (o Options) contract(fenceAfter time.Duration, providerID string) liqojanitor.FenceContract {
	maxRenew := max(fenceAfter-o.Poll, 0) / liqojanitor.MinRenewalsPerFence
	failover := o.LeaseDuration + o.RetryPeriod + o.Poll + reconnectRenewals*maxRenew
	return liqojanitor.FenceContract{
		FenceAfter:        liqojanitor.Duration(fenceAfter),
		Poll:              liqojanitor.Duration(o.Poll),
		GraceCap:          liqojanitor.Duration(o.GraceCap),
		Failover:          liqojanitor.Duration(failover),
		Stop:              liqojanitor.Duration(o.GraceCap + stopSlack),
		ProviderClusterID: providerID,
		Version:           o.Version,
	}
}
