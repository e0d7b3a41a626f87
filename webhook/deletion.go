package webhook

import (
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// The deletion rules (16, 17): a marked ForeignCluster stays while its unpeering runs. Liqo's
// foreigncluster controller re-creates a deleted ForeignCluster within seconds from the peering objects
// left WITHOUT the mark: any Configuration, Connection, GatewayServer/Client, Tenant, Identity, VirtualNode
// or virtual Node labelled liqo.io/remote-cluster-id=<id> enqueues it, and when GetForeignClusterByID
// finds none it creates one named <id> with only that label (foreigncluster_controller.go
// foreignclusterEnqueuer and Reconcile, v1.0.3 to v1.2.0). Liqo ≥ v1.1's IsDead is then false, so its
// crd-replicator and VirtualNode drain wait for the provider as if it were alive, and the janitor's
// record and first sight go with the old object.

// tenantNamespace is a tenant namespace of the ForeignCluster's cluster ID, found live as Liqo finds it.
type tenantNamespace struct {
	// Name is the namespace's name.
	Name string
	// Terminating: it is being deleted (it still counts: its objects are still there).
	Terminating bool
}

// deletion is everything the decision on a DELETE depends on.
type deletion struct {
	// Old is the ForeignCluster being deleted.
	Old *liqov1beta1.ForeignCluster
	// User is the requesting user.
	User authenticationv1.UserInfo
	// TenantNamespaces are the tenant namespaces of Old's cluster ID (labelled liqo.io/tenant-namespace and
	// liqo.io/remote-cluster-id=<spec.clusterID>, or named in status.tenantNamespace.local), and
	// TenantNamespacesErr why they could not be read (the deletion is then refused: fail closed).
	TenantNamespaces    []tenantNamespace
	TenantNamespacesErr error
	// permission is the break-glass review; only consulted when Old carries the override (rule 17).
	permission permission
}

// overrides reports whether fc carries the break-glass override of rule 16, naming its cluster ID.
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

// running reports whether the unpeering of d.Old still runs: a tenant namespace exists (or cannot be ruled
// out) or the janitor's record is not complete.
func (d *deletion) running() bool {
	_, recordRuns := unpeeringRuns(d.Old)
	return len(d.TenantNamespaces) > 0 || d.TenantNamespacesErr != nil || recordRuns
}

// decideDelete applies rules 16 and 17 to a request that deletes a ForeignCluster: a marked one whose
// unpeering still runs stays, unless it carries the override and the requester holds the break-glass verb.
func decideDelete(d *deletion) verdict {
	var v verdict
	switch {
	case !liqojanitor.IsMarked(d.Old.Annotations):
		v.Reason = reasonOther
	case !d.running():
		v.Reason = reasonDeleted
	case !overrides(d.Old):
		v.deny(reasonUnpeering, field.ErrorList{field.Forbidden(annotationsPath.Key(liqojanitor.UnpeeringAnnotation), msgUnpeeringRuns(d))})
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
