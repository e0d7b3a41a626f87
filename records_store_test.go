package liqojanitor

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestKeptRecord(t *testing.T) {
	t.Parallel()
	markedAt := "2026-12-02T01:00:00Z"
	rec := KeptRecord{Mark: markedAt, Targets: Targets{APIServer: "https://provider:6443"}, From: "the ForeignCluster's status",
		At: metav1.NewTime(time.Date(2026, 12, 2, 1, 0, 5, 0, time.UTC)), VirtualNodes: []string{"liqo-provider"},
		RemoteNamespaces: map[string]string{"app": "app-consumer"}, Return: &KeptReturn{At: "2026-12-02T02:00:00.000Z", How: "probe", Told: true}}
	cm := &corev1.ConfigMap{Data: map[string]string{"uid-1": rec.String(), "uid-2": "not JSON"}}
	tests := map[string]struct {
		uid         types.UID
		annotations map[string]string
		want        KeptRecord
		ok          bool
	}{
		"the record of the current mark reads back as written": {uid: "uid-1", annotations: map[string]string{MarkedAtAnnotation: markedAt}, want: rec, ok: true},
		"an earlier mark's record is none":                     {uid: "uid-1", annotations: map[string]string{MarkedAtAnnotation: "2026-12-03T00:00:00Z"}},
		"a value that does not parse is none":                  {uid: "uid-2", annotations: map[string]string{}},
		"no record":                                            {uid: "uid-3", annotations: map[string]string{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, ok := KeptRecordOf(cm, tc.uid, tc.annotations)
			// as JSON: the time reads back in the local zone
			if ok != tc.ok || got.String() != tc.want.String() {
				t.Errorf("KeptRecordOf(%s) = %s, %v; want %s, %v", tc.uid, got, ok, tc.want, tc.ok)
			}
		})
	}
	if all := KeptRecords(cm); len(all) != 1 || all["uid-1"].String() != rec.String() {
		t.Errorf("KeptRecords = %v; want only uid-1's record", all)
	}
}
