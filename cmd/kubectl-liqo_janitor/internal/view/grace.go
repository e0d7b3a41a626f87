package view

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// GraceWindow is the janitor's grace period for a ForeignCluster's current mark, as the janitor itself
// recorded it in liqo-janitor.io/grace-ends-at. The plugin never assumes a grace period: only the janitor
// knows its --grace-period and when it first saw the mark.
type GraceWindow struct {
	// EndsAt is the janitor's record; nil while it has written none for this mark.
	EndsAt *metav1.Time `json:"endsAt,omitempty"`
	// Left is EndsAt − now, while that is positive ("59m58s").
	Left Duration `json:"left,omitempty"`
	// Over: EndsAt has passed.
	Over bool `json:"over,omitempty"`
	// MarkedAt is the gate's stamp: the window ends no sooner than MarkedAt + the janitor's --grace-period.
	MarkedAt *metav1.Time `json:"markedAt,omitempty"`
	// Ignored says why a grace-ends-at on the ForeignCluster is not the janitor's record for this mark.
	Ignored string `json:"ignored,omitempty"`
}

// GraceOf reads fc's grace window at now.
func GraceOf(fc *liqov1beta1.ForeignCluster, now time.Time) GraceWindow {
	var g GraceWindow
	markedAt, stamped := liqojanitor.MarkedAt(fc)
	if stamped {
		g.MarkedAt = &metav1.Time{Time: markedAt.UTC()}
	}
	ends, err := liqojanitor.MarkTimeRecord(fc.Annotations, liqojanitor.GraceEndsAnnotation)
	switch {
	case errors.Is(err, liqojanitor.ErrNoRecord):
	case err != nil:
		g.Ignored = err.Error()
	default:
		g.EndsAt = &metav1.Time{Time: ends.UTC()}
		g.Left = Duration(max(ends.Sub(now), 0))
		g.Over = g.Left == 0
	}
	return g
}

// String says where the window stands, for a person.
func (g GraceWindow) String() string {
	switch {
	case g.EndsAt != nil && g.Over:
		return fmt.Sprintf("grace period over (the janitor's ended at %s)", g.EndsAt.UTC().Format(time.RFC3339))
	case g.EndsAt != nil:
		return fmt.Sprintf("%s left (the janitor's ends at %s)", time.Duration(g.Left).Round(time.Second), g.EndsAt.UTC().Format(time.RFC3339))
	}
	s := "waiting for the janitor to record its grace window"
	if g.Ignored != "" {
		s += " (" + output.Printable(g.Ignored) + ")"
	}
	if g.MarkedAt != nil {
		s += fmt.Sprintf("; it lasts at least until %s + the janitor's --grace-period", g.MarkedAt.UTC().Format(time.RFC3339))
	}
	return s
}

// Duration is a time.Duration that a document carries as Go writes it, to the second ("1h2m3s"), as
// Kubernetes' own documents carry durations (metav1.Duration), rather than as nanoseconds.
type Duration time.Duration

// MarshalJSON writes d rounded to the second.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).Round(time.Second).String())
}

// UnmarshalJSON reads what MarshalJSON writes.
func (d *Duration) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	parsed, err := time.ParseDuration(s)
	*d = Duration(parsed)
	return err
}
