package liqojanitor

import (
	"testing"
	"time"
)

func TestFenceRecord(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 2, 10, 0, 0, time.UTC)
	ret := time.Date(2026, 12, 2, 1, 50, 0, 0, time.UTC)
	stamped := FenceRecord{At: at, By: "alice@corp", Return: ret, Counts: "shadowpods 12, pods 12"}
	sent := FenceRecord{At: at, By: "alice", Counts: "shadowpods 3, pods 3"}
	tests := map[string]struct {
		value   string
		want    FenceRecord
		ok      bool
		stamped bool
	}{
		"the stamped form round-trips": {value: stamped.String(), want: stamped, ok: true, stamped: true},
		"its spelling": {
			value: "2026-12-02T02:10:00Z by alice@corp: shadowpods 12, pods 12; fences the return at 2026-12-02T01:50:00Z",
			want:  stamped, ok: true, stamped: true,
		},
		"the plugin's request round-trips, and fences no return": {value: sent.String(), want: sent, ok: true},
		"its spelling, without the return":                       {value: "2026-12-02T02:10:00Z by alice: shadowpods 3, pods 3", want: sent, ok: true},
		"a service account's name, colons and all, and empty counts": {
			value: FenceRecord{At: at, By: "system:serviceaccount:ops:fencer", Return: ret}.String(),
			want:  FenceRecord{At: at, By: "system:serviceaccount:ops:fencer", Return: ret}, ok: true, stamped: true,
		},
		"a return recorded to the millisecond, as the janitor records it, keeps its milliseconds": {
			value: FenceRecord{At: at, By: "bob", Return: ret.Add(123 * time.Millisecond), Counts: "pods 1"}.String(),
			want:  FenceRecord{At: at, By: "bob", Return: ret.Add(123 * time.Millisecond), Counts: "pods 1"}, ok: true, stamped: true,
		},
		"a time in another zone is read as the same instant": {
			value: "2026-12-02T03:10:00+01:00 by bob: pods 1; fences the return at 2026-12-02T02:50:00+01:00",
			want:  FenceRecord{At: at, By: "bob", Return: ret, Counts: "pods 1"}, ok: true, stamped: true,
		},
		"counts that mention a return are counts, the last part is the return": {
			value: "2026-12-02T02:10:00Z by bob: x; fences the return at soon; fences the return at 2026-12-02T01:50:00Z",
			want:  FenceRecord{At: at, By: "bob", Return: ret, Counts: "x; fences the return at soon"}, ok: true, stamped: true,
		},
		"an unreadable return is part of the counts: not stamped": {
			value: "2026-12-02T02:10:00Z by bob: x; fences the return at yesterday",
			want:  FenceRecord{At: at, By: "bob", Counts: "x; fences the return at yesterday"}, ok: true,
		},
		"no user: not stamped": {
			value: "2026-12-02T02:10:00Z by : x; fences the return at 2026-12-02T01:50:00Z",
			want:  FenceRecord{At: at, Return: ret, Counts: "x"}, ok: true,
		},
		"no 'by': none":             {value: "2026-12-02T02:10:00Z alice: x; fences the return at 2026-12-02T01:50:00Z"},
		"no counts separator: none": {value: "2026-12-02T02:10:00Z by alice; fences the return at 2026-12-02T01:50:00Z"},
		"garbage":                   {value: "fenced by hand"},
		"empty":                     {value: ""},
		"a time alone":              {value: "2026-12-02T02:10:00Z"},
		"a date, no time":           {value: "2026-12-02 by alice: x; fences the return at 2026-12-02T01:50:00Z"},
		"a return, no time":         {value: "; fences the return at 2026-12-02T01:50:00Z"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, ok := ParseFenceRecord(tc.value)
			same := got.At.Equal(tc.want.At) && got.Return.Equal(tc.want.Return) && got.By == tc.want.By && got.Counts == tc.want.Counts
			if ok != tc.ok || !same || got.Stamped() != tc.stamped {
				t.Errorf("ParseFenceRecord(%q) = %+v, %v (stamped %v); want %+v, %v (stamped %v)", tc.value, got, ok, got.Stamped(), tc.want, tc.ok, tc.stamped)
			}
		})
	}
}

func TestReturnRecordedAt(t *testing.T) {
	t.Parallel()
	markedAt := "2026-12-02T01:00:00Z"
	ret := time.Date(2026, 12, 2, 1, 50, 0, 0, time.UTC)
	tests := map[string]struct {
		annotations map[string]string
		want        time.Time
		wantOK      bool
	}{
		"the janitor's record of a return of this mark": {
			annotations: map[string]string{MarkedAtAnnotation: markedAt,
				CleanupAnnotation: ReturnedPrefix + "2026-12-02T01:50:00Z (Liqo's APIServerStatus turned Established); marked dead by alice"},
			want: ret, wantOK: true,
		},
		"a record without a marked-at (a mark the gate did not stamp) counts": {
			annotations: map[string]string{CleanupAnnotation: ReturnedPrefix + "2026-12-02T01:50:00Z"},
			want:        ret, wantOK: true,
		},
		"a return recorded to the millisecond": {
			annotations: map[string]string{MarkedAtAnnotation: markedAt, CleanupAnnotation: ReturnedPrefix + "2026-12-02T01:50:00.123Z (x)"},
			want:        ret.Add(123 * time.Millisecond), wantOK: true,
		},
		"a return in the mark's second counts": {
			annotations: map[string]string{MarkedAtAnnotation: "2026-12-02T01:50:00Z", CleanupAnnotation: ReturnedPrefix + "2026-12-02T01:50:00Z (x)"},
			want:        ret, wantOK: true,
		},
		"a record older than the mark belongs to an earlier one": {
			annotations: map[string]string{MarkedAtAnnotation: "2026-12-02T02:00:00Z", CleanupAnnotation: ReturnedPrefix + "2026-12-02T01:50:00Z (x)"},
		},
		"a clean-up summary is no return":    {annotations: map[string]string{CleanupAnnotation: "pods 3/3"}},
		"a grace-window plan is no return":   {annotations: map[string]string{CleanupAnnotation: GracePlanPrefix + "20s left"}},
		"an unreadable time is no return":    {annotations: map[string]string{CleanupAnnotation: ReturnedPrefix + "lately"}},
		"no cleanup annotation is no return": {annotations: map[string]string{MarkedAtAnnotation: markedAt}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, ok := ReturnRecordedAt(tc.annotations)
			if ok != tc.wantOK || !got.Equal(tc.want) {
				t.Errorf("ReturnRecordedAt = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
