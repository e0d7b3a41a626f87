package liqojanitor

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestVolumesReleased(t *testing.T) {
	t.Parallel()
	v := func(uid string) ReleasedVolume {
		return ReleasedVolume{PVC: "ns/" + uid, UID: uid, Remote: "remote/" + uid}
	}
	rec := func(at, by string, vols ...ReleasedVolume) VolumesReleased {
		return VolumesReleased{At: at, By: by, Volumes: vols}
	}
	tests := map[string]struct {
		kept, in    VolumesReleased
		wantMerged  VolumesReleased
		wantAdded   bool
		wantDropped []ReleasedVolume
	}{
		"new volumes are appended with the new record's time and user": {
			kept: rec("2026-01-01T00:00:00Z", "alice", v("a")), in: rec("2026-02-01T00:00:00Z", "bob", v("a"), v("b")),
			wantMerged: rec("2026-02-01T00:00:00Z", "bob", v("a"), v("b")), wantAdded: true,
		},
		"a record naming only kept volumes adds nothing and keeps the kept time": {
			kept: rec("2026-01-01T00:00:00Z", "alice", v("a"), v("b")), in: rec("2026-02-01T00:00:00Z", "bob", v("b")),
			wantMerged: rec("2026-01-01T00:00:00Z", "alice", v("a"), v("b")), wantDropped: []ReleasedVolume{v("a")},
		},
		"a volume kept is never dropped by a record that forgot it": {
			kept: rec("2026-01-01T00:00:00Z", "alice", v("a")), in: rec("2026-02-01T00:00:00Z", "bob", v("c")),
			wantMerged: rec("2026-02-01T00:00:00Z", "bob", v("a"), v("c")), wantAdded: true, wantDropped: []ReleasedVolume{v("a")},
		},
		"into an empty copy": {
			in:         rec("2026-02-01T00:00:00Z", "bob", v("a")),
			wantMerged: rec("2026-02-01T00:00:00Z", "bob", v("a")), wantAdded: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			merged, added := tc.kept.Merge(tc.in)
			if !reflect.DeepEqual(merged, tc.wantMerged) || added != tc.wantAdded {
				t.Errorf("Merge = %+v, %v; want %+v, %v", merged, added, tc.wantMerged, tc.wantAdded)
			}
			if got := tc.in.Dropped(tc.kept); !reflect.DeepEqual(got, tc.wantDropped) {
				t.Errorf("Dropped = %+v, want %+v", got, tc.wantDropped)
			}
		})
	}
}

func TestVolumesReleasedStampedAt(t *testing.T) {
	t.Parallel()
	for value, want := range map[string]bool{
		`{"at":"2026-12-01T10:00:00Z","by":"alice","volumes":[{"pvc":"a/b","uid":"u"}]}`: true,
		`{"at":"2026-12-01T10:00:00Z","volumes":[{"pvc":"a/b","uid":"u"}]}`:              false,
		`{"at":"yesterday","by":"alice","volumes":[{"pvc":"a/b","uid":"u"}]}`:            false,
	} {
		rec, ok := ParseVolumesReleased(value)
		if _, stamped := rec.StampedAt(); !ok || stamped != want {
			t.Errorf("%s: parsed %v, stamped %v, want stamped %v", value, ok, stamped, want)
		}
	}
}

func TestReleasedVolumesOf(t *testing.T) {
	t.Parallel()
	cm := &corev1.ConfigMap{Data: map[string]string{
		"provider-a": `{"at":"2026-12-01T10:00:00Z","by":"alice","volumes":[{"pvc":"a/b","uid":"u"}]}`,
		"provider-b": `not json`,
		"provider-c": `{"at":"2026-12-01T10:00:00Z","by":"alice","volumes":[]}`,
	}}
	if rec, ok := ReleasedVolumesOf(cm, "provider-a"); !ok || rec.Volumes[0].UID != "u" {
		t.Errorf("provider-a: %+v, %v", rec, ok)
	}
	for _, id := range []string{"provider-b", "provider-c", "provider-d"} {
		if _, ok := ReleasedVolumesOf(cm, id); ok {
			t.Errorf("%s: a record that names no volume, or does not parse, or is not there, is none", id)
		}
	}
	if got := ReleasedVolumesRecords(cm); len(got) != 1 {
		t.Errorf("ReleasedVolumesRecords = %v, want provider-a's only", got)
	}
}
