package webhook

import (
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// The deletion rules (16, 17, 30): a marked ForeignCluster stays while its unpeering runs, and while a
// return of its provider is recorded and not fenced. Liqo's foreigncluster controller re-creates a deleted
// ForeignCluster within seconds from the peering objects left WITHOUT the mark: any object of
// liqojanitor.PeeringKinds (Configuration, Connection, GatewayServer/Client, Tenant, Identity,
// VirtualNode, virtual Node) labelled liqo.io/remote-cluster-id=<id> enqueues it, and when
// GetForeignClusterByID finds none it creates one named <id> with only that label
// (foreigncluster_controller.go foreignclusterEnqueuer and Reconcile, v1.0.3 to v1.2.0). Liqo ≥ v1.1's
// IsDead is then false, so its crd-replicator and VirtualNode drain wait for the provider as if it were
// alive, and the janitor's record and first sight go with the old object. A returned provider may still
// run this consumer's workloads: deleting the ForeignCluster would end the janitor's record of the return,
// which is the fence's reason to be run.

// deletion is everything the decision on a DELETE depends on.
type deletion struct {
	// Old is the ForeignCluster being deleted.
	Old *liqov1beta1.ForeignCluster
	// User is the requesting user.
	User authenticationv1.UserInfo
	// Peering are the objects left that Liqo re-creates a ForeignCluster of Old's cluster ID from (at most
	// one of each kind: liqojanitor.PeeringLeft), and PeeringErr why they could not be listed (the deletion
	// is then refused: fail closed).
	Peering    []liqojanitor.PeeringObject
	PeeringErr error
	// Return is the provider's return recorded for the current mark (on Old, or kept in the janitor's
	// namespace), nil if none; ReturnErr why the janitor's kept records could not be read (refused: fail
	// closed).
	Return    *recordedReturn
	ReturnErr error
	// permission is the break-glass review; only consulted when Old carries the override (rule 17).
	permission permission
}

// recordedReturn is a return of the provider the janitor recorded for the current mark (rule 30).
type recordedReturn struct {
	// At is when the janitor saw the provider answer, How what showed it.
	At  time.Time
	How string
	// Kept: found only in the janitor's records in its namespace (its write onto the ForeignCluster was
	// refused, or has not happened yet).
	Kept bool
}

// returnOnForeignCluster is the return recorded in fc's cleanup annotation for its current mark (only the
// janitor's identity writes it: rule 14).
func returnOnForeignCluster(fc *liqov1beta1.ForeignCluster) *recordedReturn {
	at, ok := liqojanitor.ReturnRecordedAt(fc.Annotations)
	if !ok {
		return nil
	}
	rec, _ := liqojanitor.ParseReturnRecord(fc.Annotations[liqojanitor.CleanupAnnotation])
	return &recordedReturn{At: at, How: rec.How}
}

// keptReturn is the return the janitor keeps for fc's current mark in its records ConfigMap cm, if any.
func keptReturn(cm *corev1.ConfigMap, fc *liqov1beta1.ForeignCluster) *recordedReturn {
	rec, ok := liqojanitor.KeptRecordOf(cm, fc.UID, fc.Annotations)
	if !ok || rec.Return == nil {
		return nil
	}
	// A kept time that does not read is still a return: it holds, and no fence record can name it.
	at, _ := time.Parse(time.RFC3339, rec.Return.At)
	return &recordedReturn{At: at, How: rec.Return.How, Kept: true}
}

// fencedReturn reports whether fc's fence record is the gate's stamp (rule 15) of a fence of the return r
// (liqojanitor.FenceRecord.Fences, as the janitor reads it).
func fencedReturn(fc *liqov1beta1.ForeignCluster, r *recordedReturn) bool {
	rec, ok := liqojanitor.ParseFenceRecord(fc.Annotations[liqojanitor.FencedAnnotation])
	return ok && rec.Fences(r.At)
}

// overrides reports whether fc carries the break-glass override of rules 16 and 30, naming its cluster ID.
func overrides(fc *liqov1beta1.ForeignCluster) bool {
	return fc.Spec.ClusterID != "" && fc.Annotations[liqojanitor.AllowDeleteAnnotation] == string(fc.Spec.ClusterID)
}

// unpeeringRuns reports whether the janitor's record of the unpeering says it has not ended: a record
// that is there and not Complete (one the gate cannot read counts as running: only the janitor writes it).
func unpeeringRuns(fc *liqov1beta1.ForeignCluster) (liqojanitor.Unpeering, bool) {
	if _, present := fc.Annotations[liqojanitor.UnpeeringAnnotation]; !present {
		return liqojanitor.Unpeering{}, false
	}
	u, ok := liqojanitor.UnpeeringOf(fc.Annotations)
	return u, !ok || !u.Complete()
}

// running reports whether the unpeering of d.Old still runs (rule 16): a peering object is left (or
// cannot be ruled out) or the janitor's record is not complete.
func (d *deletion) running() bool {
	_, recordRuns := unpeeringRuns(d.Old)
	return len(d.Peering) > 0 || d.PeeringErr != nil || recordRuns
}

// unfenced reports whether a return of d.Old's provider is recorded and not fenced, or cannot be ruled
// out (rule 30).
func (d *deletion) unfenced() bool {
	return d.ReturnErr != nil || (d.Return != nil && !fencedReturn(d.Old, d.Return))
}

// decideDelete applies rules 16, 17 and 30 to a request that deletes a ForeignCluster: a marked one whose
// unpeering still runs, or whose provider's recorded return is not fenced, stays, unless it carries the
// override and the requester holds the break-glass verb.
func decideDelete(d *deletion) verdict {
	var v verdict
	switch {
	case !liqojanitor.IsMarked(d.Old.Annotations):
		v.Reason = reasonOther
	case !d.running() && !d.unfenced():
		v.Reason = reasonDeleted
	case !overrides(d.Old):
		if d.running() {
			v.deny(reasonUnpeering, field.ErrorList{field.Forbidden(annotationsPath.Key(liqojanitor.UnpeeringAnnotation), msgUnpeeringRuns(d))})
		}
		if d.unfenced() {
			v.deny(reasonUnfencedReturn, field.ErrorList{field.Forbidden(fencedPath, msgUnfencedReturn(d))})
		}
	case d.permission.Err != nil:
		v.deny(reasonPermission, field.ErrorList{field.Forbidden(overridePath, msgPermissionUnknown(d.Old, d.permission.Err))})
		v.unauthorized = true
	case !d.permission.Allowed:
		v.deny(reasonPermission, field.ErrorList{field.Forbidden(overridePath, msgOverrideDenied(d))})
		v.unauthorized = true
	default:
		v.Reason = reasonOverride
		v.Warnings = append(v.Warnings, warnOverridden(d))
	}
	return v
}
