package liqojanitor

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

var kinds = []string{"Pod", "ResourceSlice", "NamespaceMap", "Renew", "InternalFabric", "NamespaceOffloading", "Secret"}

func TestProgress(t *testing.T) {
	t.Parallel()
	full := Progress{Kinds: []KindProgress{{Kind: "Pod", Done: 118, Total: 120}, {Kind: "ResourceSlice", Done: 3, Total: 3}},
		Blocked: 2, WaitingForLiqo: "app, shop and 2 more", WaitingForWebhooks: "vrs.liqo.io"}
	tests := map[string]struct {
		value string
		want  Progress
		ok    bool
	}{
		"every part round-trips": {value: full.String(), want: full, ok: true},
		"its spelling": {value: "pods 118/120, resourceslices 3/3, blocked 2, waiting for Liqo: app, shop and 2 more, " +
			"waiting for admission webhook vrs.liqo.io", want: full, ok: true},
		"counts only": {value: "pods 3/3, namespaceoffloadings 0/1",
			want: Progress{Kinds: []KindProgress{{Kind: "Pod", Done: 3, Total: 3}, {Kind: "NamespaceOffloading", Total: 1}}}, ok: true},
		"waiting for Liqo only": {value: "namespaceoffloadings 0/1, waiting for Liqo: app",
			want: Progress{Kinds: []KindProgress{{Kind: "NamespaceOffloading", Total: 1}}, WaitingForLiqo: "app"}, ok: true},
		"nothing to release":          {value: "nothing to release", want: Progress{}, ok: true},
		"nothing, a webhook refusing": {value: "nothing to release, waiting for admission webhook x", want: Progress{WaitingForWebhooks: "x"}, ok: true},
		"a dry run":                   {value: "dry run: would release pods 1/2", want: Progress{DryRun: true, Kinds: []KindProgress{{Kind: "Pod", Done: 1, Total: 2}}}, ok: true},
		"a grace plan is none":        {value: GracePlan{Left: time.Minute, Plan: "would release pods 3"}.String()},
		"a return's record is none":   {value: ReturnRecord{At: time.Now(), How: "x"}.String()},
		"an unknown kind":             {value: "widgets 1/1"},
		"more done than there were":   {value: "pods 3/2"},
		"garbage":                     {value: "pods three/3"},
		"empty":                       {value: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := ParseProgress(tc.value, kinds)
			if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseProgress(%q) = %+v, %v; want %+v, %v", tc.value, got, ok, tc.want, tc.ok)
			}
			if ok && got.String() != tc.value {
				t.Fatalf("String() = %q, want the value read %q", got.String(), tc.value)
			}
		})
	}
	if got := (Progress{Kinds: []KindProgress{{Kind: "Pod"}}}).String(); got != "nothing to release" {
		t.Fatalf("a kind with nothing in it is not written: %q", got)
	}
	if got := full.Of("ResourceSlice"); got.Done != 3 || full.Of("Renew").Total != 0 {
		t.Fatalf("Of() = %+v", got)
	}
}

func TestGracePlan(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		value string
		want  GracePlan
		ok    bool
	}{
		"round trip":           {value: GracePlan{Left: 22 * time.Second, Plan: "would release pods 400; blocked 1"}.String(), want: GracePlan{Left: 22 * time.Second, Plan: "would release pods 400; blocked 1"}, ok: true},
		"its spelling":         {value: "grace 1h0m0s left: would release nothing", want: GracePlan{Left: time.Hour, Plan: "would release nothing"}, ok: true},
		"a plan saying left: ": {value: "grace 1s left: a left: b", want: GracePlan{Left: time.Second, Plan: "a left: b"}, ok: true},
		"no countdown":         {value: "grace left: would release pods 3"},
		"a negative countdown": {value: "grace -1s left: x"},
		"progress is none":     {value: "pods 3/3"},
		"garbage":              {value: "grace soon left: x"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := ParseGracePlan(tc.value)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("ParseGracePlan(%q) = %+v, %v; want %+v, %v", tc.value, got, ok, tc.want, tc.ok)
			}
			if ok && !strings.HasPrefix(tc.value, GracePlanPrefix) {
				t.Fatalf("a plan must start with GracePlanPrefix (the gate and the chart's policy match it): %q", tc.value)
			}
		})
	}
	if got := (GracePlan{Left: 1500 * time.Millisecond, Plan: "p"}).String(); got != "grace 2s left: p" {
		t.Fatalf("the countdown is written to the second: %q", got)
	}
}

