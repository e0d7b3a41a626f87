package view

import (
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

func marked(annotations ...string) *liqov1beta1.ForeignCluster {
	fc := &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: "provider-a", Annotations: map[string]string{
		liqojanitor.MarkAnnotation: liqojanitor.MarkValue,
	}}}
	for i := 0; i+1 < len(annotations); i += 2 {
		fc.Annotations[annotations[i]] = annotations[i+1]
	}
	return fc
}

func TestGraceWindowIsTheOneTheJanitorRecorded(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	markedAt := liqojanitor.MarkStamp{At: now.Add(-10 * time.Second)}.Annotations()[liqojanitor.MarkedAtAnnotation]
	record := func(d time.Duration) string { return liqojanitor.RecordTime(now.Add(d)) } // the janitor's grace-ends-at
	shown := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }     // the time as the plugin shows it
	for name, tc := range map[string]struct {
		fc       *liqov1beta1.ForeignCluster
		says     string
		left     time.Duration
		over     bool
		recorded bool
	}{
		"the janitor has recorded nothing yet, the gate stamped the mark": {
			fc:   marked(liqojanitor.MarkedAtAnnotation, markedAt),
			says: "waiting for the janitor to record its grace window; it lasts at least until " + markedAt + " + the janitor's --grace-period",
		},
		"the janitor has recorded nothing yet, no stamp": {
			fc: marked(), says: "waiting for the janitor to record its grace window",
		},
		"the janitor's window runs: what is left of it, not of an assumed 30s": {
			fc:   marked(liqojanitor.MarkedAtAnnotation, markedAt, liqojanitor.GraceEndsAnnotation, record(42*time.Minute)),
			says: "42m0s left (the janitor's ends at " + shown(42*time.Minute) + ")", left: 42 * time.Minute, recorded: true,
		},
		"the janitor's window is over, though the mark is younger than 30s": {
			fc:   marked(liqojanitor.MarkedAtAnnotation, markedAt, liqojanitor.GraceEndsAnnotation, record(-time.Second)),
			says: "grace period over (the janitor's ended at " + shown(-time.Second) + ")", over: true, recorded: true,
		},
		"an unreadable record is no record": {
			fc:   marked(liqojanitor.GraceEndsAnnotation, "soon\x1b[2J"),
			says: `waiting for the janitor to record its grace window (liqo-janitor.io/grace-ends-at "soon\x1b[2J" is not an RFC 3339 time)`,
		},
		"a record older than the mark is an earlier mark's": {
			fc: marked(liqojanitor.MarkedAtAnnotation, markedAt, liqojanitor.GraceEndsAnnotation, record(-time.Hour)),
			says: "waiting for the janitor to record its grace window (liqo-janitor.io/grace-ends-at " + record(-time.Hour) +
				" is before the mark (marked-at " + markedAt + "): it is not this mark's); it lasts at least until " + markedAt +
				" + the janitor's --grace-period",
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			w := GraceOf(tc.fc, now)
			g.Expect(w.String()).To(Equal(tc.says))
			g.Expect(w.Left).To(Equal(Duration(tc.left)))
			g.Expect(w.Over).To(Equal(tc.over))
			g.Expect(w.EndsAt != nil).To(Equal(tc.recorded))
		})
	}
}
