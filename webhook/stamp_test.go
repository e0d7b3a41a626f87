package webhook

import (
	"maps"
	"strings"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

func TestStamp(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		old, new    *liqov1beta1.ForeignCluster
		uninstaller bool
		wantSet     map[string]string
		wantRemove  []string
	}{
		"a bare mark by Liqo's uninstaller is stamped, confirmed and given a reason (rule 18)": {
			old: fc(id, nil), new: fc(id, with(nil, liqojanitor.MarkAnnotation, "true")), uninstaller: true,
			wantSet: with(stamped, liqojanitor.ConfirmAnnotation, id, liqojanitor.ReasonAnnotation, "marked by Liqo's uninstaller (alice)"),
		},
		"a mark by Liqo's uninstaller keeps the confirmation and the reason it carries": {
			old: fc(id, with(nil, liqojanitor.ConfirmAnnotation, "provider-b")), new: fc(id, with(nil, liqojanitor.MarkAnnotation, "true",
				liqojanitor.ConfirmAnnotation, "provider-b", liqojanitor.ReasonAnnotation, "dc lost")), uninstaller: true,
			wantSet: stamped,
		},
		"a deletion override placed ahead of the mark, or given with it, is dropped (rule 22)": {
			old: fc(id, with(nil, liqojanitor.AllowDeleteAnnotation, id)), new: fc(id, with(nil, liqojanitor.MarkAnnotation, "true",
				liqojanitor.ConfirmAnnotation, id, liqojanitor.AllowDeleteAnnotation, id)),
			wantSet: stamped, wantRemove: []string{liqojanitor.AllowDeleteAnnotation},
		},
		"a fence deadline override's stamp carried without the override is dropped (rule 31)": {
			old: fc(id, nil), new: fc(id, with(nil, liqojanitor.MarkAnnotation, "true", liqojanitor.ConfirmAnnotation, id,
				liqojanitor.FenceDeadlineOverriddenAnnotation, liqojanitor.FenceDeadlineOverride{At: now, By: "alice"}.String())),
			wantSet: stamped, wantRemove: []string{liqojanitor.FenceDeadlineOverriddenAnnotation},
		},
		"unmarking removes the fence deadline's override and its stamp (rule 31)": {
			old: fc(id, with(marked, liqojanitor.OverrideFenceDeadlineAnnotation, id, liqojanitor.FenceDeadlineOverriddenAnnotation, "x")),
			new: fc(id, without(with(marked, liqojanitor.OverrideFenceDeadlineAnnotation, id, liqojanitor.FenceDeadlineOverriddenAnnotation, "x"), liqojanitor.MarkAnnotation)),
			wantRemove: []string{liqojanitor.ConfirmAnnotation, liqojanitor.MarkedByAnnotation, liqojanitor.MarkedAtAnnotation,
				liqojanitor.OverrideFenceDeadlineAnnotation, liqojanitor.FenceDeadlineOverriddenAnnotation},
		},
		"a bare mark by anyone else gets the stamps only": {
			old: fc(id, nil), new: fc(id, with(nil, liqojanitor.MarkAnnotation, "true")),
			wantSet: stamped,
		},
		"unmarking also removes the janitor's unpeering record and the deletion override": {
			old: fc(id, with(marked, liqojanitor.UnpeeringAnnotation, `{"phase":"InProgress"}`, liqojanitor.AllowDeleteAnnotation, id)),
			new: fc(id, without(with(marked, liqojanitor.UnpeeringAnnotation, `{"phase":"InProgress"}`, liqojanitor.AllowDeleteAnnotation, id), liqojanitor.MarkAnnotation)),
			wantRemove: []string{liqojanitor.ConfirmAnnotation, liqojanitor.MarkedByAnnotation, liqojanitor.MarkedAtAnnotation,
				liqojanitor.UnpeeringAnnotation, liqojanitor.AllowDeleteAnnotation},
		},
		"marking stamps the requesting user and the time": {
			old: fc(id, confirmed), new: fc(id, with(confirmed, liqojanitor.MarkAnnotation, "true")),
			wantSet: stamped,
		},
		"a fence record on a marked cluster gets the requester, the time and the recorded return, keeping its counts": {
			old: fc(id, returned), new: fc(id, with(returned, liqojanitor.FencedAnnotation, "2020-01-01T00:00:00Z by mallory: shadowpods 3, pods 3")),
			wantSet: map[string]string{liqojanitor.FencedAnnotation: now.Format(time.RFC3339) + " by alice: shadowpods 3, pods 3; fences the return at 2026-12-01T09:50:00.25Z"},
		},
		"a future-dated record naming another return is restamped": {
			old: fc(id, returned), new: fc(id, with(returned, liqojanitor.FencedAnnotation, fence(now.Add(24*time.Hour), "alice", now.Add(time.Hour)))),
			wantSet: map[string]string{liqojanitor.FencedAnnotation: fence(now, "alice", returnedAt)},
		},
		"a hand-written record is restamped, all of it the counts": {
			old: fc(id, returned), new: fc(id, with(returned, liqojanitor.FencedAnnotation, "fenced by hand")),
			wantSet: map[string]string{liqojanitor.FencedAnnotation: liqojanitor.FenceRecord{At: now, By: "alice", Return: returnedAt, Counts: "fenced by hand"}.String()},
		},
		"a fence record with no recorded return is left for the validating webhook to refuse": {
			old: fc(id, marked), new: fc(id, with(marked, liqojanitor.FencedAnnotation, "x")),
		},
		"marking drops a fence record placed before the mark (rule 15)": {
			old: fc(id, with(confirmed, liqojanitor.FencedAnnotation, "x")), new: fc(id, with(confirmed, liqojanitor.MarkAnnotation, "true", liqojanitor.FencedAnnotation, "x")),
			wantSet: stamped, wantRemove: []string{liqojanitor.FencedAnnotation},
		},
		"unmarking drops the fence record with the mark (rule 15)": {
			old: fc(id, with(returned, liqojanitor.FencedAnnotation, "x")), new: fc(id, without(with(returned, liqojanitor.FencedAnnotation, "x"), liqojanitor.MarkAnnotation)),
			wantRemove: []string{liqojanitor.ConfirmAnnotation, liqojanitor.MarkedByAnnotation, liqojanitor.MarkedAtAnnotation, liqojanitor.FencedAnnotation},
		},
		"an unchanged fence record is left alone": {
			old: fc(id, with(marked, liqojanitor.FencedAnnotation, "x")), new: fc(id, with(marked, liqojanitor.FencedAnnotation, "x")),
		},
		"forged stamps are replaced": {
			old:     fc(id, confirmed),
			new:     fc(id, with(confirmed, liqojanitor.MarkAnnotation, "true", liqojanitor.MarkedByAnnotation, "mallory", liqojanitor.MarkedAtAnnotation, "2020-01-01T00:00:00Z")),
			wantSet: stamped,
		},
		"a stamp of the right user but from the past is replaced": {
			old:     fc(id, confirmed),
			new:     fc(id, with(marked, liqojanitor.MarkedAtAnnotation, now.Add(-time.Hour).Format(time.RFC3339))),
			wantSet: stamped,
		},
		"a stamp of the right user a few seconds old is replaced too (a replayed request)": {
			old:     fc(id, confirmed),
			new:     fc(id, with(marked, liqojanitor.MarkedAtAnnotation, now.Add(-2*time.Second).Format(time.RFC3339))),
			wantSet: stamped,
		},
		"a hand-written marked-at of now-59s is replaced (it would skip a 30s grace period)": {
			old:     fc(id, confirmed),
			new:     fc(id, with(marked, liqojanitor.MarkedAtAnnotation, now.Add(-59*time.Second).Format(time.RFC3339))),
			wantSet: stamped,
		},
		"unmarking removes the stamps and the confirmation": {
			old: fc(id, marked), new: fc(id, without(marked, liqojanitor.MarkAnnotation)),
			wantRemove: []string{liqojanitor.ConfirmAnnotation, liqojanitor.MarkedByAnnotation, liqojanitor.MarkedAtAnnotation},
		},
		"unmarking removes the no-evidence key and the janitor's record of its grace window": {
			old: fc(id, with(marked, liqojanitor.NoEvidenceAnnotation, id, liqojanitor.FirstSeenAnnotation, "t", liqojanitor.GraceEndsAnnotation, "t")),
			new: fc(id, without(with(marked, liqojanitor.NoEvidenceAnnotation, id, liqojanitor.FirstSeenAnnotation, "t", liqojanitor.GraceEndsAnnotation, "t"), liqojanitor.MarkAnnotation)),
			wantRemove: []string{liqojanitor.ConfirmAnnotation, liqojanitor.MarkedByAnnotation, liqojanitor.MarkedAtAnnotation,
				liqojanitor.NoEvidenceAnnotation, liqojanitor.FirstSeenAnnotation, liqojanitor.GraceEndsAnnotation},
		},
		"unmarking in the grace period also removes the janitor's plan of the clean-up": {
			old: fc(id, with(marked, liqojanitor.CleanupAnnotation, liqojanitor.GracePlan{Left: 20 * time.Second, Plan: "would release pods 3"}.String())),
			new: fc(id, without(with(marked, liqojanitor.CleanupAnnotation, liqojanitor.GracePlan{Left: 20 * time.Second, Plan: "would release pods 3"}.String()), liqojanitor.MarkAnnotation)),
			wantRemove: []string{liqojanitor.ConfirmAnnotation, liqojanitor.MarkedByAnnotation, liqojanitor.MarkedAtAnnotation,
				liqojanitor.CleanupAnnotation},
		},
		"unmarking after a clean-up keeps its summary": {
			old:        fc(id, with(marked, liqojanitor.CleanupAnnotation, "pods 3/3")),
			new:        fc(id, without(with(marked, liqojanitor.CleanupAnnotation, "pods 3/3"), liqojanitor.MarkAnnotation)),
			wantRemove: []string{liqojanitor.ConfirmAnnotation, liqojanitor.MarkedByAnnotation, liqojanitor.MarkedAtAnnotation},
		},
		"a request that does not touch the mark is left alone": {
			old: fc(id, marked), new: fc(id, with(marked, liqojanitor.PausedAnnotation, "true")),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			set, remove := stamp(tc.old, tc.new, "alice", tc.uninstaller, now)
			if !maps.Equal(set, tc.wantSet) {
				t.Errorf("set = %v, want %v", set, tc.wantSet)
			}
			if strings.Join(remove, ",") != strings.Join(tc.wantRemove, ",") {
				t.Errorf("remove = %v, want %v", remove, tc.wantRemove)
			}
		})
	}
}

// TestStampThenDecide is the "default, then validate" check: whatever the mutating webhook writes for a
// well-formed marking passes validation, also when it is re-invoked a moment later and when the
// validating webhook runs a few seconds after the stamp.
func TestStampThenDecide(t *testing.T) {
	t.Parallel()
	old := fc(id, confirmed, down)
	f := fc(id, with(confirmed, liqojanitor.MarkAnnotation, "true", liqojanitor.MarkedByAnnotation, "mallory"), down)
	for i := range 2 { // the first invocation and a re-invocation a second later
		set, remove := stamp(old, f, alice.Username, false, now.Add(time.Duration(i)*time.Second))
		maps.Copy(f.Annotations, set)
		for _, k := range remove {
			delete(f.Annotations, k)
		}
	}
	if got := f.Annotations[liqojanitor.MarkedAtAnnotation]; got != now.Add(time.Second).Format(time.RFC3339) {
		t.Fatalf("marked-at = %s, want the last invocation's time", got)
	}
	v := decide(&inputs{Old: old, New: f, User: alice, Now: now.Add(5 * time.Second), permission: permitted}, opts)
	if !v.Allowed() {
		t.Fatalf("stamped marking denied: %v", v.Errors)
	}
}
