package liqojanitor

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestFenceDeadlineOverride: the gate's stamp of a fence-deadline override reads back as written, in both
// forms, and nothing else reads as one.
func TestFenceDeadlineOverride(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 2, 10, 0, 0, time.UTC)
	deadline := at.Add(3 * time.Minute)
	with := FenceDeadlineOverride{At: at, By: "alice@corp", Deadline: deadline}
	tests := map[string]struct {
		value string
		want  FenceDeadlineOverride
		ok    bool
	}{
		"round-trips":  {value: with.String(), want: with, ok: true},
		"its spelling": {value: "2026-12-02T02:10:00Z by alice@corp; deadline was 2026-12-02T02:13:00Z", want: with, ok: true},
		"no deadline read": {value: FenceDeadlineOverride{At: at, By: "bob"}.String(),
			want: FenceDeadlineOverride{At: at, By: "bob"}, ok: true},
		"a service account's name, colons and all": {
			value: FenceDeadlineOverride{At: at, By: "system:serviceaccount:ops:marker", Deadline: deadline}.String(),
			want:  FenceDeadlineOverride{At: at, By: "system:serviceaccount:ops:marker", Deadline: deadline}, ok: true,
		},
		"no user":              {value: "2026-12-02T02:10:00Z by ; deadline was 2026-12-02T02:13:00Z"},
		"no user, no deadline": {value: "2026-12-02T02:10:00Z by ; no deadline read"},
		"no time":              {value: "noon by alice; deadline was 2026-12-02T02:13:00Z"},
		"a deadline in words":  {value: "2026-12-02T02:10:00Z by alice; deadline was soon"},
		"another ending":       {value: "2026-12-02T02:10:00Z by alice"},
		"empty":                {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := ParseFenceDeadlineOverride(tc.value)
			if ok != tc.ok || got.By != tc.want.By || !got.At.Equal(tc.want.At) || !got.Deadline.Equal(tc.want.Deadline) {
				t.Fatalf("ParseFenceDeadlineOverride(%q) = %+v, %v; want %+v, %v", tc.value, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestReadFenceRenewal: a provider's record reads back; none is no record; one that is there but cannot be
// read, or whose renewals may have landed under a contract that does not parse, is an error.
func TestReadFenceRenewal(t *testing.T) {
	t.Parallel()
	landed := time.Date(2026, 12, 2, 2, 10, 0, 0, time.UTC)
	contract := FenceContract{FenceAfter: Duration(90 * time.Second), Poll: Duration(5 * time.Second), GraceCap: Duration(30 * time.Second),
		Failover: Duration(20 * time.Second), Stop: Duration(60 * time.Second), ProviderClusterID: "p"}.String()
	good := FenceRenewal{Contract: contract, LastLanded: &landed}
	tests := map[string]struct {
		cm           *corev1.ConfigMap
		found, isErr bool
	}{
		"no ConfigMap":                   {},
		"no record for the ID":           {cm: &corev1.ConfigMap{Data: map[string]string{"other": good.String()}}},
		"a record":                       {cm: &corev1.ConfigMap{Data: map[string]string{"p": good.String()}}, found: true},
		"not JSON":                       {cm: &corev1.ConfigMap{Data: map[string]string{"p": "lastLanded yesterday"}}, found: true, isErr: true},
		"a bad contract, landed":         {cm: &corev1.ConfigMap{Data: map[string]string{"p": FenceRenewal{Contract: "{}", LastLanded: &landed}.String()}}, found: true, isErr: true},
		"a bad contract, nothing landed": {cm: &corev1.ConfigMap{Data: map[string]string{"p": FenceRenewal{Contract: "{}"}.String()}}, found: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, found, err := ReadFenceRenewal(tc.cm, "p")
			if found != tc.found || (err != nil) != tc.isErr {
				t.Fatalf("ReadFenceRenewal = %+v, %v, %v; want found %v, error %v", r, found, err, tc.found, tc.isErr)
			}
			if name == "a record" {
				if d, _, ok := r.Deadline(); !ok || !d.Equal(landed.Add(mustContract(t, contract).SafeAfter())) {
					t.Fatalf("Deadline = %s, %v", d, ok)
				}
			}
		})
	}
}

func mustContract(t *testing.T, v string) FenceContract {
	t.Helper()
	c, err := ParseFenceContract(v)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
