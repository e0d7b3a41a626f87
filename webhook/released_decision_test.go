package webhook

import (
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// Rule 32 as pure decisions: the mutating webhook's stamps, the validating webhook's verdict and the
// peering warning, without an API server.

// releasedOf is a released-volumes record at `at`, by `by`, naming volumes by UID.
func releasedOf(at time.Time, by string, uids ...string) string {
	rec := liqojanitor.VolumesReleased{At: at.UTC().Format(time.RFC3339), By: by}
	for _, uid := range uids {
		rec.Volumes = append(rec.Volumes, liqojanitor.ReleasedVolume{PVC: "shop/" + uid, UID: uid, Remote: "shop-remote/" + uid})
	}
	return rec.String()
}

func TestReleasedVolumesDecision(t *testing.T) {
	t.Parallel()
	key := liqojanitor.VolumesReleasedAnnotation
	path := "metadata.annotations[" + key + "]"
	held := with(marked, key, releasedOf(now.Add(-time.Hour), "alice", "a", "b"))
	tests := map[string]struct {
		review      inputs
		wantAllowed bool
		wantCode    int32
		wantPaths   []string
		wantInMsg   []string
		wantReason  string
	}{
		"a fresh record of the requester on a marked cluster, with permission, is allowed": {
			review:      inputs{Old: fc(id, marked, down), New: fc(id, with(marked, key, releasedOf(now, "alice", "a")), down), permission: permitted},
			wantAllowed: true, wantReason: reasonReleased,
		},
		"a record without permission is forbidden (it abandons data)": {
			review:     inputs{Old: fc(id, marked, down), New: fc(id, with(marked, key, releasedOf(now, "alice", "a")), down)},
			wantCode:   http.StatusForbidden,
			wantPaths:  []string{"metadata.annotations[liqo.io/foreign-cluster-permanently-unreachable]"},
			wantInMsg:  []string{"may not record released volumes (liqo-janitor.io/volumes-released)"},
			wantReason: reasonPermission,
		},
		"a record naming another user is refused": {
			review:   inputs{Old: fc(id, marked, down), New: fc(id, with(marked, key, releasedOf(now, "mallory", "a")), down), permission: permitted},
			wantCode: http.StatusUnprocessableEntity, wantPaths: []string{path}, wantReason: reasonReleaseRecord,
			wantInMsg: []string{"names another user or another time is refused", "kubectl liqo-janitor release-volumes provider-a"},
		},
		"a backdated record is refused": {
			review:   inputs{Old: fc(id, marked, down), New: fc(id, with(marked, key, releasedOf(now.Add(-time.Minute), "alice", "a")), down), permission: permitted},
			wantCode: http.StatusUnprocessableEntity, wantPaths: []string{path}, wantReason: reasonReleaseRecord,
		},
		"a future-dated record is refused": {
			review:   inputs{Old: fc(id, marked, down), New: fc(id, with(marked, key, releasedOf(now.Add(time.Minute), "alice", "a")), down), permission: permitted},
			wantCode: http.StatusUnprocessableEntity, wantPaths: []string{path}, wantReason: reasonReleaseRecord,
		},
		"a record that does not parse is refused": {
			review:   inputs{Old: fc(id, marked, down), New: fc(id, with(marked, key, "data-0, data-1"), down), permission: permitted},
			wantCode: http.StatusUnprocessableEntity, wantPaths: []string{path}, wantReason: reasonReleaseRecord,
		},
		"a change that drops a volume is refused, naming it": {
			review:   inputs{Old: fc(id, held, down), New: fc(id, with(marked, key, releasedOf(now, "alice", "a", "c")), down), permission: permitted},
			wantCode: http.StatusUnprocessableEntity, wantPaths: []string{path}, wantReason: reasonReleaseKept,
			wantInMsg: []string{"only grows while the cluster is marked: this change drops shop/b (uid b)"},
		},
		"a change that appends a volume is allowed": {
			review:      inputs{Old: fc(id, held, down), New: fc(id, with(marked, key, releasedOf(now, "alice", "a", "b", "c")), down), permission: permitted},
			wantAllowed: true, wantReason: reasonReleased,
		},
		"removing the record while marked is refused, for everyone": {
			review:   inputs{Old: fc(id, held, down), New: fc(id, marked, down), permission: permitted},
			wantCode: http.StatusUnprocessableEntity, wantPaths: []string{path}, wantReason: reasonReleaseKept,
			wantInMsg: []string{"cannot be removed while the cluster is marked"},
		},
		"a record on an unmarked cluster is refused, even from a holder of the verb": {
			review:   inputs{Old: fc(id, nil), New: fc(id, with(nil, key, releasedOf(now, "alice", "a"))), permission: permitted},
			wantCode: http.StatusUnprocessableEntity, wantPaths: []string{path}, wantReason: reasonReleaseUnmarked,
			wantInMsg: []string{"is not marked permanently unreachable", "kubectl annotate foreigncluster provider-a liqo-janitor.io/volumes-released-"},
		},
		"removing a record from an unmarked cluster is anyone's": {
			review:      inputs{Old: fc(id, with(nil, key, "x")), New: fc(id, nil)},
			wantAllowed: true, wantReason: reasonOther,
		},
		"a mark still carrying a record is refused (the mutating webhook did not run)": {
			review: inputs{Old: fc(id, confirmed, down), New: fc(id, with(marked, key, releasedOf(now, "alice", "a")), down), permission: permitted,
				LocalClusterID: "local"},
			wantCode: http.StatusUnprocessableEntity, wantPaths: []string{path}, wantReason: reasonReleaseUnmarked,
			wantInMsg: []string{"a mark never starts with volumes released"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := tc.review
			r.User, r.Now = alice, now
			v := decide(&r, opts)
			assertVerdict(t, &v, r.New, tc.wantAllowed, tc.wantCode, tc.wantPaths, tc.wantInMsg)
			if v.Reason != tc.wantReason {
				t.Errorf("Reason = %q, want %q", v.Reason, tc.wantReason)
			}
		})
	}
}

func TestReleasedVolumesStamp(t *testing.T) {
	t.Parallel()
	key := liqojanitor.VolumesReleasedAnnotation
	tests := map[string]struct {
		old, new   map[string]string
		wantSet    map[string]string
		wantRemove []string
	}{
		"a record on a marked cluster gets the requester and the time, its volumes kept": {
			old: marked, new: with(marked, key, releasedOf(now.Add(-time.Hour), "mallory", "a", "b")),
			wantSet: map[string]string{key: releasedOf(now, "alice", "a", "b")},
		},
		"an unchanged record is left alone": {
			old: with(marked, key, releasedOf(now, "bob", "a")), new: with(marked, key, releasedOf(now, "bob", "a")),
		},
		"a record that does not parse is left for the validating webhook to refuse": {
			old: marked, new: with(marked, key, "data-0"),
		},
		"marking drops a record placed before the mark, or given with it": {
			old: with(confirmed, key, "x"), new: with(confirmed, liqojanitor.MarkAnnotation, "true", key, "x"),
			wantSet: stamped, wantRemove: []string{key},
		},
		"unmarking drops the record with the mark": {
			old: with(marked, key, "x"), new: without(with(marked, key, "x"), liqojanitor.MarkAnnotation),
			wantRemove: []string{liqojanitor.ConfirmAnnotation, liqojanitor.MarkedByAnnotation, liqojanitor.MarkedAtAnnotation, key},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			set, remove := stamp(fc(id, tc.old), fc(id, tc.new), "alice", false, now)
			if !maps.Equal(set, tc.wantSet) {
				t.Errorf("set = %v, want %v", set, tc.wantSet)
			}
			if !slices.Equal(remove, tc.wantRemove) {
				t.Errorf("remove = %v, want %v", remove, tc.wantRemove)
			}
		})
	}
}

