package webhook

import (
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/liqo-janitor/liqo-janitor/janitor/liqoapi"
)

// Options tunes the gate's rules.
type Options struct {
	// MinUnreachable is how long the APIServerStatus condition must have been not Established before the
	// mark is accepted: a blip is not a death.
	MinUnreachable time.Duration
}

// Permission is the outcome of the break-glass SubjectAccessReview (verb mark-unreachable on
// foreignclusters.core.liqo.io).
type Permission struct {
	// Allowed is the review's verdict.
	Allowed bool
	// Reason is the authorizer's explanation, if any.
	Reason string
	// Err is set when the review itself could not be made; the gate then fails closed.
	Err error
}

// Review is everything a decision depends on.
type Review struct {
	// Old is the object before the request; nil on CREATE.
	Old *liqov1beta1.ForeignCluster
	// New is the object the request would store (after mutation).
	New *liqov1beta1.ForeignCluster
	// User is the requesting user.
	User authenticationv1.UserInfo
	// LocalClusterID is this cluster's own Liqo cluster ID; LocalClusterIDErr says why it could not be read.
	LocalClusterID    string
	LocalClusterIDErr error
	// Permission is the break-glass review; only consulted when the request sets or removes the mark.
	Permission Permission
	// Now is the time of the request.
	Now time.Time
}

// Transition is what a request does to the mark.
type Transition int

const (
	// NotMarked means the mark is set neither before nor after the request.
	NotMarked Transition = iota
	// Marking means the request sets the mark (or creates a marked ForeignCluster).
	Marking
	// Unmarking means the request removes the mark.
	Unmarking
	// StaysMarked means the mark is set before and after the request.
	StaysMarked
)

// TransitionOf classifies a request by the mark on its old (nil on CREATE) and new objects.
func TransitionOf(old, fc *liqov1beta1.ForeignCluster) Transition {
	before := old != nil && liqoapi.IsMarked(old.Annotations)
	after := fc != nil && liqoapi.IsMarked(fc.Annotations)
	switch {
	case after && !before:
		return Marking
	case before && !after:
		return Unmarking
	case before && after:
		return StaysMarked
	default:
		return NotMarked
	}
}

// NeedsPermission reports whether the request must pass the break-glass SubjectAccessReview.
func NeedsPermission(t Transition) bool { return t == Marking || t == Unmarking }

// NeedsLocalClusterID reports whether the decision needs the local cluster ID.
func NeedsLocalClusterID(t Transition) bool { return t == Marking }

// Verdict is the gate's answer to a request.
type Verdict struct {
	// Errors are the reasons for a denial; empty means allowed.
	Errors field.ErrorList
	// Warnings are returned to the client whether or not the request is allowed.
	Warnings []string
	// unauthorized marks a denial for lack of the break-glass permission (HTTP 403, not 422).
	unauthorized bool
}

// Allowed reports whether the request may proceed.
func (v *Verdict) Allowed() bool { return len(v.Errors) == 0 }

var (
	annotationsPath = field.NewPath("metadata", "annotations")
	markPath        = annotationsPath.Key(liqoapi.MarkAnnotation)
	confirmPath     = annotationsPath.Key(liqoapi.ConfirmAnnotation)
	clusterIDPath   = field.NewPath("spec", "clusterID")
	conditionsPath  = field.NewPath("status", "conditions")
)

// Decide applies the gate's rules (design.md, "The gate: rules") to a request that creates or updates a
// ForeignCluster.
func Decide(r *Review, opts Options) Verdict {
	var v Verdict
	v.Errors = append(v.Errors, checkMarkValue(r)...)
	t := TransitionOf(r.Old, r.New)
	switch t {
	case Marking:
		v.Errors = append(v.Errors, checkConfirmation(r, true)...)
		v.Errors = append(v.Errors, checkNotLocal(r)...)
		v.Errors = append(v.Errors, checkUnreachable(r, opts)...)
		v.Errors = append(v.Errors, checkStamped(r)...)
		v.checkPermission(r, t)
	case Unmarking:
		v.checkPermission(r, t)
		if v.Allowed() {
			v.Warnings = append(v.Warnings, warnUnmarked(r.New))
		}
	case StaysMarked:
		v.Errors = append(v.Errors, checkImmutable(r)...)
	case NotMarked:
		v.Errors = append(v.Errors, checkConfirmation(r, false)...)
		v.Errors = append(v.Errors, checkNoStampsWithoutMark(r)...)
	}
	return v
}

// checkMarkValue: the mark's value must be exactly "true" (rule 2), whenever a request sets or changes it.
func checkMarkValue(r *Review) field.ErrorList {
	value, ok := r.New.Annotations[liqoapi.MarkAnnotation]
	if !ok || value == liqoapi.MarkValue || !changed(r, liqoapi.MarkAnnotation) {
		return nil
	}
	return field.ErrorList{field.Invalid(markPath, value, msgMarkValue(r.New))}
}

// checkConfirmation: the confirmation must equal spec.clusterID when the mark is set (rule 1); a wrong
// confirmation added ahead of the mark is refused at once, so the mistake shows where it is made.
func checkConfirmation(r *Review, marking bool) field.ErrorList {
	value, ok := r.New.Annotations[liqoapi.ConfirmAnnotation]
	switch {
	case !ok && marking:
		return field.ErrorList{field.Required(confirmPath, msgConfirmMissing(r.New))}
	case !ok || value == string(r.New.Spec.ClusterID):
		return nil
	case marking || changed(r, liqoapi.ConfirmAnnotation):
		return field.ErrorList{field.Invalid(confirmPath, value, msgConfirmWrong(r.New))}
	}
	return nil
}

