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
	tests := map[string]struct {
		value      string
		want       FenceRecord // ParseFencedRecord's, when wantRecord
		wantRecord bool
		wantAt     time.Time // ParseFenced's
		wantRest   string
		wantOK     bool
	}{
		"the stamped form round-trips": {
			value: stamped.String(), want: stamped, wantRecord: true,
			wantAt: at, wantRest: "by alice@corp: shadowpods 12, pods 12", wantOK: true,
		},
		"its spelling": {
			value: "2026-12-02T02:10:00Z by alice@corp: shadowpods 12, pods 12; fences the return at 2026-12-02T01:50:00Z",
			want:  stamped, wantRecord: true, wantAt: at, wantRest: "by alice@corp: shadowpods 12, pods 12", wantOK: true,
		},
		"a service account's name, colons and all, and empty counts": {
			value: FenceRecord{At: at, By: "system:serviceaccount:ops:fencer", Return: ret}.String(),
			want:  FenceRecord{At: at, By: "system:serviceaccount:ops:fencer", Return: ret}, wantRecord: true,
			wantAt: at, wantRest: "by system:serviceaccount:ops:fencer: ", wantOK: true,
		},
		"a return recorded to the millisecond, as the janitor records it, keeps its milliseconds": {
			value: FenceRecord{At: at, By: "bob", Return: ret.Add(123 * time.Millisecond), Counts: "pods 1"}.String(),
			want:  FenceRecord{At: at, By: "bob", Return: ret.Add(123 * time.Millisecond), Counts: "pods 1"}, wantRecord: true,
			wantAt: at, wantRest: "by bob: pods 1", wantOK: true,
		},
		"a time in another zone is read as the same instant": {
			value: "2026-12-02T03:10:00+01:00 by bob: pods 1; fences the return at 2026-12-02T02:50:00+01:00",
			want:  FenceRecord{At: at, By: "bob", Return: ret, Counts: "pods 1"}, wantRecord: true,
			wantAt: at, wantRest: "by bob: pods 1", wantOK: true,
		},
		"the old spelling (the plugin's FencedRecord) names no return: no record": {
			value:  FencedRecord(at, "alice", "shadowpods 3, pods 3"),
			wantAt: at, wantRest: "by alice: shadowpods 3, pods 3", wantOK: true,
		},
		"counts that mention a return are counts, the last part is the return": {
			value: "2026-12-02T02:10:00Z by bob: x; fences the return at soon; fences the return at 2026-12-02T01:50:00Z",
			want:  FenceRecord{At: at, By: "bob", Return: ret, Counts: "x; fences the return at soon"}, wantRecord: true,
			wantAt: at, wantRest: "by bob: x; fences the return at soon", wantOK: true,
		},
		"an unreadable return is part of the counts: no record": {
			value:  "2026-12-02T02:10:00Z by bob: x; fences the return at yesterday",
			wantAt: at, wantRest: "by bob: x; fences the return at yesterday", wantOK: true,
		},
		"no user: no record": {
			value:  "2026-12-02T02:10:00Z by : x; fences the return at 2026-12-02T01:50:00Z",
			wantAt: at, wantRest: "by : x", wantOK: true,
		},
		"no 'by': no record": {
			value:  "2026-12-02T02:10:00Z alice: x; fences the return at 2026-12-02T01:50:00Z",
			wantAt: at, wantRest: "alice: x", wantOK: true,
		},
		"no counts separator: no record": {
			value:  "2026-12-02T02:10:00Z by alice; fences the return at 2026-12-02T01:50:00Z",
			wantAt: at, wantRest: "by alice", wantOK: true,
		},
		"garbage":           {value: "fenced by hand"},
		"empty":             {value: ""},
		"a time alone":      {value: "2026-12-02T02:10:00Z"},
		"a date, no time":   {value: "2026-12-02 by alice: x; fences the return at 2026-12-02T01:50:00Z"},
		"a return, no time": {value: "; fences the return at 2026-12-02T01:50:00Z"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, ok := ParseFencedRecord(tc.value)
			same := got.At.Equal(tc.want.At) && got.Return.Equal(tc.want.Return) && got.By == tc.want.By && got.Counts == tc.want.Counts
			if ok != tc.wantRecord || !same {
				t.Errorf("ParseFencedRecord(%q) = %+v, %v; want %+v, %v", tc.value, got, ok, tc.want, tc.wantRecord)
			}
			gotAt, rest, ok := ParseFenced(tc.value)
			if ok != tc.wantOK || !gotAt.Equal(tc.wantAt) || rest != tc.wantRest {
				t.Errorf("ParseFenced(%q) = %v, %q, %v; want %v, %q, %v", tc.value, gotAt, rest, ok, tc.wantAt, tc.wantRest, tc.wantOK)
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
