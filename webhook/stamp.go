package webhook

import (
	"strconv"
	"strings"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// The mutating webhook's decision: what it writes and removes on a request that sets or removes the mark,
// or records a fence or released volumes (rules 6, 7, 15, 18 and 32). The validating webhook checks what it
// wrote (checkStamped, checkFenceRecord, checkReleaseRecord).

// fenceRecord is the operator's fence record as the mutating webhook writes it (rule 15): now, by the
// requester, naming the janitor's recorded return, with the counts the request carried (from either
// spelling, "<time> by <user>: <counts>[; fences the return at <time>]"; the whole value if it is neither).
func fenceRecord(value, user string, returned, now time.Time) string {
	counts := value
	if rec, ok := liqojanitor.ParseFenceRecord(value); ok {
		counts = rec.Counts
	}
	return liqojanitor.FenceRecord{At: now, By: user, Return: returned, Counts: counts}.String()
}

// unmarkRemoves are the keys the mutating webhook removes in a request that removes the mark
// (rule 7): the stamps, the confirmation, the no-evidence key, the janitor's record of its grace window and
// of the unpeering, the deletion override (rule 17), the storm's acknowledgement and its stamp (rule 21),
// the record of the targets at marking (rule 23), the fence deadline's override and its stamp (rule 31),
// and the released-volumes record (rule 32: the validating webhook warns of the volumes it names). A
// cleanup annotation holding the grace-window plan goes too; one holding the summary of a clean-up that did
// happen stays.
var unmarkRemoves = []string{liqojanitor.ConfirmAnnotation, liqojanitor.MarkedByAnnotation, liqojanitor.MarkedAtAnnotation,
	liqojanitor.NoEvidenceAnnotation, liqojanitor.FirstSeenAnnotation, liqojanitor.GraceEndsAnnotation,
	liqojanitor.UnpeeringAnnotation, liqojanitor.AllowDeleteAnnotation, liqojanitor.FencedAnnotation,
	liqojanitor.AcknowledgeUnreachableAnnotation, liqojanitor.AcknowledgedByAnnotation, liqojanitor.MarkTargetsAnnotation,
	liqojanitor.OverrideFenceDeadlineAnnotation, liqojanitor.FenceDeadlineOverriddenAnnotation,
	liqojanitor.VolumesReleasedAnnotation}

// stamp is the mutating webhook's decision: on marking it writes marked-by and marked-at, always,
// replacing whatever the request carried (a replayed or hand-written marked-at must never shorten the
// grace period, rule 6) and the stamp of a storm's acknowledgement given with it (rule 21), and on a
// mark by Liqo's uninstaller (rule 18) also the confirmation and a reason when the request carries none,
// and it drops a fence record, the deletion override and a released-volumes record (rules 15, 22 and 32:
// none placed before the mark survives into it); on a marked cluster, a fence record's and a released-volumes
// record's stamps (markedStamps, rules 15 and 32); on unmarking it removes unmarkRemoves, the fence
// record and the released-volumes record among them (rules 7 and 32). It returns the annotations to set and the keys to remove.
func stamp(old, fc *liqov1beta1.ForeignCluster, user string, uninstaller bool, now time.Time) (set map[string]string, remove []string) {
	switch transitionOf(old, fc) {
	case marking:
		return markingStamps(fc, user, uninstaller, now)
	case staysMarked:
		return markedStamps(old, fc, user, now), nil
	case unmarking:
		for _, key := range unmarkRemoves {
			if _, ok := fc.Annotations[key]; ok {
				remove = append(remove, key)
			}
		}
		if strings.HasPrefix(fc.Annotations[liqojanitor.CleanupAnnotation], liqojanitor.GracePlanPrefix) {
			remove = append(remove, liqojanitor.CleanupAnnotation)
		}
		return nil, remove
	default:
		return nil, nil
	}
}

// markedStamps are stamp's decision on a request to a cluster that stays marked: the time, user and
// recorded return of a fence record (rule 15; none recorded: left for the validating webhook to refuse),
// and the time and user of a released-volumes record, its volumes kept (rule 32; one that does not parse:
// left for the validating webhook to refuse).
func markedStamps(old, fc *liqov1beta1.ForeignCluster, user string, now time.Time) map[string]string {
	set := map[string]string{}
	if returned, recorded := liqojanitor.ReturnRecordedAt(old.Annotations); fences(old, fc) && recorded {
		set[liqojanitor.FencedAnnotation] = fenceRecord(fc.Annotations[liqojanitor.FencedAnnotation], user, returned, now)
	}
	if rec, ok := liqojanitor.ParseVolumesReleased(fc.Annotations[liqojanitor.VolumesReleasedAnnotation]); releases(old, fc) && ok {
		set[liqojanitor.VolumesReleasedAnnotation] = releaseRecord(rec, user, now)
	}
	return set
}

// releaseRecord is the released-volumes record as the mutating webhook writes it (rule 32): now (RFC 3339,
// UTC), by the requester, the request's volumes kept.
func releaseRecord(rec liqojanitor.VolumesReleased, user string, now time.Time) string {
	rec.At, rec.By = now.UTC().Format(time.RFC3339), user
	return rec.String()
}

// markingStamps are stamp's decision on the request that sets the mark.
func markingStamps(fc *liqov1beta1.ForeignCluster, user string, uninstaller bool, now time.Time) (set map[string]string, remove []string) {
	set = liqojanitor.MarkStamp{By: user, At: now}.Annotations()
	if uninstaller {
		if _, ok := fc.Annotations[liqojanitor.ConfirmAnnotation]; !ok {
			set[liqojanitor.ConfirmAnnotation] = string(fc.Spec.ClusterID)
		}
		if _, ok := fc.Annotations[liqojanitor.ReasonAnnotation]; !ok {
			set[liqojanitor.ReasonAnnotation] = uninstallerReason(user)
		}
	}
	for _, key := range liqojanitor.OperatorRecordAnnotations {
		if _, ok := fc.Annotations[key]; ok { // rules 15, 22 and 32: none is placed ahead of the mark
			remove = append(remove, key)
		}
	}
	if key, value := ackStamp(fc, user, now); key != "" {
		set[key] = value
	} else if _, ok := fc.Annotations[liqojanitor.AcknowledgedByAnnotation]; ok {
		remove = append(remove, liqojanitor.AcknowledgedByAnnotation)
	}
	// rule 31: the override's stamp is the gate's (gate.Mutate writes it, with the deadline it reads); a
	// request without the override carries none
	if _, ok := fc.Annotations[liqojanitor.FenceDeadlineOverriddenAnnotation]; ok && !overridesDeadline(fc) {
		remove = append(remove, liqojanitor.FenceDeadlineOverriddenAnnotation)
	}
	return set, remove
}

// ackStamp is the stamp of a storm's acknowledgement given with the mark (rule 21): who typed the count,
// when, and the count. An acknowledgement that is not a count gets none (the validating webhook refuses it
// with the right count); without one, a stamp the request carried is removed.
func ackStamp(fc *liqov1beta1.ForeignCluster, user string, now time.Time) (key, value string) {
	count, err := strconv.Atoi(fc.Annotations[liqojanitor.AcknowledgeUnreachableAnnotation])
	if err != nil || count < 0 {
		return "", ""
	}
	return liqojanitor.AcknowledgedByAnnotation, liqojanitor.Acknowledgement{At: now, By: user, Count: count}.String()
}

// uninstallerReason is the reason the gate writes on a mark by Liqo's uninstaller that carries none (rule 18).
func uninstallerReason(user string) string {
	return "marked by Liqo's uninstaller (" + user + ")"
}