func TestReturnRecord(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 1, 50, 0, 250_000_000, time.UTC)
	how := "its API server at https://10.0.0.1:6443 answered the janitor's probe (no CA of the provider is known: its certificate was not verified)"
	full := ReturnRecord{At: at, How: how, Marked: "alice at 2026-12-02T01:00:00Z", PodsForceDeleted: 3, Before: "pods 3/3, blocked 1",
		Next: "kubectl liqo-janitor fence x --provider-kubeconfig <provider kubeconfig>"}
	fenced := full
	fenced.Next, fenced.Fenced = "", "by bob: shadowpods 3, pods 3"
	tests := map[string]struct {
		value string
		want  ReturnRecord
		ok    bool
	}{
		"round trip, a how with parentheses": {value: full.String(), want: full, ok: true},
		"fenced":                             {value: fenced.String(), want: fenced, ok: true},
		"its spelling": {value: "provider returned at 2026-12-02T01:50:00.250Z (" + how + "); marked dead by alice at 2026-12-02T01:00:00Z; " +
			"pods force-deleted by the janitor: 3; before: pods 3/3, blocked 1; next: kubectl liqo-janitor fence x --provider-kubeconfig <provider kubeconfig>",
			want: full, ok: true},
		"nothing before": {value: "provider returned at 2026-12-02T01:50:00.250Z (x); marked dead by an unknown user (no marked-by stamp) at ; pods force-deleted by the janitor: 0; next: n",
			want: ReturnRecord{At: at, How: "x", Marked: "an unknown user (no marked-by stamp) at ", Next: "n"}, ok: true},
		"only the time": {value: "provider returned at 2026-12-02T01:50:00.250Z", want: ReturnRecord{At: at}, ok: true},
		"no time":       {value: "provider returned at soon (x)"},
		"an ended mark": {value: "ended with its mark: " + full.String()},
		"progress":      {value: "pods 3/3"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := ParseReturnRecord(tc.value)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("ParseReturnRecord(%q) =\n%+v, %v; want\n%+v, %v", tc.value, got, ok, tc.want, tc.ok)
			}
			if ok && got.Next != "" && got.String() != tc.value {
				t.Fatalf("String() = %q, want the value read %q", got.String(), tc.value)
			}
		})
	}
}

func TestMarkTimeRecord(t *testing.T) {
	t.Parallel()
	marked := map[string]string{MarkedAtAnnotation: "2026-12-02T01:00:00Z"}
	with := func(v string) map[string]string {
		a := map[string]string{FirstSeenAnnotation: v}
		for k, w := range marked {
			a[k] = w
		}
		return a
	}
	seen := time.Date(2026, 12, 2, 1, 0, 1, 1_500_000, time.UTC)
	if got, err := MarkTimeRecord(with(RecordTime(seen)), FirstSeenAnnotation); err != nil || !got.Equal(seen.Truncate(time.Millisecond).Add(time.Millisecond)) {
		t.Fatalf("a record, rounded up to the millisecond: %v, %v", got, err)
	}
	if _, err := MarkTimeRecord(marked, FirstSeenAnnotation); !errors.Is(err, ErrNoRecord) {
		t.Fatalf("no record: %v", err)
	}
	if _, err := MarkTimeRecord(with("yesterday"), FirstSeenAnnotation); err == nil || !strings.Contains(err.Error(), "not an RFC 3339 time") {
		t.Fatalf("garbage: %v", err)
	}
	if _, err := MarkTimeRecord(with("2026-12-02T00:59:59Z"), FirstSeenAnnotation); err == nil || !strings.Contains(err.Error(), "before the mark") {
		t.Fatalf("an earlier mark's: %v", err)
	}
	if got, err := MarkTimeRecord(map[string]string{FirstSeenAnnotation: "2026-12-02T00:59:59Z"}, FirstSeenAnnotation); err != nil || got.IsZero() {
		t.Fatalf("without a marked-at stamp, any record counts: %v, %v", got, err)
	}
}

