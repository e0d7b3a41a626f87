package liqojanitor

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// configMapOf is the renewals ConfigMap with one record, of provider p.
func configMapOf(record string) *corev1.ConfigMap {
	return &corev1.ConfigMap{Data: map[string]string{"p": record}}
}

// TestParseFenceRenewalRefusesWhatADecisionCannotTrust: a record that does not parse, or whose contract
// does not, is an error — never a record without a contract, which would let the janitor release and the
// gate admit as if the provider had no fence.
func TestParseFenceRenewalRefusesWhatADecisionCannotTrust(t *testing.T) {
	t.Parallel()
	landed := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	c := FenceContract{FenceAfter: Duration(time.Minute), Poll: Duration(5 * time.Second), Failover: Duration(15 * time.Second),
		Stop: Duration(30 * time.Second), ProviderClusterID: "p"}
	for name, tc := range map[string]struct {
		value   string
		wantErr string
	}{
		"a record as String writes it":   {value: FenceRenewal{Contract: c.String(), LastLanded: &landed}.String()},
		"a record without a contract":    {value: FenceRenewal{LastLanded: &landed}.String()},
		"an empty record":                {value: "{}"},
		"not JSON":                       {value: "{", wantErr: "not a fence renewal record"},
		"a time that does not parse":     {value: `{"lastLanded":"yesterday"}`, wantErr: "not a fence renewal record"},
		"a contract that does not parse": {value: FenceRenewal{Contract: "{}", LastLanded: &landed}.String(), wantErr: "the record's contract"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r, err := ParseFenceRenewal(tc.value)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("ParseFenceRenewal() = %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("ParseFenceRenewal() = %+v, %v; want an error with %q", r, err, tc.wantErr)
			case tc.wantErr == "" && r.String() != FenceRenewals(configMapOf(tc.value))["p"].String():
				t.Fatalf("ParseFenceRenewal() = %s, FenceRenewals reads %s", r, FenceRenewals(configMapOf(tc.value))["p"])
			}
		})
	}
}
