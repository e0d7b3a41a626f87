package liqojanitor

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The formats of the janitor's annotations, written and read here only: the janitor writes them, the gate
// and the chart's policy match their prefixes (GracePlanPrefix, ReturnedPrefix), the plugin shows them.
// Each is a typed value with one String and one Parse; a change of spelling is a change here, tested by
// records_test.go, and every reader follows at compile time. The fence record (FenceRecord, returned.go)
// and the unpeering record (Unpeering, unpeering.go) are the others.

// RecordTime formats t for the janitor's time records (first-seen-at, grace-ends-at, the time of a
// return): RFC 3339 in UTC with milliseconds, rounded up to the millisecond, so that a recorded first sight
// is never earlier than the real one (the grace window it starts is never shorter).
func RecordTime(t time.Time) string {
	if r := t.Truncate(time.Millisecond); !r.Equal(t) {
		t = r.Add(time.Millisecond)
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// ErrNoRecord is MarkTimeRecord's error when the annotation is absent.
var ErrNoRecord = errors.New("no record")

// MarkTimeRecord reads one of the janitor's time records of the current mark in annotations (key
// FirstSeenAnnotation or GraceEndsAnnotation). A record older than the gate's marked-at stamp belongs to an
// earlier mark (the gate removes the records with the mark; without the gate they may stay) and is not
// one. The error says why there is none: ErrNoRecord, not an RFC 3339 time, or before the mark.
func MarkTimeRecord(annotations map[string]string, key string) (time.Time, error) {
	raw, ok := annotations[key]
	if !ok {
		return time.Time{}, ErrNoRecord
	}
	at, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q is not an RFC 3339 time", key, raw)
	}
	if markedAt, err := time.Parse(time.RFC3339, annotations[MarkedAtAnnotation]); err == nil && at.Before(markedAt) {
		return time.Time{}, fmt.Errorf("%s %s is before the mark (marked-at %s): it is not this mark's",
			key, raw, markedAt.UTC().Format(time.RFC3339))
	}
	return at, nil
}

// MarkStamp is the gate's stamps of a mark: who marked the ForeignCluster (marked-by) and when (marked-at).
// Either may be missing on a mark made past the gate.
type MarkStamp struct {
	By string
	At time.Time
}

// MarkStampOf reads the gate's stamps in annotations; a marked-at that is not RFC 3339 reads as missing.
func MarkStampOf(annotations map[string]string) MarkStamp {
	at, _ := time.Parse(time.RFC3339, annotations[MarkedAtAnnotation])
	return MarkStamp{By: annotations[MarkedByAnnotation], At: at}
}

// Annotations are the stamps as the gate writes them: marked-by, and marked-at in RFC 3339 (UTC, whole
// seconds).
func (m MarkStamp) Annotations() map[string]string {
	return map[string]string{MarkedByAnnotation: m.By, MarkedAtAnnotation: m.At.UTC().Format(time.RFC3339)}
}

// Describe says who marked the cluster and when, for a person: "alice at 2026-12-02T01:00:00Z". A missing
// stamp says so, with the janitor's first sight of the mark when it has one: "an unknown user (no
// marked-by stamp) at an unknown time (no marked-at stamp), first seen by the janitor at …".
func (m MarkStamp) Describe(firstSeen time.Time) string {
	by := m.By
	if by == "" {
		by = "an unknown user (no marked-by stamp)"
	}
	if !m.At.IsZero() {
		return by + " at " + m.At.UTC().Format(time.RFC3339)
	}
	s := by + " at an unknown time (no marked-at stamp)"
	if !firstSeen.IsZero() {
		s += ", first seen by the janitor at " + RecordTime(firstSeen)
	}
	return s
}

// GracePlan is the cleanup annotation while a confirmed mark waits out the grace period: what the clean-up
// would release, and the time left when the janitor wrote it ("grace 22s left: would release pods 400,
// resourceslices 3; blocked 1"). The janitor writes it once per change of the plan: read later, Left is
// stale.
type GracePlan struct {
	Left time.Duration
	Plan string
}

// gracePlanLeft separates a grace plan's countdown from the plan.
const gracePlanLeft = " left: "

// String is the plan's cleanup annotation, Left rounded to the second.
func (p GracePlan) String() string {
	return GracePlanPrefix + p.Left.Round(time.Second).String() + gracePlanLeft + p.Plan
}

// ParseGracePlan reads a cleanup annotation written by GracePlan.String.
func ParseGracePlan(v string) (GracePlan, bool) {
	rest, ok := strings.CutPrefix(v, GracePlanPrefix)
	if !ok {
		return GracePlan{}, false
	}
	left, plan, ok := strings.Cut(rest, gracePlanLeft)
	if !ok {
		return GracePlan{}, false
	}
	d, err := time.ParseDuration(left)
	if err != nil || d < 0 {
		return GracePlan{}, false
	}
	return GracePlan{Left: d, Plan: plan}, true
}

// Progress is a clean-up's record, the cleanup annotation while the janitor releases (janitor rule 8):
// per kind what it released and what is still there, then what stays and why: "pods 118/120,
// resourceslices 3/3, blocked 2, waiting for Liqo: app, waiting for admission webhook x".
type Progress struct {
	// Kinds in the order written; a kind with Total 0 is not written.
	Kinds []KindProgress
	// Blocked is how many objects stay because of finalizers liqo-janitor does not own.
	Blocked int
	// WaitingForLiqo lists the namespaces whose NamespaceOffloading waits for Liqo, as written ("a, b and 2
	// more"); WaitingForWebhooks the admission webhooks that refused the janitor's writes.
	WaitingForLiqo, WaitingForWebhooks string
	// DryRun: what a dry run would release (an event's text; never written as a record).
	DryRun bool
}

// KindProgress is one kind's progress: Done objects released and gone out of Total.
type KindProgress struct {
	// Kind is the Kubernetes kind ("Pod"); the record spells it lower-case and plural ("pods").
	Kind        string
	Done, Total int
}

// The parts of a Progress after the counts, and its words.
const (
	progressNothing  = "nothing to release"
	progressBlocked  = "blocked "
	progressLiqo     = "waiting for Liqo: "
	progressWebhooks = "waiting for admission webhook "
	progressDryRun   = "dry run: would release "
	progressSep      = ", "
)

// String is the progress as the cleanup annotation spells it.
func (p Progress) String() string {
	var parts []string
	for _, k := range p.Kinds {
		if k.Total > 0 {
			parts = append(parts, fmt.Sprintf("%ss %d/%d", strings.ToLower(k.Kind), k.Done, k.Total))
		}
	}
	if p.Blocked > 0 {
		parts = append(parts, progressBlocked+strconv.Itoa(p.Blocked))
	}
	if p.WaitingForLiqo != "" {
		parts = append(parts, progressLiqo+p.WaitingForLiqo)
	}
	if len(parts) == 0 {
		parts = append(parts, progressNothing)
	}
	if p.WaitingForWebhooks != "" {
		parts = append(parts, progressWebhooks+p.WaitingForWebhooks)
	}
	s := strings.Join(parts, progressSep)
	if p.DryRun {
		return progressDryRun + s
	}
	return s
}

// ParseProgress reads a cleanup annotation written by Progress.String, the kinds named as in kinds (the
// janitor's; a kind it does not know makes the value no progress). A grace plan, a return's record or
// anything else is not ok.
func ParseProgress(v string, kinds []string) (Progress, bool) {
	var p Progress
	v, p.DryRun = strings.CutPrefix(v, progressDryRun)
	if i := strings.Index(v, progressWebhooks); i >= 0 {
		p.WaitingForWebhooks = v[i+len(progressWebhooks):]
		v = strings.TrimSuffix(v[:i], progressSep)
	}
	if i := strings.Index(v, progressLiqo); i >= 0 {
		p.WaitingForLiqo = v[i+len(progressLiqo):]
		v = strings.TrimSuffix(v[:i], progressSep)
	}
	if v == progressNothing || (v == "" && p.WaitingForLiqo != "") {
		return p, true
	}
	for part := range strings.SplitSeq(v, progressSep) {
		if n, ok := strings.CutPrefix(part, progressBlocked); ok {
			b, err := strconv.Atoi(n)
			if err != nil || b < 0 {
				return Progress{}, false
			}
			p.Blocked = b
			continue
		}
		k, ok := parseKindProgress(part, kinds)
		if !ok {
			return Progress{}, false
		}
		p.Kinds = append(p.Kinds, k)
	}
	return p, true
}

// parseKindProgress reads "<kind>s <done>/<total>", done ≤ total.
func parseKindProgress(part string, kinds []string) (KindProgress, bool) {
	word, counts, ok := strings.Cut(part, " ")
	if !ok {
		return KindProgress{}, false
	}
	d, t, ok := strings.Cut(counts, "/")
	done, err1 := strconv.Atoi(d)
	total, err2 := strconv.Atoi(t)
	if !ok || err1 != nil || err2 != nil || done < 0 || done > total {
		return KindProgress{}, false
	}
	for _, kind := range kinds {
		if strings.ToLower(kind)+"s" == word {
			return KindProgress{Kind: kind, Done: done, Total: total}, true
		}
	}
	return KindProgress{}, false
}

// Of is the progress of kind, zero if the record does not name it.
func (p Progress) Of(kind string) KindProgress {
	for _, k := range p.Kinds {
		if k.Kind == kind {
			return k
		}
	}
	return KindProgress{Kind: kind}
}

// ReturnRecord is the cleanup annotation once the janitor saw the provider of a marked ForeignCluster
// answer after the mark (janitor rule 10): the return first, then who marked it and when, how many pods
// the janitor had force-deleted, the clean-up's record as it was, and last what comes next — the fence
// command, or the operator's fence record once it is there: "provider returned at <time> (<how>); marked
// dead by <who> at <when>; pods force-deleted by the janitor: 3; before: pods 3/3; next: kubectl …".
type ReturnRecord struct {
	// At is when the janitor saw the provider answer (RecordTime's precision); How what showed it.
	At  time.Time
	How string
	// Marked says who marked the cluster and when (MarkStamp.Describe).
	Marked string
	// PodsForceDeleted is how many pods the janitor's record says it force-deleted.
	PodsForceDeleted int
	// Before is the clean-up's record when the return was seen, "" when none had begun.
	Before string
	// Next is the operator's next step; Fenced the fence record's "by <user>: <counts>" once there, which
	// replaces it.
	Next, Fenced string
}

// The parts of a ReturnRecord after its first.
const (
	returnMarkedPart = "; marked dead by "
	returnPodsPart   = "; pods force-deleted by the janitor: "
	returnBeforePart = "; before: "
	returnNextPart   = "; next: "
	returnFencedPart = "; fenced "
)

// String is the record as the cleanup annotation spells it.
func (r ReturnRecord) String() string {
	s := fmt.Sprintf("%s%s (%s)%s%s%s%d", ReturnedPrefix, RecordTime(r.At), r.How, returnMarkedPart, r.Marked,
		returnPodsPart, r.PodsForceDeleted)
	if r.Before != "" {
		s += returnBeforePart + r.Before
	}
	if r.Fenced != "" {
		return s + returnFencedPart + r.Fenced
	}
	return s + returnNextPart + r.Next
}

// ParseReturnRecord reads a cleanup annotation that starts with ReturnedPrefix and a readable time. It is
// lenient after the time (ok needs only that): the rest is read part by part as far as it goes.
func ParseReturnRecord(v string) (ReturnRecord, bool) {
	rest, ok := strings.CutPrefix(v, ReturnedPrefix)
	if !ok {
		return ReturnRecord{}, false
	}
	ts, rest, _ := strings.Cut(rest, " ")
	at, err := time.Parse(time.RFC3339, ts)
	if err != nil {
		return ReturnRecord{}, false
	}
	r := ReturnRecord{At: at}
	if strings.HasPrefix(rest, "(") {
		// How may hold parentheses itself: it ends where the next part begins.
		end := strings.Index(rest, ")"+returnMarkedPart)
		if end < 0 {
			end = strings.LastIndex(rest, ")")
		}
		if end > 0 {
			r.How, rest = rest[1:end], rest[end+1:]
		}
	}
	rest, r.Fenced, _ = strings.Cut(rest, returnFencedPart)
	rest, r.Next, _ = strings.Cut(rest, returnNextPart)
	rest, r.Before, _ = strings.Cut(rest, returnBeforePart)
	rest, pods, found := strings.Cut(rest, returnPodsPart)
	if found {
		r.PodsForceDeleted, _ = strconv.Atoi(pods)
	}
	_, r.Marked, _ = strings.Cut(rest, returnMarkedPart)
	return r, true
}

// Acknowledgement is the gate's stamp of a storm's acknowledgement (AcknowledgedByAnnotation, gate rule
// 21): the requester who set the mark with AcknowledgeUnreachableAnnotation, when, and the count typed.
type Acknowledgement struct {
	// At is when the gate stamped it (the marking request's time, whole seconds).
	At time.Time
	// By is the user whose marking request carried the acknowledgement.
	By string
	// Count is the number of unreachable providers acknowledged.
	Count int
}

// acknowledgedPart ends an acknowledgement stamp, after the count.
const acknowledgedPart = " unreachable acknowledged"

// String is the stamp's AcknowledgedByAnnotation value: "<At> by <By>: <Count> unreachable acknowledged"
// (RFC 3339, UTC, whole seconds).
func (a Acknowledgement) String() string {
	return fmt.Sprintf("%s by %s: %d%s", a.At.UTC().Format(time.RFC3339), a.By, a.Count, acknowledgedPart)
}

// ParseAcknowledgement reads an AcknowledgedByAnnotation value written by Acknowledgement.String: ok when
// it carries a readable time, a non-empty user (it ends at the last ": ") and a non-negative count.
func ParseAcknowledgement(v string) (Acknowledgement, bool) {
	ts, rest, found := strings.Cut(v, " by ")
	if !found {
		return Acknowledgement{}, false
	}
	at, err := time.Parse(time.RFC3339, ts)
	if err != nil {
		return Acknowledgement{}, false
	}
	rest, found = strings.CutSuffix(rest, acknowledgedPart)
	i := strings.LastIndex(rest, ": ")
	if !found || i <= 0 {
		return Acknowledgement{}, false
	}
	count, err := strconv.Atoi(rest[i+2:])
	if err != nil || count < 0 || strconv.Itoa(count) != rest[i+2:] {
		return Acknowledgement{}, false
	}
	return Acknowledgement{At: at, By: rest[:i], Count: count}, true
}
