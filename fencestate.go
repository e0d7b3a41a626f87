package liqojanitor

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// The provider-side agent's own records (issue 36). What the consumer may write — the Lease
// FenceLeaseName, which its credential may update — is never where the agent keeps what it decides on: its
// observations and its fence live in FenceStateLeaseName beside it, which only the agent (and the
// provider's admin) writes, and on the Tenant. The consumer's Lease only gets copies, for the consumer to
// read (issue 37).
// Their keys (FenceStateLeaseName, FenceStateAnnotation, FenceStatusAnnotation, ProviderFencedAnnotation,
// FencedAtAnnotation, CordonedByFenceAnnotation) and the fence credential's names are in keys.go.

// FenceState is the agent's record of one consumer: what it last observed, whether it armed, and its fence.
// Times are the agent's clock at the moment it observed or acted.
type FenceState struct {
	// SeenRenewal identifies the last renewal observed: the Lease's spec.renewTime and holderIdentity as
	// written, compared as text, never as a time.
	SeenRenewal string `json:"seenRenewal,omitempty"`
	// SeenRV is the Lease's resourceVersion when that renewal was observed.
	SeenRV string `json:"seenRV,omitempty"`
	// ObservedAt is when the agent observed it: the fence is due FenceAfter later.
	ObservedAt *time.Time `json:"observedAt,omitempty"`
	// ArmedAt is when the agent armed: the first renewal it observed with safe settings.
	ArmedAt *time.Time `json:"armedAt,omitempty"`
	// Fence is the fence, once begun: then the consumer stays fenced, whatever it renews, until the
	// provider's admin clears it (`kubectl liqo-janitor unfence`).
	Fence *ProviderFence `json:"fence,omitempty"`
}

// ProviderFence is what the agent's fence did: when it began (after which observation), when every
// deletion was issued, when the last pod was gone, what it did to the Tenant, and what it could not stop.
type ProviderFence struct {
	// StartedAt is when the agent decided to fence (its clock); LastObservedAt the observation it judged by.
	StartedAt      time.Time  `json:"startedAt"`
	LastObservedAt *time.Time `json:"lastObservedAt,omitempty"`
	// FencedAt is when the Tenant was cordoned and every deletion issued.
	FencedAt *time.Time `json:"fencedAt,omitempty"`
	// StoppedAt is when the agent saw none of the consumer's pods left (but those in NotStopped).
	StoppedAt *time.Time `json:"stoppedAt,omitempty"`
	// Tenant says what the fence did to the Tenant: "cordoned", or why it left it ("was Drained").
	Tenant string `json:"tenant,omitempty"`
	// ShadowPods and Pods count the deletions the fence issued (every poll of a latched fence adds those
	// of objects that appeared again).
	ShadowPods int `json:"shadowPods"`
	Pods       int `json:"pods"`
	// NotStopped names the pods the fence could not stop: deleted on a node that is not Ready, their
	// containers may still run.
	NotStopped []string `json:"notStopped,omitempty"`
}

// String is the state as FenceStateAnnotation holds it.
func (s FenceState) String() string {
	b, _ := json.Marshal(s) // strings, times and counts: it always marshals
	return string(b)
}

// ParseFenceState reads a state written by String; "" is the empty state.
func ParseFenceState(v string) (FenceState, error) {
	var s FenceState
	if v == "" {
		return s, nil
	}
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return FenceState{}, fmt.Errorf("not a fence state: %w", err)
	}
	return s, nil
}

// String is the record as ProviderFencedAnnotation holds it.
func (f ProviderFence) String() string {
	b, _ := json.Marshal(f) // as FenceState
	return string(b)
}

// ParseProviderFence reads a record written by String.
func ParseProviderFence(v string) (ProviderFence, error) {
	var f ProviderFence
	if err := json.Unmarshal([]byte(v), &f); err != nil {
		return ProviderFence{}, fmt.Errorf("not a provider fence record: %w", err)
	}
	if f.StartedAt.IsZero() {
		return ProviderFence{}, fmt.Errorf("provider fence record %s: no startedAt", v)
	}
	return f, nil
}

// Describe says in a sentence what the fence did: "fenced by the provider at …: 3 ShadowPods and 3 pods
// deleted, the Tenant cordoned; the last pod gone at …".
func (f ProviderFence) Describe() string {
	var b strings.Builder
	at := f.StartedAt
	if f.FencedAt != nil {
		at = *f.FencedAt
	}
	fmt.Fprintf(&b, "fenced by the provider at %s: %d ShadowPods and %d pods deleted", at.UTC().Format(time.RFC3339), f.ShadowPods, f.Pods)
	if f.Tenant != "" {
		fmt.Fprintf(&b, ", the Tenant %s", f.Tenant)
	}
	switch {
	case f.FencedAt == nil:
		b.WriteString("; still under way")
	case f.StoppedAt != nil:
		fmt.Fprintf(&b, "; the last pod gone at %s", f.StoppedAt.UTC().Format(time.RFC3339))
	default:
		b.WriteString("; pods still terminating")
	}
	if len(f.NotStopped) > 0 {
		fmt.Fprintf(&b, "; not stopped (on nodes that are not Ready): %s", strings.Join(f.NotStopped, ", "))
	}
	return b.String()
}
