package webhook

import (
	"strconv"
	"strings"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// The checks of the rules, one or more per rule of the package documentation: each a pure function of the
// inputs that returns the field errors of a refusal, none when the rule holds (the break-glass check,
// which also makes the refusal a 403, adds its errors to the verdict itself), and the helpers they share.

// The field paths that name the cause of a refusal.
var (
	annotationsPath = field.NewPath("metadata", "annotations")
	markPath        = annotationsPath.Key(liqojanitor.MarkAnnotation)
	confirmPath     = annotationsPath.Key(liqojanitor.ConfirmAnnotation)
	clusterIDPath   = field.NewPath("spec", "clusterID")
	conditionsPath  = field.NewPath("status", "conditions")
	labelsPath      = field.NewPath("metadata", "labels")
	noEvidencePath  = annotationsPath.Key(liqojanitor.NoEvidenceAnnotation)
	overridePath    = annotationsPath.Key(liqojanitor.AllowDeleteAnnotation)
	fencedPath      = annotationsPath.Key(liqojanitor.FencedAnnotation)
	tunnelPath      = field.NewPath("status", "modules", "networking", "conditions")
	ackPath         = annotationsPath.Key(liqojanitor.AcknowledgeUnreachableAnnotation)
	ackedByPath     = annotationsPath.Key(liqojanitor.AcknowledgedByAnnotation)
	deadlinePath    = annotationsPath.Key(liqojanitor.OverrideFenceDeadlineAnnotation)
	overriddenPath  = annotationsPath.Key(liqojanitor.FenceDeadlineOverriddenAnnotation)
	releasedPath    = annotationsPath.Key(liqojanitor.VolumesReleasedAnnotation)
)

// checkMarkValue: the mark's value must be exactly "true" (rule 2), whenever a request sets or changes it.
func checkMarkValue(r *inputs) field.ErrorList {
	value, ok := r.New.Annotations[liqojanitor.MarkAnnotation]
	if !ok || value == liqojanitor.MarkValue || !changed(r, liqojanitor.MarkAnnotation) {
		return nil
	}
	return field.ErrorList{field.Invalid(markPath, value, msgMarkValue(r.New))}
}

// checkConfirmation: the confirmation must equal spec.clusterID when the mark is set (rule 1); a wrong
// confirmation added ahead of the mark is refused at once, so the mistake shows where it is made.
func checkConfirmation(r *inputs, marking bool) field.ErrorList {
	value, ok := r.New.Annotations[liqojanitor.ConfirmAnnotation]
	switch {
	case !ok && marking:
		return field.ErrorList{field.Required(confirmPath, msgConfirmMissing(r.New))}
	case !ok || value == string(r.New.Spec.ClusterID):
		return nil
	case marking || changed(r, liqojanitor.ConfirmAnnotation):
		return field.ErrorList{field.Invalid(confirmPath, value, msgConfirmWrong(r.New))}
	}
	return nil
}

// checkNotLocal: a cluster cannot declare itself dead; fail closed when the local ID is unknown (rule 3).
func checkNotLocal(r *inputs) field.ErrorList {
	switch {
	case r.LocalClusterIDErr != nil:
		return field.ErrorList{field.Forbidden(clusterIDPath, msgLocalUnknown(r.New, r.LocalClusterIDErr))}
	case string(r.New.Spec.ClusterID) == r.LocalClusterID:
		return field.ErrorList{field.Forbidden(clusterIDPath, msgLocal(r.New))}
	}
	return nil
}

// checkNotCreate: no ForeignCluster is born dead (rule 13). A new object has no status (the status
// subresource drops it on CREATE), so nothing Liqo observed could back the mark.
func checkNotCreate(r *inputs) field.ErrorList {
	if r.Old != nil {
		return nil
	}
	return field.ErrorList{field.Forbidden(markPath, msgCreateMarked(r.New))}
}

// checkLiqoLookup: the mark goes only on the ForeignCluster Liqo itself finds for the cluster ID (rule 9).
// Liqo's API-server checker, VirtualNode drain and crdReplicator find "the" ForeignCluster of a cluster
// ID by the label liqo.io/remote-cluster-id, not by spec.clusterID (pkg/utils/foreigncluster/getters.go
// GetForeignClusterByID, Liqo v1.0.3, v1.1.0 and v1.2.0): an object without that label is never probed
// again, so its APIServerStatus is frozen at whatever it said last.
func checkLiqoLookup(r *inputs) field.ErrorList {
	if liqojanitor.FoundByLiqo(r.New) {
		return nil
	}
	return field.ErrorList{field.Forbidden(labelsPath.Key(liqojanitor.RemoteClusterIDLabel), msgNotLiqosLookup(r.New))}
}

// checkNoDuplicate: one cluster ID, one ForeignCluster (rule 9). Liqo's lookup (GetForeignClusterByID)
// takes the oldest ForeignCluster labelled with the cluster ID, so a second one — by label or by
// spec.clusterID — may be the one Liqo probes while this one's status is never updated. Fail closed when
// the others cannot be listed.
func checkNoDuplicate(r *inputs) field.ErrorList {
	switch {
	case r.DuplicatesErr != nil:
		return field.ErrorList{field.Forbidden(clusterIDPath, msgDuplicatesUnknown(r.New, r.DuplicatesErr))}
	case len(r.Duplicates) > 0:
		return field.ErrorList{field.Forbidden(clusterIDPath, msgDuplicate(r.New, r.Duplicates))}
	}
	return nil
}

// checkEvidence: no evidence is not evidence of death (rule 12). Liqo deletes APIServerStatus when the
// ForeignCluster names no API server (no status.apiServerURL and no status.foreignProxyURL:
// foreigncluster-controller/apiserverchecker.go needCondition, Liqo v1.0.3 to v1.2.0) — identity deleted,
// authentication off, a hand-made object — and Liqo ≥ v1.1's IsDead reads a missing condition as dead. The
// operator must say, with a second key in the marking request itself, that they know there is no evidence:
// a key the object already carried (written while the gate was absent: checkNoEvidenceBeforeTheMark
// refuses it otherwise) was typed by nobody who marks now, so it is refused, with the way to give it.
func checkEvidence(r *inputs) field.ErrorList {
	if liqojanitor.APIServerStatus(r.New) != nil {
		return nil
	}
	var before map[string]string
	if r.Old != nil {
		before = r.Old.Annotations
	}
	if _, armed := before[liqojanitor.NoEvidenceAnnotation]; armed {
		return field.ErrorList{field.Forbidden(noEvidencePath, msgNoEvidenceArmed(r.New))}
	}
	if r.New.Annotations[liqojanitor.NoEvidenceAnnotation] == string(r.New.Spec.ClusterID) {
		return nil
	}
	return field.ErrorList{field.Required(noEvidencePath, msgNoEvidence(r.New))}
}

// checkNoEvidenceBeforeTheMark: the no-evidence key counts only in the request that sets the mark (rule
// 12), so setting or changing it on a ForeignCluster that stays unmarked is refused, for everyone, with the
// one request that gives it. Removing it is anyone's.
func checkNoEvidenceBeforeTheMark(r *inputs) field.ErrorList {
	if !sets(r.Old, r.New, liqojanitor.NoEvidenceAnnotation) {
		return nil
	}
	return field.ErrorList{field.Forbidden(noEvidencePath, msgNoEvidenceEarly(r.New))}
}

// checkNoFenceWithoutMark: the fence record is the gate's (rule 15); on a ForeignCluster unmarked after the
// request there is no return to fence, and a record placed ahead of a mark would end that mark's alert
// before it began. Setting or changing it is refused, for everyone; removing it is anyone's.
func checkNoFenceWithoutMark(r *inputs) field.ErrorList {
	if !sets(r.Old, r.New, liqojanitor.FencedAnnotation) {
		return nil
	}
	return field.ErrorList{field.Forbidden(fencedPath, msgFenceWithoutMark(r.New))}
}

// checkNoOverrideWithoutMark: the deletion override cannot be pre-placed (rule 22). It lets a marked
// ForeignCluster be deleted while its unpeering runs (rule 17), and a holder of the verb sets it on a marked
// one; placed ahead of a mark, by anyone, it would hold for a mark its author never saw. Setting or changing
// it on a ForeignCluster unmarked after the request is refused, for everyone; removing it is anyone's.
func checkNoOverrideWithoutMark(r *inputs) field.ErrorList {
	if !sets(r.Old, r.New, liqojanitor.AllowDeleteAnnotation) {
		return nil
	}
	return field.ErrorList{field.Forbidden(overridePath, msgOverrideWithoutMark(r.New))}
}

// checkNoOverrideIntoTheMark: a mark never starts overridden (rule 22). The mutating webhook drops the
// deletion override from any request that sets the mark; one still there means it did not run.
func checkNoOverrideIntoTheMark(r *inputs) field.ErrorList {
	if _, carried := r.New.Annotations[liqojanitor.AllowDeleteAnnotation]; !carried {
		return nil
	}
	return field.ErrorList{field.Forbidden(overridePath, msgOverrideIntoTheMark(r.New))}
}

// checkNoFenceIntoTheMark: a mark never starts fenced (rule 15). The mutating webhook drops any fence
// record in a request that sets the mark; one still there means it did not run.
func checkNoFenceIntoTheMark(r *inputs) field.ErrorList {
	if _, carried := r.New.Annotations[liqojanitor.FencedAnnotation]; !carried {
		return nil
	}
	return field.ErrorList{field.Forbidden(fencedPath, msgFenceIntoTheMark(r.New))}
}

// checkProbe: an answer to the gate's own probe vetoes the mark, whatever Liqo's status says (rule 4):
// that status is written only on a transition, only while Liqo's controller runs and only onto the
// ForeignCluster its lookup finds, so it may be stale.
func checkProbe(r *inputs) field.ErrorList {
	if r.Probe.Answered == "" {
		return nil
	}
	return field.ErrorList{field.Forbidden(conditionsPath, msgProviderAnswers(r.New, r.Probe.Answered))}
}

// checkLabelsLocked: while the mark is set (before or after the request), Liqo's labels that decide its
// lookup and its own webhook do not change, for anyone (rule 11).
func checkLabelsLocked(r *inputs, t transition) field.ErrorList {
	if t == notMarked || r.Old == nil {
		return nil
	}
	var errs field.ErrorList
	for _, key := range liqojanitor.MarkLockedLabels {
		if differs(r.Old.Labels, r.New.Labels, key) {
			errs = append(errs, field.Forbidden(labelsPath.Key(key), msgLabelLocked(r.New, key)))
		}
	}
	return errs
}

// checkJanitorOwned: only the janitor's own identity writes the janitor's keys (rule 14). The one
// exception is the gate's own removal, inside a request that removes the mark, of the grace-window keys
// and of a cleanup annotation that only holds the grace-window plan (rule 7).
func checkJanitorOwned(r *inputs, t transition) field.ErrorList {
	if r.JanitorUser != "" && r.User.Username == r.JanitorUser {
		return nil
	}
	var errs field.ErrorList
	for _, key := range liqojanitor.JanitorOwnedAnnotations {
		if !changed(r, key) || (t == unmarking && removedWithTheMark(r, key)) {
			continue
		}
		errs = append(errs, field.Forbidden(annotationsPath.Key(key), msgJanitorOwned(r.New, key)))
	}
	return errs
}

// removedWithTheMark reports whether key is one the gate removes together with the mark (stamp), and the
// request removes it.
func removedWithTheMark(r *inputs, key string) bool {
	if _, inNew := r.New.Annotations[key]; inNew || r.Old == nil {
		return false
	}
	return key != liqojanitor.CleanupAnnotation || strings.HasPrefix(r.Old.Annotations[key], liqojanitor.GracePlanPrefix)
}

// checkUnreachable is the reachability veto (rule 4): Liqo must not see the provider answering, and must
// not have seen it answering for at least MinUnreachable. No APIServerStatus condition counts as unreachable.
func checkUnreachable(r *inputs, opts Options) field.ErrorList {
	return vetoUnlessSettled(r, opts, liqojanitor.APIServerStatus(r.New), conditionsPath, msgReachable, msgTooRecent)
}

// vetoUnlessSettled is the staleness rule rules 4 and 20 share: cond Established vetoes the mark (up says
// why), and so does a cond that changed less than MinUnreachable ago (a blip: recent says why). No
// condition vetoes nothing.
func vetoUnlessSettled(r *inputs, opts Options, cond *liqov1beta1.Condition, path *field.Path,
	up func(*liqov1beta1.ForeignCluster, *liqov1beta1.Condition) string,
	recent func(*liqov1beta1.ForeignCluster, *liqov1beta1.Condition, time.Duration, time.Duration) string) field.ErrorList {
	switch {
	case cond == nil:
		return nil
	case cond.Status == liqov1beta1.ConditionStatusEstablished:
		return field.ErrorList{field.Forbidden(path, up(r.New, cond))}
	case cond.LastTransitionTime.IsZero():
		// Liqo always stamps transitions; without a time there is no blip to wait out.
		return nil
	}
	if since := r.Now.Sub(cond.LastTransitionTime.Time); since < opts.MinUnreachable {
		return field.ErrorList{field.Forbidden(path, recent(r.New, cond, since, opts.MinUnreachable))}
	}
	return nil
}

// checkTunnel is the data-plane veto (rule 20): Liqo must not see the tunnel to the provider up, and must
// not have seen it change for at least MinUnreachable — the same staleness rules as rule 4's. Liqo's
// foreigncluster controller writes NetworkConnectionStatus from the Connection the gateway's connection
// checker keeps (foreigncluster-controller/status.go handleConnectionStatus, Liqo v1.0.3 to v1.2.0:
// Connected → Established, Connecting → Pending, anything else → Error), and stamps LastTransitionTime only
// when the status, reason or message change (pkg/utils/foreigncluster/conditions.go EnsureModuleCondition):
// a condition that changed less than MinUnreachable ago may have been Established a moment before, so it
// is refused whatever it changed from. A provider whose API server is down but whose tunnel is up still
// runs its pods, which keep serving and reaching the consumer: it is alive. No condition at all (the
// networking module off, or no Connection: handleConnectionStatus deletes it) is no evidence either way:
// rules 4 and 12 decide.
func checkTunnel(r *inputs, opts Options) field.ErrorList {
	return vetoUnlessSettled(r, opts, liqojanitor.TunnelStatus(r.New), tunnelPath, msgTunnelUp, msgTunnelTooRecent)
}

// checkStorm is the storm guard (rule 21): while opts.Storm sees a storm in the count of this consumer's
// providers unreachable by Liqo's evidence (liqojanitor.CountStorm over a live list of every
// ForeignCluster, the one being marked counted as unreachable), the mark needs
// AcknowledgeUnreachableAnnotation equal to that count, given in the marking request itself (one the old
// object carried was typed by nobody who marks now). When the consumer itself is cut off, every provider
// turns unreachable at once and the gate's probe runs from the same side of the cut: the count is the
// only evidence left that the cause may be ours. An acknowledgement given outside a storm must still name
// the count (the janitor reads it). Fail closed when the ForeignClusters cannot be listed.
func checkStorm(r *inputs, opts Options) field.ErrorList {
	if opts.Storm.MinUnreachable <= 0 {
		return nil
	}
	if r.StormErr != nil {
		return field.ErrorList{field.Forbidden(ackPath, msgStormUnknown(r.New, r.StormErr))}
	}
	value, given := r.New.Annotations[liqojanitor.AcknowledgeUnreachableAnnotation]
	storm := opts.Storm.In(r.Storm)
	switch {
	case given && !sets(r.Old, r.New, liqojanitor.AcknowledgeUnreachableAnnotation):
		return field.ErrorList{field.Forbidden(ackPath, msgAckArmed(r.New, r.Storm))}
	case given && !r.Storm.Acknowledged(r.New.Annotations):
		return field.ErrorList{field.Invalid(ackPath, value, msgAckWrong(r.New, r.Storm))}
	case storm && !given:
		return field.ErrorList{field.Required(ackPath, msgStorm(r.New, r.Storm, opts.Storm))}
	}
	return nil
}

// checkAckStamped: an acknowledgement given with the mark carries the mutating webhook's stamp of it
// (rule 21, as rule 6's stamps): naming the requester, at most stampWindow old, with the count given. If it
// does not, the mutating webhook did not run and the acknowledgement would go unaudited.
func checkAckStamped(r *inputs) field.ErrorList {
	value, given := r.New.Annotations[liqojanitor.AcknowledgeUnreachableAnnotation]
	if !given {
		return nil
	}
	ack, ok := liqojanitor.ParseAcknowledgement(r.New.Annotations[liqojanitor.AcknowledgedByAnnotation])
	if ok && ack.By == r.User.Username && strconv.Itoa(ack.Count) == value &&
		!ack.At.After(r.Now.Add(clockSkew)) && r.Now.Sub(ack.At) <= stampWindow {
		return nil
	}
	return field.ErrorList{field.Forbidden(ackedByPath, msgAckNotStamped(r.New))}
}

// checkNoAckBeforeTheMark: the acknowledgement counts only in the request that sets the mark (rule 21),
// so setting or changing it on a ForeignCluster unmarked after the request is refused, for everyone, with
// the one request that gives it (removing it is anyone's). Its stamp is checkNoStampsWithoutMark's.
func checkNoAckBeforeTheMark(r *inputs) field.ErrorList {
	if !sets(r.Old, r.New, liqojanitor.AcknowledgeUnreachableAnnotation) {
		return nil
	}
	return field.ErrorList{field.Forbidden(ackPath, msgAckEarly(r.New))}
}

// checkFenceDeadline is the provider fence's deadline (rule 31): with a contract recorded for the provider
// (the janitor's renewal record, liqojanitor.FenceRenewal), the mark is refused before the provider has
// surely fenced this consumer (FenceRenewal.Deadline, on the gate's clock as the janitor's records are on
// the janitor's, one cluster's clocks), unless the marking request carries the override
// (checkDeadlineOverrideGiven and checkDeadlineOverrideValue judge it; rule 5's verb, for Liqo's
// uninstaller too). Liqo >= v1.1 force-deletes this consumer's pods of the provider on the mark: before
// the deadline the provider may still run their copies, and every workload would run twice. No record, or
// one without a contract or a renewal that may have landed, is no deadline: the provider's agent never
// armed for this consumer. Fail closed when the record cannot be read.
func checkFenceDeadline(r *inputs) field.ErrorList {
	if overridesDeadline(r.New) {
		return nil
	}
	if r.FenceRenewalErr != nil {
		return field.ErrorList{field.Forbidden(markPath, msgFenceDeadlineUnknown(r.New, r.FenceRenewalErr))}
	}
	deadline, contract, ok := r.FenceRenewal.Deadline()
	if !ok || !deadline.After(r.Now) {
		return nil
	}
	return field.ErrorList{field.Forbidden(markPath, msgFenceDeadline(r.New, r.FenceRenewal, deadline, contract, r.Now))}
}

// checkDeadlineOverrideGiven: the fence deadline's override counts only in the request that sets the mark
// (rule 31), typed by the one who marks: one the old object already carried (written while the gate was
// absent) is refused, with the way to give it.
func checkDeadlineOverrideGiven(r *inputs) field.ErrorList {
	if !overridesDeadline(r.New) || sets(r.Old, r.New, liqojanitor.OverrideFenceDeadlineAnnotation) {
		return nil
	}
	return field.ErrorList{field.Forbidden(deadlinePath, msgDeadlineOverrideArmed(r.New))}
}

// checkDeadlineOverrideValue: the override names the cluster ID exactly (rule 31), as the confirmation
// does.
func checkDeadlineOverrideValue(r *inputs) field.ErrorList {
	value, given := r.New.Annotations[liqojanitor.OverrideFenceDeadlineAnnotation]
	if !given || value == string(r.New.Spec.ClusterID) {
		return nil
	}
	return field.ErrorList{field.Invalid(deadlinePath, value, msgDeadlineOverrideWrong(r.New))}
}

// checkDeadlineOverrideStamped: an override given with the mark carries the mutating webhook's stamp of
// it (rule 31, as rule 6's stamps): naming the requester, at most stampWindow old. If it does not, the
// mutating webhook did not run and the override would go unaudited.
func checkDeadlineOverrideStamped(r *inputs) field.ErrorList {
	if !overridesDeadline(r.New) {
		return nil
	}
	o, ok := liqojanitor.ParseFenceDeadlineOverride(r.New.Annotations[liqojanitor.FenceDeadlineOverriddenAnnotation])
	if ok && o.By == r.User.Username && !o.At.After(r.Now.Add(clockSkew)) && r.Now.Sub(o.At) <= stampWindow {
		return nil
	}
	return field.ErrorList{field.Forbidden(overriddenPath, msgDeadlineOverrideNotStamped(r.New))}
}

// checkNoDeadlineOverrideBeforeTheMark: the override cannot be pre-placed (rule 31, as rule 22's): setting
// or changing it on a ForeignCluster unmarked after the request is refused, for everyone, a holder of rule
// 5's verb included; removing it is anyone's. Its stamp is checkNoStampsWithoutMark's.
func checkNoDeadlineOverrideBeforeTheMark(r *inputs) field.ErrorList {
	if !sets(r.Old, r.New, liqojanitor.OverrideFenceDeadlineAnnotation) {
		return nil
	}
	return field.ErrorList{field.Forbidden(deadlinePath, msgDeadlineOverrideEarly(r.New))}
}

// checkStamped: when the mark is set the stamps must be the mutating webhook's (rule 6); if they are not,
// the mutating webhook did not run, and the mark would go unaudited.
func checkStamped(r *inputs) field.ErrorList {
	if stampsCurrent(r.New, r.User.Username, r.Now) {
		return nil
	}
	return field.ErrorList{field.Forbidden(annotationsPath.Key(liqojanitor.MarkedByAnnotation), msgNotStamped(r.New))}
}

// checkReturnRecorded: a fence stops the copies a returned provider runs twice (rule 15), so there is
// nothing to fence until the janitor has recorded a return of this mark (its cleanup annotation, which
// only its identity writes: rule 14). The record is read on the stored object.
func checkReturnRecorded(r *inputs) field.ErrorList {
	if _, ok := liqojanitor.ReturnRecordedAt(r.Old.Annotations); ok {
		return nil
	}
	return field.ErrorList{field.Forbidden(fencedPath, msgNothingToFence(r.New))}
}

// checkFenceRecord: a fence record names the requester, is fresh and names the janitor's recorded return,
// as the mutating webhook writes it (rule 15): nobody records a fence in another's name, backdated,
// future-dated, or for another return.
func checkFenceRecord(r *inputs) field.ErrorList {
	rec, ok := liqojanitor.ParseFenceRecord(r.New.Annotations[liqojanitor.FencedAnnotation])
	returned, recorded := liqojanitor.ReturnRecordedAt(r.Old.Annotations)
	if ok && rec.Stamped() && recorded && rec.By == r.User.Username && rec.Return.Equal(returned) &&
		!rec.At.After(r.Now.Add(clockSkew)) && r.Now.Sub(rec.At) <= stampWindow {
		return nil
	}
	return field.ErrorList{field.Forbidden(fencedPath, msgFenceRecord(r.New))}
}

// checkNoReleaseWithoutMark: the released-volumes record is the gate's (rule 32); it names the volumes
// released from a dead provider under the current mark, so on a ForeignCluster unmarked after the request
// there is nothing it could name. Setting or changing it is refused, for everyone; removing it is anyone's.
func checkNoReleaseWithoutMark(r *inputs) field.ErrorList {
	if !sets(r.Old, r.New, liqojanitor.VolumesReleasedAnnotation) {
		return nil
	}
	return field.ErrorList{field.Forbidden(releasedPath, msgReleaseWithoutMark(r.New))}
}

// checkNoReleaseIntoTheMark: a mark never starts with volumes released (rule 32). The mutating webhook drops
// the record from any request that sets the mark; one still there means it did not run.
func checkNoReleaseIntoTheMark(r *inputs) field.ErrorList {
	if _, carried := r.New.Annotations[liqojanitor.VolumesReleasedAnnotation]; !carried {
		return nil
	}
	return field.ErrorList{field.Forbidden(releasedPath, msgReleaseIntoTheMark(r.New))}
}

// checkReleaseKept: while marked, the record only grows (rule 32): removing it, or a change that drops a
// volume it listed (by UID), would lose what tells the operator which remote PVCs a re-peering deletes.
func checkReleaseKept(r *inputs) field.ErrorList {
	value, kept := r.New.Annotations[liqojanitor.VolumesReleasedAnnotation]
	if !kept {
		return field.ErrorList{field.Forbidden(releasedPath, msgReleaseRemoved(r.New))}
	}
	old, _ := liqojanitor.ParseVolumesReleased(r.Old.Annotations[liqojanitor.VolumesReleasedAnnotation])
	rec, _ := liqojanitor.ParseVolumesReleased(value)
	if dropped := rec.Dropped(old); len(dropped) > 0 {
		return field.ErrorList{field.Forbidden(releasedPath, msgReleaseDropped(r.New, dropped))}
	}
	return nil
}

// checkReleaseRecord: a released-volumes record parses, names the requester and is fresh, as the mutating
// webhook writes it (rule 32): nobody records a release in another's name, backdated or future-dated.
func checkReleaseRecord(r *inputs) field.ErrorList {
	rec, ok := liqojanitor.ParseVolumesReleased(r.New.Annotations[liqojanitor.VolumesReleasedAnnotation])
	at, stamped := rec.StampedAt()
	if ok && stamped && rec.By == r.User.Username && !at.After(r.Now.Add(clockSkew)) && r.Now.Sub(at) <= stampWindow {
		return nil
	}
	return field.ErrorList{field.Forbidden(releasedPath, msgReleaseRecord(r.New))}
}

// checkOverrideValue: the deletion override, set on a marked ForeignCluster, names its cluster ID exactly
// (rule 17), as the confirmation does: a typo is refused where it is made, not at the deletion.
func checkOverrideValue(r *inputs) field.ErrorList {
	value := r.New.Annotations[liqojanitor.AllowDeleteAnnotation]
	if !setsOverride(r.Old, r.New) || value == string(r.New.Spec.ClusterID) {
		return nil
	}
	return field.ErrorList{field.Invalid(overridePath, value, msgOverrideWrong(r.New))}
}

// immutableWhileMarked are the keys no request changes while the mark is set: the confirmation and the
// stamps (rule 6), the operator's reason the clean-up's events quote (rule 14), the storm's
// acknowledgement and its stamp (rule 21), which the janitor reads, the gate's record of the targets at
// marking (rule 23), which it falls back to, and the fence deadline's override and its stamp (rule 31).
var immutableWhileMarked = []string{liqojanitor.ConfirmAnnotation, liqojanitor.MarkedByAnnotation,
	liqojanitor.MarkedAtAnnotation, liqojanitor.ReasonAnnotation,
	liqojanitor.AcknowledgeUnreachableAnnotation, liqojanitor.AcknowledgedByAnnotation, liqojanitor.MarkTargetsAnnotation,
	liqojanitor.OverrideFenceDeadlineAnnotation, liqojanitor.FenceDeadlineOverriddenAnnotation}

// checkImmutable: while the mark is set, the confirmation, the stamps and the reason do not change.
func checkImmutable(r *inputs) field.ErrorList {
	var errs field.ErrorList
	for _, key := range immutableWhileMarked {
		if changed(r, key) {
			errs = append(errs, field.Forbidden(annotationsPath.Key(key), msgImmutable(r.New, key)))
		}
	}
	return errs
}

// checkNoStampsWithoutMark: stamps are written only by the mutating webhook, together with the mark: the
// mark's (rule 6), the storm acknowledgement's (rule 21), the record of the targets at marking (rule 23)
// and the fence deadline override's (rule 31).
func checkNoStampsWithoutMark(r *inputs) field.ErrorList {
	var errs field.ErrorList
	for _, key := range liqojanitor.GateStampAnnotations {
		if _, ok := r.New.Annotations[key]; ok && changed(r, key) {
			errs = append(errs, field.Forbidden(annotationsPath.Key(key), msgStampWithoutMark(r.New, key)))
		}
	}
	return errs
}

// checkPermission is the break-glass rule: for setting and for removing the mark (rule 5), and for
// unpausing a marked cluster (rule 10).
func (v *verdict) checkPermission(r *inputs, t transition) {
	switch {
	case r.permission.Err != nil:
		v.deny(reasonPermission, field.ErrorList{field.Forbidden(markPath, msgPermissionUnknown(r.New, r.permission.Err))})
	case !r.permission.Allowed:
		v.deny(reasonPermission, field.ErrorList{field.Forbidden(markPath, msgPermissionDenied(r.Old, r.New, r.User.Username, t, r.permission.Reason))})
	default:
		return
	}
	v.unauthorized = true
}

// changed reports whether the request adds, removes or changes the annotation key.
func changed(r *inputs, key string) bool {
	var old map[string]string
	if r.Old != nil {
		old = r.Old.Annotations
	}
	return differs(old, r.New.Annotations, key)
}

// differs reports whether key is added, removed or changed from the map before to the map after.
func differs(before, after map[string]string, key string) bool {
	oldValue, inOld := before[key]
	newValue, inNew := after[key]
	return inNew != inOld || newValue != oldValue
}

// stampWindow is how old a stamp may be and still count as this request's own: the mutating webhook
// writes the stamps on every request that sets the mark, so the validating webhook sees them a moment
// later, even when the mutating webhook is re-invoked (reinvocationPolicy IfNeeded) or served by another
// replica. marked-at has whole seconds; clockSkew allows for replicas whose clocks differ a little. A
// minute here once let a hand-written marked-at=now-59s skip a 30s grace period.
const (
	stampWindow = 10 * time.Second
	clockSkew   = 5 * time.Second
)

// stampsCurrent reports whether fc carries stamps this very request could have written: marked-by is the
// requesting user and marked-at is at most stampWindow old.
func stampsCurrent(fc *liqov1beta1.ForeignCluster, user string, now time.Time) bool {
	at, ok := liqojanitor.MarkedAt(fc)
	return ok && fc.Annotations[liqojanitor.MarkedByAnnotation] == user &&
		!at.After(now.Add(clockSkew)) && now.Sub(at) <= stampWindow
}