func TestMarkStampDescribe(t *testing.T) {
	t.Parallel()
	seen := time.Date(2026, 12, 2, 1, 0, 1, 0, time.UTC)
	tests := map[string]struct {
		annotations map[string]string
		firstSeen   time.Time
		want        string
	}{
		"both stamps": {map[string]string{MarkedByAnnotation: "alice", MarkedAtAnnotation: "2026-12-02T01:00:00Z"}, seen,
			"alice at 2026-12-02T01:00:00Z"},
		"no marked-at: the janitor's first sight": {map[string]string{MarkedByAnnotation: "alice"}, seen,
			"alice at an unknown time (no marked-at stamp), first seen by the janitor at 2026-12-02T01:00:01.000Z"},
		"no stamps, never seen": {nil, time.Time{}, "an unknown user (no marked-by stamp) at an unknown time (no marked-at stamp)"},
		"an unreadable marked-at": {map[string]string{MarkedByAnnotation: "bob", MarkedAtAnnotation: "noon"}, time.Time{},
			"bob at an unknown time (no marked-at stamp)"},
	}
	stamp := MarkStamp{By: "alice", At: time.Date(2026, 12, 2, 2, 0, 0, 0, time.FixedZone("CET", 3600))}
	if got := MarkStampOf(stamp.Annotations()); got.By != "alice" || !got.At.Equal(stamp.At) {
		t.Fatalf("the stamps round-trip: %+v from %v", got, stamp.Annotations())
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := MarkStampOf(tc.annotations).Describe(tc.firstSeen); got != tc.want {
				t.Fatalf("Describe() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAcknowledgement(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 2, 10, 0, 0, time.UTC)
	ack := Acknowledgement{At: at, By: "alice@corp", Count: 3}
	tests := map[string]struct {
		value string
		want  Acknowledgement
		ok    bool
	}{
		"round-trips":  {value: ack.String(), want: ack, ok: true},
		"its spelling": {value: "2026-12-02T02:10:00Z by alice@corp: 3 unreachable acknowledged", want: ack, ok: true},
		"a service account's name, colons and all": {
			value: Acknowledgement{At: at, By: "system:serviceaccount:ops:marker", Count: 12}.String(),
			want:  Acknowledgement{At: at, By: "system:serviceaccount:ops:marker", Count: 12}, ok: true,
		},
		"a time in another zone is the same instant": {value: "2026-12-02T03:10:00+01:00 by bob: 4 unreachable acknowledged",
			want: Acknowledgement{At: at, By: "bob", Count: 4}, ok: true},
		"no user":             {value: "2026-12-02T02:10:00Z by : 3 unreachable acknowledged"},
		"no time":             {value: "noon by alice: 3 unreachable acknowledged"},
		"no count":            {value: "2026-12-02T02:10:00Z by alice:  unreachable acknowledged"},
		"a count in words":    {value: "2026-12-02T02:10:00Z by alice: three unreachable acknowledged"},
		"a count with a sign": {value: "2026-12-02T02:10:00Z by alice: +3 unreachable acknowledged"},
		"a negative count":    {value: "2026-12-02T02:10:00Z by alice: -3 unreachable acknowledged"},
		"another ending":      {value: "2026-12-02T02:10:00Z by alice: 3 unreachable"},
		"empty":               {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := ParseAcknowledgement(tc.value)
			if ok != tc.ok || got.By != tc.want.By || got.Count != tc.want.Count || !got.At.Equal(tc.want.At) {
				t.Fatalf("ParseAcknowledgement(%q) = %+v, %v; want %+v, %v", tc.value, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestMarkTargets: the gate's record of the targets at marking reads back as written (the CA's bytes
// included, At to the second), and nothing else reads as one.
func TestMarkTargets(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 1, 0, 0, 500_000_000, time.FixedZone("x", 3600))
	rec := MarkTargets{Targets: Targets{APIServer: "https://10.0.0.7:6443", Proxy: "http://10.0.0.8:8118", CA: []byte("-----BEGIN CERTIFICATE-----\n")},
		From: "the ForeignCluster's status and Identity liqo-tenant-x/id", At: at}
	got, ok := ParseMarkTargets(rec.String())
	if !ok || got.Targets.APIServer != rec.Targets.APIServer || got.Targets.Proxy != rec.Targets.Proxy ||
		string(got.Targets.CA) != string(rec.Targets.CA) || got.From != rec.From || !got.At.Equal(at.Truncate(time.Second)) {
		t.Fatalf("ParseMarkTargets(%s) = %+v, %v", rec.String(), got, ok)
	}
	for _, v := range []string{"", "https://10.0.0.7:6443", `{"targets":{}}`, `{"targets":{},"from":"x"}`, `{"at":"2026-12-02T01:00:00Z"}`} {
		if _, ok := ParseMarkTargets(v); ok {
			t.Errorf("ParseMarkTargets(%q) read a record", v)
		}
	}
}
