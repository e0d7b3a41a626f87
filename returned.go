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

// FenceRecord is the operator's fence record (FencedAnnotation). `kubectl liqo-janitor fence` sends At,
// By and Counts; the gate stamps it (gate rule 15): it writes At (the request's time), By (the requesting
// user) and Return (the janitor's recorded return of the current mark, ReturnRecordedAt) whatever the
// request carried, and keeps the request's Counts. Only a stamped record fences a return (Stamped).
type FenceRecord struct {
	// At is when the record was written (stamped: when the gate stamped it).
	At time.Time
	// By is the user whose request recorded the fence.
	By string
	// Return is the time of the janitor's record of the return this fence stops; zero in the plugin's
	// request, before the gate stamps it.
	Return time.Time
	// Counts says what the fence stopped, e.g. "shadowpods 12, pods 12".
	Counts string
}

// String is the record's FencedAnnotation value: "<At> by <By>: <Counts>", and "; fences the return at
// <Return>" once stamped (RFC 3339, UTC; At in whole seconds, Return to the fraction the janitor recorded,
// so that it reads back as the very instant of the janitor's record).
func (r FenceRecord) String() string {
	s := fmt.Sprintf("%s by %s: %s", r.At.UTC().Format(time.RFC3339), r.By, r.Counts)
	if r.Return.IsZero() {
		return s
	}
	return s + fencesReturnPart + r.Return.UTC().Format(time.RFC3339Nano)
}

// Stamped reports whether the record is in the form the gate stamps: it names its user and the return it
// fences. Any other record fences no return.
func (r FenceRecord) Stamped() bool { return r.By != "" && !r.Return.IsZero() }

// Fences reports whether the record fences the return recorded at returnAt: stamped, naming exactly that
// return, and stamped no earlier than it (a record older than the return cannot stop its copies). The gate
// (rule 30) and the janitor (rule 10) read a fence so.
func (r FenceRecord) Fences(returnAt time.Time) bool {
	return r.Stamped() && !returnAt.IsZero() && r.Return.Equal(returnAt) && !r.At.Before(returnAt.Truncate(time.Second))
}

// ParseFenceRecord reads a FencedAnnotation value in either form: ok when it carries a readable time and
// "by <user>: " (the user ends at the first ": "; it may be empty, which no stamped record is), Counts
// after it. Return is the return it fences when the last part names a readable time, zero otherwise (an
// unreadable one is part of the counts).
func ParseFenceRecord(v string) (FenceRecord, bool) {
	ts, rest, found := strings.Cut(v, " ")
	if !found {
		return FenceRecord{}, false
	}
	at, err := time.Parse(time.RFC3339, ts)
	if err != nil {
		return FenceRecord{}, false
	}
	var ret time.Time
	if i := strings.LastIndex(rest, fencesReturnPart); i >= 0 {
		if r, err := time.Parse(time.RFC3339, rest[i+len(fencesReturnPart):]); err == nil {
			rest, ret = rest[:i], r
		}
	}
	named, isBy := strings.CutPrefix(rest, "by ")
	by, counts, found := strings.Cut(named, ": ")
	if !isBy || !found {
		return FenceRecord{}, false
	}
	return FenceRecord{At: at, By: by, Return: ret, Counts: counts}, true
}

// ReturnRecordedAt is the time of the janitor's record of a return of the current mark in annotations:
// the cleanup annotation starting with ReturnedPrefix and a readable RFC 3339 time, not older than the
// mark's marked-at (whole seconds), since a record older than that belongs to an earlier mark — the same
// reading as the janitor's own (janitor/return_seen.go recordedReturn).
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
