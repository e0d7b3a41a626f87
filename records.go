package liqojanitor

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
)

// The formats of the janitor's annotations, written and read here only: the janitor writes them, the gate
// and the chart's policy match their prefixes (GracePlanPrefix, ReturnedPrefix), the plugin shows them.
// Each is a typed value with one String and one Parse; a change of spelling is a change here, tested by
// records_test.go, and every reader follows at compile time. The unpeering record (Unpeering) is in
// records_unpeering.go, the janitor's ConfigMap records in records_store.go, the provider fence's in
// fence*.go.

// RecordTime formats t for the janitor's time records (first-seen-at, grace-ends-at, the time of a
// return): RFC 3339 in UTC with milliseconds, rounded up to the millisecond, so that a recorded first sight
// is never earlier than the real one (the grace window it starts is never shorter).
func RecordTime(t time.Time) string {
	if r := t.Truncate(time.Millisecond); !r.Equal(t) {
		t = r.Add(time.Millisecond)
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// GracePlanPrefix starts the cleanup annotation while a confirmed mark waits out the grace period and the
// annotation shows the plan ("grace 22s left: would release …"); the gate removes such a plan with the mark.
const GracePlanPrefix = "grace "

// ReturnedPrefix starts the cleanup annotation once the janitor saw the provider of a marked ForeignCluster
// answer after the mark: "provider returned at 2026-12-02T01:50:00Z; …" (ReturnRecord).
const ReturnedPrefix = "provider returned at "

// EndedMarkPrefix starts a cleanup annotation whose record belongs to a mark that was removed while the
// gate was down (janitor rule 15): the janitor keeps an earlier mark's return record as history under it,
// EndedMarkPrefix + the record, which no reader takes for a current return (ParseReturnRecord does not).
const EndedMarkPrefix = "ended with its mark: "

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

// A provider that answers again after its mark (issue 18, design "Non-goals"): the janitor records the
// return first in its cleanup annotation ("provider returned at <RFC 3339>; …") — the one record only its
// identity writes (gate rule 14), so nobody else can start or end a return — and the operator's
// `kubectl liqo-janitor fence` records on the ForeignCluster what it stopped on the provider, in a record
// the gate stamps (gate rule 15): when, by whom, and which recorded return it fences
// (FencedAnnotation, keys.go).

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
// (gate rule 30) and the janitor (janitor rule 10) read a fence so.
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

// Return is the janitor's record of a provider that answered again after the current mark, as the plugin
// shows it.
type Return struct {
	// At is when the janitor saw the provider answer; How what showed it.
	At  time.Time
	How string
	// Fenced is the operator's fence record of this return ("by <user>: <counts>"), empty until then.
	Fenced string
}

// RecordedReturn reads the janitor's record of a return of fc's current mark (its cleanup annotation,
// which only the janitor's identity writes: gate rule 14, ReturnRecordedAt) and the operator's fence of it
// as of now (FencedBy); false when fc carries no mark.
func RecordedReturn(fc *liqov1beta1.ForeignCluster, now time.Time) (Return, bool) {
	at, ok := ReturnRecordedAt(fc.Annotations)
	if !ok || !IsMarked(fc.Annotations) {
		return Return{}, false
	}
	rec, _ := ParseReturnRecord(fc.Annotations[CleanupAnnotation])
	f, _ := FencedBy(fc.Annotations, at, now)
	return Return{At: at, How: rec.How, Fenced: f}, true
}

// FenceStampSkew is how far ahead of the reader's clock the gate's stamp of a fence record (another
// replica's clock) may be.
const FenceStampSkew = 5 * time.Second

// FencedBy reads the operator's fence record (FencedAnnotation) of the return recorded at returnAt: "by
// <user>: <counts>", when the gate stamped it for this very return (gate rule 15: FenceRecord names the
// janitor's recorded return, to the millisecond it wrote), at or after the return and not after now (beyond
// FenceStampSkew). A record of another return, of the plugin's unstamped spelling (written past the gate),
// stamped before the return or in the future does not count: the return stays unfenced, and its alert on.
func FencedBy(annotations map[string]string, returnAt, now time.Time) (string, bool) {
	rec, ok := ParseFenceRecord(annotations[FencedAnnotation])
	if !ok || !rec.Fences(returnAt) || rec.At.After(now.Add(FenceStampSkew)) {
		return "", false
	}
	return "by " + rec.By + ": " + rec.Counts, true
}

// The gate's record of where the provider was when it admitted the mark (gate rule 23): the
// liqo-janitor.io/mark-targets annotation, written by the gate's mutating webhook into the request that
// sets the mark, immutable while marked, removed with the mark. When the janitor first sees a mark after
// Liqo cleared the status (liqoctl force unpeer deletes the tenant namespace, and with it the Identity;
// Liqo's status rebuild drops apiServerUrl and foreignProxyUrl), it falls back to these targets.

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

// Released volumes (gate rule 32): `kubectl liqo-janitor release-volumes` deletes a pinned PVC only with the
// operator's typed data-loss confirmation, and records on the ForeignCluster which remote PVCs' data it
// abandoned, in VolumesReleasedAnnotation. Only the mutating webhook writes its time and user; the gate
// refuses it on an unmarked cluster, without the break-glass verb, or when it forgets a volume it listed;
// unmarking drops it with a warning. The janitor keeps a copy by cluster ID in ReleasedVolumesConfigMap in
// its namespace (the ForeignCluster may be deleted), from which the gate warns when the cluster is peered
// again: the new virtual kubelet for that provider deletes each remote PVC it reflected (labels
// offloading.liqo.io/origin and destination) that has no local claim of its name, once its namespace is
// offloaded there again (pkg/virtualKubelet/reflection/storage/persistentvolumeclaim.go Handle, v1.0.3 to
// v1.2.0).

// ReleasedVolume is one PVC released by the operator: the local claim (namespace/name, UID) and the remote
// claim on the provider holding its data (namespace/name; "" when unknown).
type ReleasedVolume struct {
	PVC    string `json:"pvc"`
	UID    string `json:"uid"`
	Remote string `json:"remote,omitempty"`
}

// VolumesReleased is the record in VolumesReleasedAnnotation (JSON): the volumes released under the current
// mark, the last release's time (RFC 3339, UTC) and user as the mutating webhook stamped them.
type VolumesReleased struct {
	At      string           `json:"at"`
	By      string           `json:"by"`
	Volumes []ReleasedVolume `json:"volumes"`
}

// ParseVolumesReleased reads a VolumesReleasedAnnotation value; ok only for a record naming a volume.
func ParseVolumesReleased(v string) (VolumesReleased, bool) {
	var r VolumesReleased
	if json.Unmarshal([]byte(v), &r) != nil || len(r.Volumes) == 0 {
		return VolumesReleased{}, false
	}
	return r, true
}

// String is the record as the annotation holds it.
func (r VolumesReleased) String() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// Remote are the remote PVCs whose data was released, as "namespace/name" (the local claim's when the
// remote one is unknown).
func (r VolumesReleased) Remote() []string {
	out := make([]string, 0, len(r.Volumes))
	for _, v := range r.Volumes {
		out = append(out, cmp.Or(v.Remote, v.PVC+" (remote namespace unknown)"))
	}
	return out
}

// RepeerWarning is the gate's warning on unmarking, or peering again, a cluster with released volumes.
func (r VolumesReleased) RepeerWarning(clusterID string) string {
	n := len(r.Volumes)
	return fmt.Sprintf("re-peering lets %s's virtual kubelet delete %d remote PVC%s whose data you released (%s)",
		clusterID, n, plural(n), strings.Join(r.Remote(), ", "))
}

// StampedAt is the record's time, ok when it carries a readable time (RFC 3339) and a user: the form the
// mutating webhook writes (gate rule 32).
func (r VolumesReleased) StampedAt() (time.Time, bool) {
	at, err := time.Parse(time.RFC3339, r.At)
	return at, err == nil && r.By != ""
}

// Dropped are the volumes of old that r no longer lists, by UID: what a change of the record would forget
// (gate rule 32 refuses it).
func (r VolumesReleased) Dropped(old VolumesReleased) []ReleasedVolume {
	kept := make(map[string]bool, len(r.Volumes))
	for _, v := range r.Volumes {
		kept[v.UID] = true
	}
	var out []ReleasedVolume
	for _, v := range old.Volumes {
		if !kept[v.UID] {
			out = append(out, v)
		}
	}
	return out
}

// Merge is r with every volume of in it lacks (by UID) appended, never dropping one, and in's time and user
// when it added any; added says whether it did.
func (r VolumesReleased) Merge(in VolumesReleased) (merged VolumesReleased, added bool) {
	merged = VolumesReleased{At: r.At, By: r.By, Volumes: slices.Clone(r.Volumes)}
	for _, v := range in.Volumes {
		if !slices.ContainsFunc(merged.Volumes, func(m ReleasedVolume) bool { return m.UID == v.UID }) {
			merged.Volumes, added = append(merged.Volumes, v), true
		}
	}
	if added {
		merged.At, merged.By = in.At, in.By
	}
	return merged, added
}
