package liqojanitor

import (
	"encoding/json"
	"time"
)

// The gate's record of where the provider was when it admitted the mark (gate rule 23): the
// liqo-janitor.io/mark-targets annotation, written by the gate's mutating webhook into the request that
// sets the mark, immutable while marked, removed with the mark. When the janitor first sees a mark after
// Liqo cleared the status (liqoctl force unpeer deletes the tenant namespace, and with it the Identity;
// Liqo's status rebuild drops apiServerUrl and foreignProxyUrl), it falls back to these targets.

// MarkTargetsAnnotation is the gate's record of the provider's probe targets at marking.
const MarkTargetsAnnotation = AnnotationPrefix + "mark-targets"

// MarkTargets is where the provider's API server was, as Liqo knew it when the gate admitted the mark:
// the Targets ProviderTargets gathers, where they came from (for a person: the status alone, or the status
// and the control-plane Identity, or why the Identity could not be read), and when.
type MarkTargets struct {
	Targets Targets   `json:"targets"`
	From    string    `json:"from"`
	At      time.Time `json:"at"`
}

// String is the record as the annotation holds it: compact JSON, At in UTC to the second.
func (m MarkTargets) String() string {
	m.At = m.At.UTC().Truncate(time.Second)
	b, _ := json.Marshal(m) // a struct of strings, bytes and a time: it always marshals
	return string(b)
}

// ParseMarkTargets reads a record written by MarkTargets.String; anything else is not one.
func ParseMarkTargets(v string) (MarkTargets, bool) {
	var m MarkTargets
	if json.Unmarshal([]byte(v), &m) != nil || m.At.IsZero() || m.From == "" {
		return MarkTargets{}, false
	}
	return m, true
}