func TestReleasedVolumesWarnings(t *testing.T) {
	t.Parallel()
	key := liqojanitor.VolumesReleasedAnnotation
	rec, _ := liqojanitor.ParseVolumesReleased(releasedOf(now, "alice", "a", "b"))
	repeer := rec.RepeerWarning(id)

	unmark := inputs{Old: fc(id, with(marked, key, rec.String()), down), New: fc(id, nil, down), User: alice, Now: now, permission: permitted}
	if v := decide(&unmark, opts); !slices.Contains(v.Warnings, repeer) || len(v.Warnings) != 2 {
		t.Errorf("unmarking warnings = %q, want the unmark warning and %q", v.Warnings, repeer)
	}
	plain := inputs{Old: fc(id, marked, down), New: fc(id, nil, down), User: alice, Now: now, permission: permitted}
	if v := decide(&plain, opts); len(v.Warnings) != 1 {
		t.Errorf("unmarking with no record: warnings = %q, want the unmark warning only", v.Warnings)
	}

	tests := map[string]struct {
		peers bool
		rec   liqojanitor.VolumesReleased
		ok    bool
		err   error
		want  []string
	}{
		"a cluster ID with released volumes is warned of": {peers: true, rec: rec, ok: true, want: []string{repeer}},
		"one without is not":                              {peers: true},
		"an unreadable copy says the gate cannot tell": {peers: true, err: errors.New("forbidden"),
			want: []string{`ForeignCluster "provider-a": liqo-janitor cannot tell whether volumes were released from cluster provider-a (forbidden)`}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := peeringWarnings(fc(id, nil), tc.rec, tc.ok, tc.err)
			if len(got) != len(tc.want) || (len(got) == 1 && !strings.HasPrefix(got[0], tc.want[0])) {
				t.Errorf("warnings = %q, want %q", got, tc.want)
			}
		})
	}

	if !peers(nil, fc(id, nil)) || !peers(fc("other", nil), fc(id, nil)) || peers(fc(id, nil), fc(id, marked)) {
		t.Error("peers: a CREATE or a new spec.clusterID peers; an update keeping it does not")
	}
}
