package liqojanitor

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The fence deadline as the gate holds a mark to it (gate rule 31) and the plugin shows it: the janitor's
// renewal record of a provider read from FenceRenewalsConfigMap, failing on one that is there but cannot be
// read, and the gate's stamp of OverrideFenceDeadlineAnnotation.

// ReadFenceRenewal is the janitor's renewal record of the provider clusterID in cm (FenceRenewalsConfigMap;
// nil: there is none): found false when cm holds none for it. An error when the record is there but is not
// a FenceRenewal, or when a renewal may have landed under a contract that does not parse: the provider's
// agent may be armed, and its deadline cannot be computed.
func ReadFenceRenewal(cm *corev1.ConfigMap, clusterID string) (r FenceRenewal, found bool, err error) {
	if cm == nil {
		return FenceRenewal{}, false, nil
	}
	v, ok := cm.Data[clusterID]
	if !ok {
		return FenceRenewal{}, false, nil
	}
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return FenceRenewal{}, true, fmt.Errorf("the janitor's renewal record of provider %s is not readable: %w", clusterID, err)
	}
	if r.Contract != "" && r.LastLanded != nil {
		if _, err := ParseFenceContract(r.Contract); err != nil {
			return r, true, fmt.Errorf("renewals of provider %s may have landed, but its contract cannot be read: %w", clusterID, err)
		}
	}
	return r, true, nil
}

// FenceDeadlineOverride is the gate's stamp of a mark set before the provider's fence deadline with
// OverrideFenceDeadlineAnnotation (FenceDeadlineOverriddenAnnotation, gate rule 31).
type FenceDeadlineOverride struct {
	// At is when the gate stamped it (the marking request's time, whole seconds).
	At time.Time
	// By is the user whose marking request carried the override.
	By string
	// Deadline is the provider's fence deadline the gate read then; zero when it read none.
	Deadline time.Time
}

// The parts of a FenceDeadlineOverride after its user.
const (
	deadlineWasPart = "; deadline was "
	noDeadlinePart  = "; no deadline read"
)

// String is the stamp's FenceDeadlineOverriddenAnnotation value: "<At> by <By>; deadline was <Deadline>",
// or "<At> by <By>; no deadline read" (RFC 3339, UTC, whole seconds).
func (o FenceDeadlineOverride) String() string {
	s := o.At.UTC().Format(time.RFC3339) + " by " + o.By
	if o.Deadline.IsZero() {
		return s + noDeadlinePart
	}
	return s + deadlineWasPart + o.Deadline.UTC().Format(time.RFC3339)
}

// ParseFenceDeadlineOverride reads a value written by FenceDeadlineOverride.String: ok when it carries a
// readable time, a non-empty user and either readable deadline part.
func ParseFenceDeadlineOverride(v string) (FenceDeadlineOverride, bool) {
	ts, rest, found := strings.Cut(v, " by ")
	if !found {
		return FenceDeadlineOverride{}, false
	}
	at, err := time.Parse(time.RFC3339, ts)
	if err != nil {
		return FenceDeadlineOverride{}, false
	}
	if by, ok := strings.CutSuffix(rest, noDeadlinePart); ok && by != "" {
		return FenceDeadlineOverride{At: at, By: by}, true
	}
	i := strings.LastIndex(rest, deadlineWasPart)
	if i <= 0 {
		return FenceDeadlineOverride{}, false
	}
	deadline, err := time.Parse(time.RFC3339, rest[i+len(deadlineWasPart):])
	if err != nil {
		return FenceDeadlineOverride{}, false
	}
	return FenceDeadlineOverride{At: at, By: rest[:i], Deadline: deadline}, true
}

// Summary says what the contract promises, for a person: "fenceAfter 1m30s, poll 5s, failover 20s, stop
// 1m0s, provider cluster ID p: surely fenced 3m41s after the last renewal that may have landed".
func (c FenceContract) Summary() string {
	return fmt.Sprintf("fenceAfter %s, poll %s, failover %s, stop %s, provider cluster ID %s: surely fenced %s after the last "+
		"renewal that may have landed", time.Duration(c.FenceAfter), time.Duration(c.Poll), time.Duration(c.Failover),
		time.Duration(c.Stop), c.ProviderClusterID, c.SafeAfter().Round(time.Second))
}
