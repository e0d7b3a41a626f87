package webhook

import (
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// The decision on a CREATE or UPDATE of a ForeignCluster: what it depends on (inputs), what the request
// does to the mark (transition), the answer (verdict, with the reason the metric counts) and decide, which
// runs the checks of rules.go that the transition calls for.

// permission is the outcome of the break-glass SubjectAccessReview (verb mark-unreachable on
// foreignclusters.core.liqo.io).
type permission struct {
	// Allowed is the review's verdict.
	Allowed bool
	// Reason is the authorizer's explanation, if any.
	Reason string
	// Err is set when the review itself could not be made; the gate then fails closed.
	Err error
}

// inputs is everything a decision depends on.
type inputs struct {
	// Old is the object before the request; nil on CREATE.
	Old *liqov1beta1.ForeignCluster
	// New is the object the request would store (after mutation).
	New *liqov1beta1.ForeignCluster
	// User is the requesting user.
	User authenticationv1.UserInfo
	// LocalClusterID is this cluster's own Liqo cluster ID; LocalClusterIDErr says why it could not be read.
	LocalClusterID    string
	LocalClusterIDErr error
	// permission is the break-glass review; only consulted when the request sets or removes the mark, or
	// unpauses a marked cluster.
	permission permission
	// Duplicates are the other ForeignClusters Liqo's lookup could confuse with New: those with New's
	// spec.clusterID or with a liqo.io/remote-cluster-id label of that value (rule 9); DuplicatesErr says
	// why they could not be listed. Only consulted when the request sets the mark.
	Duplicates    []duplicate
	DuplicatesErr error
	// Storm is the count of this consumer's providers unreachable by Liqo's evidence, the one being marked
	// included (rule 21), from the same live list; StormErr says why it could not be made. Only consulted
	// when the request sets the mark.
	Storm    liqojanitor.Storm
	StormErr error
	// FenceRenewal is the janitor's record of its renewals of the provider's fence Lease (rule 31), read
	// live from liqojanitor.FenceRenewalsConfigMap in the janitor's namespace; the zero value when there is
	// none (no contract: no deadline). FenceRenewalErr says why it could not be read. Only consulted when
	// the request sets the mark.
	FenceRenewal    liqojanitor.FenceRenewal
	FenceRenewalErr error
	// Probe is what the gate's own probe of the provider's API server found (rule 4); only made when the
	// request sets the mark and every other rule allows it.
	Probe probeResult
	// JanitorUser is the janitor's own identity (rule 14).
	JanitorUser string
	// LiqoUninstaller: the requester is Liqo's uninstaller, a live pod of its pre-delete Job (rule 18).
	LiqoUninstaller bool
	// NotUninstaller says why a request by one of Options.LiqoUninstallerUsers is not taken for Liqo's
	// uninstaller's (its token is bound to no live pod of the Job); "" otherwise.
	NotUninstaller string
	// Now is the time of the request.
	Now time.Time
}

// duplicate is another ForeignCluster of the same cluster ID, and how it names it.
type duplicate struct {
	// Name is the other ForeignCluster's name.
	Name string
	// ByLabel: it carries the liqo.io/remote-cluster-id label of the cluster ID (Liqo's lookup finds it);
	// otherwise it has the same spec.clusterID.
	ByLabel bool
}

// probeResult is the outcome of the gate's own probe of a provider's API server.
type probeResult struct {
	// Answered names the URL that answered; empty when none did (or none was probed).
	Answered string
}

// transition is what a request does to the mark.
type transition int

const (
	// notMarked means the mark is set neither before nor after the request.
	notMarked transition = iota
	// marking means the request sets the mark (or creates a marked ForeignCluster).
	marking
	// unmarking means the request removes the mark.
	unmarking
	// staysMarked means the mark is set before and after the request.
	staysMarked
)

// transitionOf classifies a request by the mark on its old (nil on CREATE) and new objects.
func transitionOf(old, fc *liqov1beta1.ForeignCluster) transition {
	before := old != nil && liqojanitor.IsMarked(old.Annotations)
	after := fc != nil && liqojanitor.IsMarked(fc.Annotations)
	switch {
	case after && !before:
		return marking
	case before && !after:
		return unmarking
	case before && after:
		return staysMarked
	default:
		return notMarked
	}
}

// unpauses reports whether the request resumes the janitor on a cluster that stays marked: paused was
// "true" and no longer is (rule 10).
func unpauses(old, fc *liqov1beta1.ForeignCluster) bool {
	return transitionOf(old, fc) == staysMarked &&
		old.Annotations[liqojanitor.PausedAnnotation] == "true" && fc.Annotations[liqojanitor.PausedAnnotation] != "true"
}

// sets reports whether the request sets the annotation key or changes its value (removing it is not
// setting it); old is nil on CREATE.
func sets(old, fc *liqov1beta1.ForeignCluster, key string) bool {
	if _, set := fc.Annotations[key]; !set {
		return false
	}
	var before map[string]string
	if old != nil {
		before = old.Annotations
	}
	return differs(before, fc.Annotations, key)
}

// fences reports whether the request sets or changes the operator's fence record on a cluster that stays
// marked (rule 15): the record ends the janitor's count of a returned provider, and its critical alert.
func fences(old, fc *liqov1beta1.ForeignCluster) bool {
	return transitionOf(old, fc) == staysMarked && sets(old, fc, liqojanitor.FencedAnnotation)
}

// releases reports whether the request sets or changes the released-volumes record on a cluster that stays
// marked (rule 32): the record of data abandoned on the provider, which the plugin writes.
func releases(old, fc *liqov1beta1.ForeignCluster) bool {
	return transitionOf(old, fc) == staysMarked && sets(old, fc, liqojanitor.VolumesReleasedAnnotation)
}

// touchesRelease reports whether the request sets, changes or removes the released-volumes record on a
// cluster that stays marked (rule 32: removing it is refused while marked).
func touchesRelease(r *inputs) bool {
	return transitionOf(r.Old, r.New) == staysMarked && changed(r, liqojanitor.VolumesReleasedAnnotation)
}

// armingKeys are the keys that, set ahead of the mark, count for a later mark that does not carry them —
// liqoctl force unpeer's bare mark (rule 19): the confirmation (rule 1) and the reason the clean-up's
// events quote as the marker's.
var armingKeys = []string{liqojanitor.ConfirmAnnotation, liqojanitor.ReasonAnnotation}

// arms reports whether the request sets or changes, on a ForeignCluster unmarked before and after it, a
// key that arms a later bare mark (rule 19).
func arms(old, fc *liqov1beta1.ForeignCluster) bool {
	if transitionOf(old, fc) != notMarked {
		return false
	}
	for _, key := range armingKeys {
		if sets(old, fc, key) {
			return true
		}
	}
	return false
}

// setsOverride reports whether the request sets or changes the break-glass override of the deletion rule
// (liqo-janitor.io/allow-delete-while-unpeering) on a ForeignCluster marked before and after it (rule 17):
// on an unmarked one it is refused (rule 22), and the mutating webhook drops it from a marking request.
func setsOverride(old, fc *liqov1beta1.ForeignCluster) bool {
	return transitionOf(old, fc) == staysMarked && sets(old, fc, liqojanitor.AllowDeleteAnnotation)
}

// acknowledges reports whether a marking request carries the storm's acknowledgement (rule 21).
func acknowledges(fc *liqov1beta1.ForeignCluster) bool {
	_, ok := fc.Annotations[liqojanitor.AcknowledgeUnreachableAnnotation]
	return ok
}

// overridesDeadline reports whether a request carries the override of the provider's fence deadline
// (rule 31).
func overridesDeadline(fc *liqov1beta1.ForeignCluster) bool {
	_, ok := fc.Annotations[liqojanitor.OverrideFenceDeadlineAnnotation]
	return ok
}

// needsPermission reports whether the request must pass the break-glass SubjectAccessReview: it sets or
// removes the mark (rule 5), unpauses a marked cluster (rule 10), records a fence on one (rule 15), sets
// the deletion override on one (rule 17), arms a bare mark on an unmarked one (rule 19) or records released
// volumes on a marked one (rule 32).
func needsPermission(old, fc *liqov1beta1.ForeignCluster) bool {
	t := transitionOf(old, fc)
	return t == marking || t == unmarking || unpauses(old, fc) || fences(old, fc) || setsOverride(old, fc) || arms(old, fc) ||
		releases(old, fc)
}

// needsClusterContext reports whether the decision needs the local cluster ID and the other
// ForeignClusters of the same cluster ID: only a request that sets the mark does.
func needsClusterContext(t transition) bool { return t == marking }

// verdict is the gate's answer to a request.
type verdict struct {
	// Errors are the reasons for a denial; empty means allowed.
	Errors field.ErrorList
	// Warnings are returned to the client whether or not the request is allowed.
	Warnings []string
	// unauthorized marks a denial for lack of the break-glass permission (HTTP 403, not 422).
	unauthorized bool
	// Reason names the first rule that refused the request, or what an allowed request did: one of the
	// reason* values (the reason label of liqo_janitor_gate_decisions_total).
	Reason string
}

// Reasons of a verdict: a bounded set, one per refusing check, plus what an allowed request did. The
// values are the reason label of liqo_janitor_gate_decisions_total and the reason of the Event on a mark
// by Liqo's uninstaller: the operator's documentation lists them and dashboards select on them, so a value
// does not change once released (the tests through the API server spell the values they count).
const (
	reasonMarkValue        = "MarkValue"
	reasonConfirmation     = "Confirmation"
	reasonLocalCluster     = "LocalCluster"
	reasonLiqoLookup       = "LiqoLookup"
	reasonDuplicate        = "Duplicate"
	reasonNoEvidence       = "NoEvidence"
	reasonCreateMarked     = "CreateMarked"
	reasonReachable        = "Reachable"
	reasonProviderAnswers  = "ProviderAnswers"
	reasonTunnelUp         = "TunnelUp"
	reasonStorm            = "Storm"
	reasonAckEarly         = "AcknowledgeBeforeMark"
	reasonLabelsLocked     = "LabelsLocked"
	reasonJanitorOwned     = "JanitorOwned"
	reasonNotStamped       = "NotStamped"
	reasonPermission       = "permission"
	reasonImmutable        = "Immutable"
	reasonStamps           = "StampsWithoutMark"
	reasonMarked           = "Marked"
	reasonUnmarked         = "Unmarked"
	reasonUnpaused         = "Unpaused"
	reasonFenceRecord      = "FenceRecord"
	reasonFenceUnmarked    = "FenceWithoutMark"
	reasonNothingToFence   = "NothingToFence"
	reasonFenced           = "Fenced"
	reasonEvidenceEarly    = "NoEvidenceBeforeMark"
	reasonArmed            = "KeysArmed"
	reasonOverride         = "DeleteOverride"
	reasonOverrideValue    = "DeleteOverrideValue"
	reasonOverrideSet      = "DeleteOverrideSet"
	reasonOverrideEarly    = "DeleteOverrideWithoutMark"
	reasonUninstallerMark  = "MarkedByLiqoUninstaller"
	reasonFenceDeadline    = "FenceDeadline"
	reasonDeadlineValue    = "FenceDeadlineOverrideValue"
	reasonDeadlineEarly    = "FenceDeadlineOverrideBeforeMark"
	reasonDeadlineOverride = "MarkedOverFenceDeadline"
	reasonUnpeering        = "UnpeeringRuns"
	reasonUnfencedReturn   = "UnfencedReturn"
	reasonDeleted          = "Deleted"
	reasonReleaseRecord    = "VolumesReleasedRecord"
	reasonReleaseUnmarked  = "VolumesReleasedWithoutMark"
	reasonReleaseKept      = "VolumesReleasedKept"
	reasonReleased         = "VolumesReleased"
	reasonOther            = "Other"
)

// deny adds errs to the verdict, naming reason if they are the first.
func (v *verdict) deny(reason string, errs field.ErrorList) {
	if len(errs) > 0 && v.Reason == "" {
		v.Reason = reason
	}
	v.Errors = append(v.Errors, errs...)
}

// Allowed reports whether the request may proceed.
func (v *verdict) Allowed() bool { return len(v.Errors) == 0 }

// decide applies the gate's rules (the package documentation) to a request that creates or updates a
// ForeignCluster.
func decide(r *inputs, opts Options) verdict {
	var v verdict
	v.deny(reasonMarkValue, checkMarkValue(r))
	t := transitionOf(r.Old, r.New)
	v.deny(reasonLabelsLocked, checkLabelsLocked(r, t))
	v.deny(reasonJanitorOwned, checkJanitorOwned(r, t))
	allowed := reasonOther
	switch t {
	case marking:
		allowed = v.decideMarking(r, opts)
	case unmarking:
		v.checkPermission(r, t)
		if v.Allowed() {
			v.Warnings = append(v.Warnings, warnUnmarked(r.New))
			v.Warnings = append(v.Warnings, warnReleasedOnUnmark(r.Old)...)
		}
		allowed = reasonUnmarked
	case staysMarked:
		v.deny(reasonImmutable, checkImmutable(r))
		if unpauses(r.Old, r.New) {
			v.checkPermission(r, t)
			allowed = reasonUnpaused
		}
		if fences(r.Old, r.New) {
			if errs := checkReturnRecorded(r); len(errs) > 0 {
				v.deny(reasonNothingToFence, errs)
			} else {
				v.deny(reasonFenceRecord, checkFenceRecord(r))
			}
			v.checkPermission(r, t)
			allowed = reasonFenced
		}
		if setsOverride(r.Old, r.New) {
			v.deny(reasonOverrideValue, checkOverrideValue(r))
			v.checkPermission(r, t)
			allowed = reasonOverrideSet
		}
		if touchesRelease(r) {
			allowed = v.decideRelease(r)
		}
	case notMarked:
		v.deny(reasonConfirmation, checkConfirmation(r, false))
		v.deny(reasonStamps, checkNoStampsWithoutMark(r))
		v.deny(reasonFenceUnmarked, checkNoFenceWithoutMark(r))
		v.deny(reasonOverrideEarly, checkNoOverrideWithoutMark(r))
		v.deny(reasonEvidenceEarly, checkNoEvidenceBeforeTheMark(r))
		v.deny(reasonAckEarly, checkNoAckBeforeTheMark(r))
		v.deny(reasonDeadlineEarly, checkNoDeadlineOverrideBeforeTheMark(r))
		v.deny(reasonReleaseUnmarked, checkNoReleaseWithoutMark(r))
		if arms(r.Old, r.New) {
			v.checkPermission(r, t)
			allowed = reasonArmed
		}
	}
	if v.Allowed() {
		v.Reason = allowed
	}
	return v
}

// decideRelease applies rule 32 to a request that sets, changes or removes the released-volumes record on a
// cluster that stays marked, and returns the reason of the verdict if it is allowed.
func (v *verdict) decideRelease(r *inputs) string {
	v.deny(reasonReleaseKept, checkReleaseKept(r))
	if releases(r.Old, r.New) {
		v.deny(reasonReleaseRecord, checkReleaseRecord(r))
		v.checkPermission(r, staysMarked)
	}
	return reasonReleased
}

// warnReleasedOnUnmark is the warning on unmarking a cluster whose record names released volumes (rule 32):
// peered again, the provider's virtual kubelet deletes their remote PVCs.
func warnReleasedOnUnmark(old *liqov1beta1.ForeignCluster) []string {
	rec, ok := liqojanitor.ParseVolumesReleased(old.Annotations[liqojanitor.VolumesReleasedAnnotation])
	if !ok {
		return nil
	}
	return []string{rec.RepeerWarning(string(old.Spec.ClusterID))}
}

// decideMarking applies the rules that hold for a request that sets the mark, and returns the reason of
// the verdict if it is allowed: a mark by Liqo's uninstaller or anyone's.
func (v *verdict) decideMarking(r *inputs, opts Options) string {
	v.deny(reasonCreateMarked, checkNotCreate(r))
	v.deny(reasonConfirmation, checkConfirmation(r, true))
	v.deny(reasonLocalCluster, checkNotLocal(r))
	v.deny(reasonLiqoLookup, checkLiqoLookup(r))
	v.deny(reasonDuplicate, checkNoDuplicate(r))
	if !r.LiqoUninstaller { // rule 18: Liqo's uninstaller has no second key to give
		v.deny(reasonNoEvidence, checkEvidence(r))
	}
	v.deny(reasonReachable, checkUnreachable(r, opts))
	v.deny(reasonTunnelUp, checkTunnel(r, opts))
	v.deny(reasonStorm, checkStorm(r, opts))           // Liqo's uninstaller's too (rule 18)
	v.deny(reasonFenceDeadline, checkFenceDeadline(r)) // Liqo's uninstaller's too (rule 18)
	v.deny(reasonDeadlineEarly, checkDeadlineOverrideGiven(r))
	v.deny(reasonDeadlineValue, checkDeadlineOverrideValue(r))
	v.deny(reasonProviderAnswers, checkProbe(r))
	v.deny(reasonNotStamped, checkStamped(r))
	v.deny(reasonNotStamped, checkAckStamped(r))
	v.deny(reasonNotStamped, checkDeadlineOverrideStamped(r))
	v.deny(reasonFenceUnmarked, checkNoFenceIntoTheMark(r))
	v.deny(reasonOverrideEarly, checkNoOverrideIntoTheMark(r))
	v.deny(reasonReleaseUnmarked, checkNoReleaseIntoTheMark(r))
	if r.NotUninstaller != "" {
		v.Warnings = append(v.Warnings, warnNotUninstaller(r.User.Username, r.NotUninstaller))
	}
	allowed := reasonMarked
	if overridesDeadline(r.New) {
		allowed = reasonDeadlineOverride
		if d, _, ok := r.FenceRenewal.Deadline(); v.Allowed() && ok && d.After(r.Now) {
			v.Warnings = append(v.Warnings, warnDeadlineOverridden(r.New, d))
		}
	}
	switch {
	case r.LiqoUninstaller && !acknowledges(r.New) && !overridesDeadline(r.New):
		// rule 18: Liqo's uninstaller holds no break-glass verb; its mark is audited instead (one that
		// acknowledges a storm or overrides the fence deadline needs the verb, as anyone's: rules 21, 31)
		allowed = reasonUninstallerMark
	default:
		v.checkPermission(r, marking)
	}
	return allowed
}
