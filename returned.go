package liqojanitor

import (
	"fmt"
	"strings"
	"time"
)

// A provider that answers again after its mark (issue 18, design "Non-goals"): the janitor records the
// return first in its cleanup annotation ("provider returned at <RFC 3339>; …") — the one record only its
// identity writes (gate rule 14), so nobody else can start or end a return — and the operator's
// `kubectl liqo-janitor fence` records on the ForeignCluster what it stopped on the provider.
const (
	// ReturnedPrefix starts the cleanup annotation once the janitor saw the provider of a marked
	// ForeignCluster answer after the mark: "provider returned at 2026-12-02T01:50:00Z; …".
	ReturnedPrefix = "provider returned at "

	// FencedAnnotation is the operator's record, written by `kubectl liqo-janitor fence` once the
	// consumer's workloads on the returned provider are stopped: "<RFC 3339> by <user>: <counts>"
	// (FencedRecord). The janitor quotes it in its Fenced event and summary and stops counting the cluster
	// among the returned ones; it never resumes a clean-up because of it.
	FencedAnnotation = AnnotationPrefix + "fenced"
)

// FencedRecord is the value of FencedAnnotation: when, by whom, and what the fence stopped (e.g.
// "shadowpods 12, pods 12").
func FencedRecord(at time.Time, by, counts string) string {
	return fmt.Sprintf("%s by %s: %s", at.UTC().Format(time.RFC3339), by, counts)
}

// ParseFenced reads a FencedAnnotation value: the time it was written and the rest ("by <user>: <counts>").
func ParseFenced(v string) (at time.Time, rest string, ok bool) {
	ts, rest, found := strings.Cut(v, " ")
	if !found {
		return time.Time{}, "", false
	}
	at, err := time.Parse(time.RFC3339, ts)
	if err != nil {
		return time.Time{}, "", false
	}
	return at, rest, true
}
