package liqojanitor

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The consumer's side of the provider fence (issue 37, design revision 5): the janitor's leader renews the
// Lease FenceLeaseName on each provider it holds a fence credential for, and keeps, in its own namespace,
// what it needs to compute when that provider has surely fenced itself. The gate refuses a mark, and the
// janitor every release, before that deadline.
// Its keys (ProviderFenceSecretLabel, ProviderFenceKubeconfigKey, FenceRenewalsConfigMap,
// OverrideFenceDeadlineAnnotation) are in keys.go.

// FenceRenewal is the janitor's record of its renewals of one provider's fence Lease. Times are the
// consumer's own clock (the janitor's), never compared with the provider's.
type FenceRenewal struct {
	// Contract is the provider's published contract as last read (FenceContractAnnotation's value).
	Contract string `json:"contract,omitempty"`
	// LastAck is when the response of the last acknowledged renewal arrived: the provider's agent showed
	// it had observed the renewal before (its seen-rv), armed, with the expected cluster ID.
	LastAck *time.Time `json:"lastAck,omitempty"`
	// LastLanded is the latest moment a renewal may have reached the provider: a successful one's
	// response, or, for one whose outcome is unknown (sent, then no answer), its sending plus the request
	// timeout. The provider's deadline runs from its observation of the last renewal that landed, so the
	// consumer's runs from this.
	LastLanded *time.Time `json:"lastLanded,omitempty"`
	// StoppedForMark is the marked-at stamp of the mark that stopped the renewals (design revision 5: a
	// consumer that gave a provider up never keeps its copies alive); "" while renewing.
	StoppedForMark string `json:"stoppedForMark,omitempty"`
	// ProviderFenced is the provider's fence record as read on its Lease (ProviderFencedAnnotation), once
	// it fenced this consumer.
	ProviderFenced string `json:"providerFenced,omitempty"`
}

// Deadline is when the provider has surely fenced this consumer: LastLanded plus the contract's SafeAfter.
// false without a parseable contract or without a renewal that may have landed (nothing to wait for: the
// provider's agent never saw this consumer renew, so it never armed).
func (r FenceRenewal) Deadline() (time.Time, FenceContract, bool) {
	c, err := ParseFenceContract(r.Contract)
	if err != nil || r.LastLanded == nil {
		return time.Time{}, FenceContract{}, false
	}
	return r.LastLanded.Add(c.SafeAfter()), c, true
}

// String is the record as FenceRenewalsConfigMap holds it.
func (r FenceRenewal) String() string {
	b, _ := json.Marshal(r) // strings and times: it always marshals
	return string(b)
}

// ParseFenceRenewal reads one record as FenceRenewalsConfigMap holds it (String), refusing one that does not
// parse, or whose recorded contract does not (ParseFenceContract). Whoever decides on a record must hold on
// that error, never act as if there were no record: a consumer that had a provider's contract and whose
// record got corrupted may still have that provider's copies running until a deadline it no longer knows.
func ParseFenceRenewal(v string) (FenceRenewal, error) {
	var r FenceRenewal
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return FenceRenewal{}, fmt.Errorf("not a fence renewal record: %w", err)
	}
	if r.Contract != "" {
		if _, err := ParseFenceContract(r.Contract); err != nil {
			return FenceRenewal{}, fmt.Errorf("the record's contract: %w", err)
		}
	}
	return r, nil
}

// FenceRenewals reads the janitor's renewal records, by provider cluster ID, for display; a value that does
// not parse is left out (a decision reads each value with ParseFenceRenewal and holds on its error).
func FenceRenewals(cm *corev1.ConfigMap) map[string]FenceRenewal {
	out := map[string]FenceRenewal{}
	if cm == nil {
		return out
	}
	for id, v := range cm.Data {
		var r FenceRenewal
		if json.Unmarshal([]byte(v), &r) == nil {
			out[id] = r
		}
	}
	return out
}

// SortedProviders is the cluster IDs of records, sorted.
func SortedProviders(records map[string]FenceRenewal) []string {
	ids := make([]string, 0, len(records))
	for id := range records {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
