package webhook

import (
	"slices"
	"strings"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// Options configures the gate.
type Options struct {
	// LiqoNamespace is the namespace of Liqo's cluster-ID ConfigMap (rule 3).
	LiqoNamespace string
	// MinUnreachable is how long the APIServerStatus condition must have been not Established before the
	// mark is accepted: a blip is not a death (rule 4). Zero accepts any unreachable provider.
	MinUnreachable time.Duration
	// ProbeTimeout bounds the gate's own probe of the provider's API server (rule 4); zero turns the
	// probe off. It must stay well inside the webhook's timeout (5 s).
	ProbeTimeout time.Duration
	// JanitorUser is the janitor's own identity, the only user who may write the janitor's keys (rule 14).
	// Empty: Setup learns it with a SelfSubjectReview (the binary serves the gate and runs the janitor
	// under one ServiceAccount).
	JanitorUser string
	// LiqoUninstallerUsers are the identities whose bare marks the gate accepts as Liqo's uninstaller's
	// (rule 18). Nil: DefaultLiqoUninstallerUsers of LiqoNamespace (Liqo's pre-delete Job); empty and not
	// nil: nobody.
	LiqoUninstallerUsers []string
}

// Defaults of the gate's options (the binary's flag defaults).
const (
	DefaultMinUnreachable = 60 * time.Second
	DefaultProbeTimeout   = 2 * time.Second
)

// DefaultLiqoUninstallerUsers are the identities rule 18 trusts when none are configured: Liqo's pre-delete
// Job's ServiceAccount in liqoNamespace.
func DefaultLiqoUninstallerUsers(liqoNamespace string) []string {
	return []string{"system:serviceaccount:" + liqoNamespace + ":" + liqojanitor.LiqoPreDeleteServiceAccount}
}

// Default returns o with an empty LiqoNamespace set to liqojanitor.DefaultLiqoNamespace, and nil LiqoUninstallerUsers
// set to DefaultLiqoUninstallerUsers of it.
func (o Options) Default() Options {
	if o.LiqoNamespace == "" {
		o.LiqoNamespace = liqojanitor.DefaultLiqoNamespace
	}
	if o.LiqoUninstallerUsers == nil {
		o.LiqoUninstallerUsers = DefaultLiqoUninstallerUsers(o.LiqoNamespace)
	}
	return o
}

// isLiqoUninstaller reports whether user is one of the identities rule 18 trusts.
func (o Options) isLiqoUninstaller(user string) bool {
	return user != "" && slices.Contains(o.LiqoUninstallerUsers, user)
}

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
	// Probe is what the gate's own probe of the provider's API server found (rule 4); only made when the
	// request sets the mark and every other rule allows it.
	Probe probeResult
	// JanitorUser is the janitor's own identity (rule 14).
	JanitorUser string
	// LiqoUninstaller: the requester is one of Liqo's uninstaller identities (rule 18).
	LiqoUninstaller bool
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
// (liqo-janitor.io/allow-delete-while-unpeering) on a ForeignCluster marked after it (rule 17).
func setsOverride(old, fc *liqov1beta1.ForeignCluster) bool {
	t := transitionOf(old, fc)
	if t != marking && t != staysMarked {
		return false
	}
	if _, set := fc.Annotations[liqojanitor.AllowDeleteAnnotation]; !set {
		return false
	}
	var before map[string]string
	if old != nil {
		before = old.Annotations
	}
	return differs(before, fc.Annotations, liqojanitor.AllowDeleteAnnotation)
}

// needsPermission reports whether the request must pass the break-glass SubjectAccessReview: it sets or
// removes the mark (rule 5), unpauses a marked cluster (rule 10), records a fence on one (rule 15), sets
// the deletion override on one (rule 17) or arms a bare mark on an unmarked one (rule 19).
func needsPermission(old, fc *liqov1beta1.ForeignCluster) bool {
	t := transitionOf(old, fc)
	return t == marking || t == unmarking || unpauses(old, fc) || fences(old, fc) || setsOverride(old, fc) || arms(old, fc)
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
	reasonMarkValue       = "MarkValue"
	reasonConfirmation    = "Confirmation"
	reasonLocalCluster    = "LocalCluster"
	reasonLiqoLookup      = "LiqoLookup"
	reasonDuplicate       = "Duplicate"
	reasonNoEvidence      = "NoEvidence"
	reasonCreateMarked    = "CreateMarked"
	reasonReachable       = "Reachable"
	reasonProviderAnswers = "ProviderAnswers"
	reasonLabelsLocked    = "LabelsLocked"
	reasonJanitorOwned    = "JanitorOwned"
	reasonNotStamped      = "NotStamped"
	reasonPermission      = "permission"
	reasonImmutable       = "Immutable"
	reasonStamps          = "StampsWithoutMark"
	reasonMarked          = "Marked"
	reasonUnmarked        = "Unmarked"
	reasonUnpaused        = "Unpaused"
	reasonFenceRecord     = "FenceRecord"
	reasonFenceUnmarked   = "FenceWithoutMark"
	reasonNothingToFence  = "NothingToFence"
	reasonFenced          = "Fenced"
	reasonEvidenceEarly   = "NoEvidenceBeforeMark"
	reasonArmed           = "KeysArmed"
	reasonOverride        = "DeleteOverride"
	reasonOverrideValue   = "DeleteOverrideValue"
	reasonOverrideSet     = "DeleteOverrideSet"
	reasonUninstallerMark = "MarkedByLiqoUninstaller"
	reasonUnpeering       = "UnpeeringRuns"
	reasonDeleted         = "Deleted"
	reasonOther           = "Other"
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
)

// lockedLabels are Liqo's labels that decide which ForeignCluster Liqo's lookup finds and whether Liqo's
// own webhook re-asserts it (rule 11).
var lockedLabels = []string{liqojanitor.RemoteClusterIDLabel, liqojanitor.WebhookSkipLabel}

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
		v.deny(reasonCreateMarked, checkNotCreate(r))
		v.deny(reasonConfirmation, checkConfirmation(r, true))
		v.deny(reasonLocalCluster, checkNotLocal(r))
		v.deny(reasonLiqoLookup, checkLiqoLookup(r))
		v.deny(reasonDuplicate, checkNoDuplicate(r))
		if !r.LiqoUninstaller { // rule 18: Liqo's uninstaller has no second key to give
			v.deny(reasonNoEvidence, checkEvidence(r))
		}
		v.deny(reasonReachable, checkUnreachable(r, opts))
		v.deny(reasonProviderAnswers, checkProbe(r))
		v.deny(reasonNotStamped, checkStamped(r))
		v.deny(reasonFenceUnmarked, checkNoFenceIntoTheMark(r))
		v.deny(reasonOverrideValue, checkOverrideValue(r))
		allowed = reasonMarked
		switch {
		case r.LiqoUninstaller && !setsOverride(r.Old, r.New):
			// rule 18: Liqo's uninstaller holds no break-glass verb; its mark is audited instead
			allowed = reasonUninstallerMark
		default:
			v.checkPermission(r, t)
		}
	case unmarking:
		v.checkPermission(r, t)
		if v.Allowed() {
			v.Warnings = append(v.Warnings, warnUnmarked(r.New))
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
	case notMarked:
		v.deny(reasonConfirmation, checkConfirmation(r, false))
		v.deny(reasonStamps, checkNoStampsWithoutMark(r))
		v.deny(reasonFenceUnmarked, checkNoFenceWithoutMark(r))
		v.deny(reasonEvidenceEarly, checkNoEvidenceBeforeTheMark(r))
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
	for _, key := range lockedLabels {
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
	cond := liqojanitor.APIServerStatus(r.New)
	switch {
	case cond == nil:
		return nil
	case cond.Status == liqov1beta1.ConditionStatusEstablished:
		return field.ErrorList{field.Forbidden(conditionsPath, msgReachable(r.New, cond))}
	case cond.LastTransitionTime.IsZero():
		// Liqo always stamps transitions; without a time there is no blip to wait out.
		return nil
	}
	since := r.Now.Sub(cond.LastTransitionTime.Time)
	if since < opts.MinUnreachable {
		return field.ErrorList{field.Forbidden(conditionsPath, msgTooRecent(r.New, cond, since, opts.MinUnreachable))}
	}
	return nil
}

// checkStamped: when the mark is set the stamps must be the mutating webhook's (rule 6); if they are not,
// the mutating webhook did not run, and the mark would go unaudited.
func checkStamped(r *inputs) field.ErrorList {
	if stampsCurrent(r.New, r.User.Username, r.Now) {
		return nil
	}
	return field.ErrorList{field.Forbidden(annotationsPath.Key(liqojanitor.MarkedByAnnotation), msgNotStamped(r.New))}
}

// fenceRecord is the operator's fence record as the mutating webhook writes it (rule 15): now, by the
// requester, naming the janitor's recorded return, with the counts the request carried (from either
// spelling, "<time> by <user>: <counts>[; fences the return at <time>]"; the whole value if it is neither).
func fenceRecord(value, user string, returned, now time.Time) string {
	counts := value
	if _, rest, ok := liqojanitor.ParseFenced(value); ok {
		if _, c, found := strings.Cut(rest, ": "); found {
			counts = c
		}
	}
	return liqojanitor.FenceRecord{At: now, By: user, Return: returned, Counts: counts}.String()
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
	rec, ok := liqojanitor.ParseFencedRecord(r.New.Annotations[liqojanitor.FencedAnnotation])
	returned, recorded := liqojanitor.ReturnRecordedAt(r.Old.Annotations)
	if ok && recorded && rec.By == r.User.Username && rec.Return.Equal(returned) &&
		!rec.At.After(r.Now.Add(clockSkew)) && r.Now.Sub(rec.At) <= stampWindow {
		return nil
	}
	return field.ErrorList{field.Forbidden(fencedPath, msgFenceRecord(r.New))}
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
// stamps (rule 6), and the operator's reason the clean-up's events quote (rule 14).
var immutableWhileMarked = []string{liqojanitor.ConfirmAnnotation, liqojanitor.MarkedByAnnotation,
	liqojanitor.MarkedAtAnnotation, liqojanitor.ReasonAnnotation}

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

// checkNoStampsWithoutMark: stamps are written only by the mutating webhook, together with the mark.
func checkNoStampsWithoutMark(r *inputs) field.ErrorList {
	var errs field.ErrorList
	for _, key := range []string{liqojanitor.MarkedByAnnotation, liqojanitor.MarkedAtAnnotation} {
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

// unmarkRemoves are the keys the mutating webhook removes in a request that removes the mark
// (rule 7): the stamps, the confirmation, the no-evidence key, the janitor's record of its grace window and
// of the unpeering, and the deletion override (rule 17). A cleanup annotation holding the grace-window plan
// goes too; one holding the summary of a clean-up that did happen stays.
var unmarkRemoves = []string{liqojanitor.ConfirmAnnotation, liqojanitor.MarkedByAnnotation, liqojanitor.MarkedAtAnnotation,
	liqojanitor.NoEvidenceAnnotation, liqojanitor.FirstSeenAnnotation, liqojanitor.GraceEndsAnnotation,
	liqojanitor.UnpeeringAnnotation, liqojanitor.AllowDeleteAnnotation, liqojanitor.FencedAnnotation}

// stamp is the mutating webhook's decision: on marking it writes marked-by and marked-at, always,
// replacing whatever the request carried (a replayed or hand-written marked-at must never shorten the
// grace period, rule 6), and on a mark by Liqo's uninstaller (rule 18) also the confirmation and a reason
// when the request carries none, and it drops a fence record (rule 15: a record placed before the mark
// never survives into it); on a fence record on a marked cluster, its time, user and the janitor's
// recorded return (rule 15; none recorded: left for the validating webhook to refuse); on unmarking it
// removes unmarkRemoves, the fence record among them (rule 7). It returns the annotations to set and the
// keys to remove.
func stamp(old, fc *liqov1beta1.ForeignCluster, user string, uninstaller bool, now time.Time) (set map[string]string, remove []string) {
	switch transitionOf(old, fc) {
	case marking:
		set = map[string]string{
			liqojanitor.MarkedByAnnotation: user,
			liqojanitor.MarkedAtAnnotation: now.UTC().Format(time.RFC3339),
		}
		if uninstaller {
			if _, ok := fc.Annotations[liqojanitor.ConfirmAnnotation]; !ok {
				set[liqojanitor.ConfirmAnnotation] = string(fc.Spec.ClusterID)
			}
			if _, ok := fc.Annotations[liqojanitor.ReasonAnnotation]; !ok {
				set[liqojanitor.ReasonAnnotation] = uninstallerReason(user)
			}
		}
		if _, ok := fc.Annotations[liqojanitor.FencedAnnotation]; ok {
			remove = append(remove, liqojanitor.FencedAnnotation)
		}
		return set, remove
	case staysMarked:
		returned, recorded := liqojanitor.ReturnRecordedAt(old.Annotations)
		if !fences(old, fc) || !recorded {
			return nil, nil
		}
		return map[string]string{liqojanitor.FencedAnnotation: fenceRecord(fc.Annotations[liqojanitor.FencedAnnotation], user, returned, now)}, nil
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

// uninstallerReason is the reason the gate writes on a mark by Liqo's uninstaller that carries none (rule 18).
func uninstallerReason(user string) string {
	return "marked by Liqo's uninstaller (" + user + ")"
}