// checkNotLocal: a cluster cannot declare itself dead; fail closed when the local ID is unknown (rule 3).
func checkNotLocal(r *Review) field.ErrorList {
	switch {
	case r.LocalClusterIDErr != nil:
		return field.ErrorList{field.Forbidden(clusterIDPath, msgLocalUnknown(r.New, r.LocalClusterIDErr))}
	case string(r.New.Spec.ClusterID) == r.LocalClusterID:
		return field.ErrorList{field.Forbidden(clusterIDPath, msgLocal(r.New))}
	}
	return nil
}

// checkUnreachable is the reachability veto (rule 4): Liqo must not see the provider answering, and must
// not have seen it answering for at least MinUnreachable. No APIServerStatus condition counts as unreachable.
func checkUnreachable(r *Review, opts Options) field.ErrorList {
	cond := apiServerStatus(r.New)
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

// apiServerStatus returns the first APIServerStatus condition, the one Liqo's own IsDead reads.
func apiServerStatus(fc *liqov1beta1.ForeignCluster) *liqov1beta1.Condition {
	for i := range fc.Status.Conditions {
		if fc.Status.Conditions[i].Type == liqov1beta1.APIServerStatusCondition {
			return &fc.Status.Conditions[i]
		}
	}
	return nil
}

// checkStamped: when the mark is set the stamps must be the mutating webhook's (rule 6); if they are not,
// the mutating webhook did not run, and the mark would go unaudited.
func checkStamped(r *Review) field.ErrorList {
	if StampsCurrent(r.New.Annotations, r.User.Username, r.Now) {
		return nil
	}
	return field.ErrorList{field.Forbidden(annotationsPath.Key(liqoapi.MarkedByAnnotation), msgNotStamped(r.New))}
}

// checkImmutable: while the mark is set, the confirmation and the stamps do not change (rule 6).
func checkImmutable(r *Review) field.ErrorList {
	var errs field.ErrorList
	for _, key := range []string{liqoapi.ConfirmAnnotation, liqoapi.MarkedByAnnotation, liqoapi.MarkedAtAnnotation} {
		if changed(r, key) {
			errs = append(errs, field.Forbidden(annotationsPath.Key(key), msgImmutable(r.New, key)))
		}
	}
	return errs
}

// checkNoStampsWithoutMark: stamps are written only by the mutating webhook, together with the mark.
func checkNoStampsWithoutMark(r *Review) field.ErrorList {
	var errs field.ErrorList
	for _, key := range []string{liqoapi.MarkedByAnnotation, liqoapi.MarkedAtAnnotation} {
		if _, ok := r.New.Annotations[key]; ok && changed(r, key) {
			errs = append(errs, field.Forbidden(annotationsPath.Key(key), msgStampWithoutMark(r.New, key)))
		}
	}
	return errs
}

// checkPermission is the break-glass rule (rule 5), for setting and for removing the mark.
func (v *Verdict) checkPermission(r *Review, t Transition) {
	switch {
	case r.Permission.Err != nil:
		v.Errors = append(v.Errors, field.Forbidden(markPath, msgPermissionUnknown(r.New, r.Permission.Err)))
	case !r.Permission.Allowed:
		v.Errors = append(v.Errors, field.Forbidden(markPath, msgPermissionDenied(r.New, r.User.Username, t, r.Permission.Reason)))
	default:
		return
	}
	v.unauthorized = true
}

// changed reports whether the request adds, removes or changes the annotation key.
func changed(r *Review, key string) bool {
	newValue, inNew := r.New.Annotations[key]
	if r.Old == nil {
		return inNew
	}
	oldValue, inOld := r.Old.Annotations[key]
	return inNew != inOld || newValue != oldValue
}

// stampWindow is how old a stamp may be and still count as this request's own: long enough to cover the
// webhook being re-invoked within one request (reinvocationPolicy IfNeeded) or the request being replayed.
const (
	stampWindow = time.Minute
	clockSkew   = 5 * time.Second
)

// StampsCurrent reports whether annotations carry stamps this request could have written: marked-by is
// the requesting user and marked-at is a moment of the last minute. Anything else is replaced.
func StampsCurrent(annotations map[string]string, user string, now time.Time) bool {
	if annotations[liqoapi.MarkedByAnnotation] != user {
		return false
	}
	at, err := time.Parse(time.RFC3339, annotations[liqoapi.MarkedAtAnnotation])
	if err != nil {
		return false
	}
	return !at.After(now.Add(clockSkew)) && now.Sub(at) <= stampWindow
}

// Stamp is the mutating webhook's decision: on marking it writes marked-by and marked-at (replacing any a
// user supplied, keeping ones this same request already wrote); on unmarking it removes the stamps and the
// confirmation. It returns the annotations to set and the keys to remove.
func Stamp(old, fc *liqov1beta1.ForeignCluster, user string, now time.Time) (set map[string]string, remove []string) {
	switch TransitionOf(old, fc) {
	case Marking:
		if StampsCurrent(fc.Annotations, user, now) {
			return nil, nil
		}
		return map[string]string{
			liqoapi.MarkedByAnnotation: user,
			liqoapi.MarkedAtAnnotation: now.UTC().Format(time.RFC3339),
		}, nil
	case Unmarking:
		for _, key := range []string{liqoapi.ConfirmAnnotation, liqoapi.MarkedByAnnotation, liqoapi.MarkedAtAnnotation} {
			if _, ok := fc.Annotations[key]; ok {
				remove = append(remove, key)
			}
		}
		return nil, remove
	default:
		return nil, nil
	}
}
