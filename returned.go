package liqojanitor

import (
	"fmt"
	"strings"
	"time"
)

// A provider that answers again after its mark (issue 18, design "Non-goals"): the janitor records the
// return first in its cleanup annotation ("provider returned at <RFC 3339>; …") — the one record only its
// identity writes (gate rule 14), so nobody else can start or end a return — and the operator's
// `kubectl liqo-janitor fence` records on the ForeignCluster what it stopped on the provider, in a record
// the gate stamps (gate rule 15): when, by whom, and which recorded return it fences.
const (
	// ReturnedPrefix starts the cleanup annotation once the janitor saw the provider of a marked
	// ForeignCluster answer after the mark: "provider returned at 2026-12-02T01:50:00Z; …".
	ReturnedPrefix = "provider returned at "

	// FencedAnnotation is the operator's record, written by `kubectl liqo-janitor fence` once the
	// consumer's workloads on the returned provider are stopped, and stamped by the gate (FenceRecord):
	// "<RFC 3339> by <user>: <counts>; fences the return at <RFC 3339>". The janitor quotes it in its
	// Fenced event and summary and stops counting the cluster among the returned ones; it never resumes a
	// clean-up because of it.
	FencedAnnotation = AnnotationPrefix + "fenced"
)

// fencesReturnPart ends a stamped fence record: the time of the janitor's recorded return it fences.
const fencesReturnPart = "; fences the return at "

// FenceRecord is the operator's fence record as the gate stamps it (gate rule 15): the gate writes At
// (the request's time), By (the requesting user) and Return (the janitor's recorded return of the current
// mark, ReturnRecordedAt) whatever the request carried, and keeps the request's Counts.
type FenceRecord struct {
	// At is when the gate stamped the record.
	At time.Time
	// By is the user whose request recorded the fence.
	By string
	// Return is the time of the janitor's record of the return this fence stops.
	Return time.Time
	// Counts says what the fence stopped, e.g. "shadowpods 12, pods 12".
	Counts string
}

// String is the record's FencedAnnotation value: "<At> by <By>: <Counts>; fences the return at <Return>"
// (RFC 3339, UTC; At in whole seconds, Return to the fraction the janitor recorded, so that it reads back
// as the very instant of the janitor's record).
func (r FenceRecord) String() string {
	return FencedRecord(r.At, r.By, r.Counts) + fencesReturnPart + r.Return.UTC().Format(time.RFC3339Nano)
}

// FencedRecord is the value `kubectl liqo-janitor fence` sends: when, by whom, and what the fence stopped
// (e.g. "shadowpods 12, pods 12"), without the return it fences. The gate rewrites it into the stamped
// form (FenceRecord.String), keeping only the counts.
func FencedRecord(at time.Time, by, counts string) string {
	return fmt.Sprintf("%s by %s: %s", at.UTC().Format(time.RFC3339), by, counts)
}

// ParseFenced reads a FencedAnnotation value in either spelling (the stamped one, or FencedRecord's
// without the return): the time it was written and the rest without the return it fences ("by <user>:
// <counts>"). It is lenient: ok needs only the leading time.
func ParseFenced(v string) (at time.Time, rest string, ok bool) {
	at, rest, _, ok = splitFenced(v)
	return at, rest, ok
}

// ParseFencedRecord reads a FencedAnnotation value in the stamped form the gate writes: ok only when it
// carries a readable time, a non-empty user ("by <user>: " — the user ends at the first ": ") and the
// return it fences. A record in FencedRecord's spelling (no return) or anything else is not ok: it fences
// no return. Counts may be empty.
func ParseFencedRecord(v string) (FenceRecord, bool) {
	at, rest, ret, ok := splitFenced(v)
	if !ok || ret.IsZero() {
		return FenceRecord{}, false
	}
	named, isBy := strings.CutPrefix(rest, "by ")
	by, counts, found := strings.Cut(named, ": ")
	if !isBy || !found || by == "" {
		return FenceRecord{}, false
	}
	return FenceRecord{At: at, By: by, Return: ret, Counts: counts}, true
}

// splitFenced cuts a FencedAnnotation value into its leading time, the part after it without the return,
// and the return's time (zero when the value names none).
func splitFenced(v string) (at time.Time, rest string, ret time.Time, ok bool) {
	ts, rest, found := strings.Cut(v, " ")
	if !found {
		return time.Time{}, "", time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339, ts)
	if err != nil {
		return time.Time{}, "", time.Time{}, false
	}
	if i := strings.LastIndex(rest, fencesReturnPart); i >= 0 {
		if r, err := time.Parse(time.RFC3339, rest[i+len(fencesReturnPart):]); err == nil {
			return at, rest[:i], r, true
		}
	}
	return at, rest, time.Time{}, true
}

// ReturnRecordedAt is the time of the janitor's record of a return of the current mark in annotations:
// the cleanup annotation starting with ReturnedPrefix and a readable RFC 3339 time, not older than the
// mark's marked-at (whole seconds), since a record older than that belongs to an earlier mark — the same
// reading as the janitor's own (janitor/returned.go recordedReturn).
func ReturnRecordedAt(annotations map[string]string) (time.Time, bool) {
	rec, ok := ParseReturnRecord(annotations[CleanupAnnotation])
	if !ok {
		return time.Time{}, false
	}
	if markedAt, err := time.Parse(time.RFC3339, annotations[MarkedAtAnnotation]); err == nil && rec.At.Before(markedAt.Truncate(time.Second)) {
		return time.Time{}, false
	}
	return rec.At, true
}
