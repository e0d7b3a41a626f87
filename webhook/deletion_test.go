package webhook

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

func TestDecideDelete(t *testing.T) {
	t.Parallel()
	inProgress := liqojanitor.Unpeering{Phase: liqojanitor.UnpeeringInProgress, Left: []liqojanitor.LeftObject{{
		Kind: "FirewallConfiguration", Namespace: "liqo-tenant-provider-a", Name: "fw", HeldBy: "finalizer firewallconfigurations-controller.liqo.io/finalizer",
	}}}.String()
	complete := liqojanitor.Unpeering{Phase: liqojanitor.UnpeeringComplete}.String()
	tenant := []liqojanitor.PeeringObject{{Kind: "Tenant", Namespace: "liqo-tenant-provider-a", Name: "provider-a"}}
	terminating := []liqojanitor.PeeringObject{{Kind: "Tenant", Namespace: "liqo-tenant-provider-a", Name: "provider-a", Terminating: true}}
	virtualNode := []liqojanitor.PeeringObject{{Kind: "Node", Name: "liqo-provider-a"}}
	overridden := with(marked, liqojanitor.AllowDeleteAnnotation, id)
	done := with(marked, liqojanitor.UnpeeringAnnotation, complete)
	// the return on the ForeignCluster (returned), and one the janitor kept in its namespace only
	onFC := returnOnForeignCluster(fc(id, returned))
	kept := &recordedReturn{At: returnedAt, How: "Liqo's APIServerStatus turned Established", Kept: true}
	fencedOnFC := with(returned, liqojanitor.FencedAnnotation, fence(now, "alice", returnedAt))
	tests := map[string]struct {
		d           deletion
		wantAllowed bool
		wantCode    int32
		wantPaths   []string
		wantInMsg   []string
		wantReason  string
		wantWarning string
	}{
		"an unmarked ForeignCluster is deleted untouched, peering objects or not": {
			d: deletion{Old: fc(id, confirmed), Peering: tenant}, wantAllowed: true, wantReason: reasonOther,
		},
		"a marked ForeignCluster whose Tenant is left stays (rule 16)": {
			d:         deletion{Old: fc(id, marked), Peering: tenant},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/unpeering]"},
			wantInMsg: []string{"left that Liqo re-creates it from: Tenant liqo-tenant-provider-a/provider-a", "WITHOUT the mark",
				"kubectl delete namespace liqo-tenant-provider-a", "liqoctl force unpeer provider-a",
				"kubectl get nodes -l liqo.io/type=virtual-node,liqo.io/remote-cluster-id=provider-a",
				"tenants.authentication.liqo.io,identities.authentication.liqo.io,virtualnodes.offloading.liqo.io -A -l liqo.io/remote-cluster-id=provider-a",
				"kubectl liqo-janitor status provider-a says unpeering complete",
				"kubectl annotate foreigncluster provider-a liqo-janitor.io/allow-delete-while-unpeering=provider-a --overwrite"},
			wantReason: reasonUnpeering,
		},
		"a Terminating object still counts; the next step is to wait": {
			d:         deletion{Old: fc(id, marked), Peering: terminating},
			wantCode:  http.StatusUnprocessableEntity,
			wantInMsg: []string{"Tenant liqo-tenant-provider-a/provider-a (Terminating)", "Next: wait until kubectl liqo-janitor status provider-a"},
		},
		"a virtual Node left holds it, with its own next step": {
			d:         deletion{Old: fc(id, marked), Peering: virtualNode},
			wantCode:  http.StatusUnprocessableEntity,
			wantInMsg: []string{"left that Liqo re-creates it from: Node liqo-provider-a", "kubectl delete node liqo-provider-a"},
		},
		"a marked ForeignCluster whose janitor's record is in progress stays, with nothing left to list": {
			d:         deletion{Old: fc(id, with(marked, liqojanitor.UnpeeringAnnotation, inProgress))},
			wantCode:  http.StatusUnprocessableEntity,
			wantInMsg: []string{"liqo-janitor's record: unpeering in progress: 1 object left: FirewallConfiguration liqo-tenant-provider-a/fw"},
		},
		"an unreadable record counts as running": {
			d:         deletion{Old: fc(id, with(marked, liqojanitor.UnpeeringAnnotation, "{"))},
			wantCode:  http.StatusUnprocessableEntity,
			wantInMsg: []string{"liqo-janitor's record: unreadable"},
		},
		"the peering objects cannot be listed: refused (fail closed)": {
			d:         deletion{Old: fc(id, marked), PeeringErr: errors.New("timeout")},
			wantCode:  http.StatusUnprocessableEntity,
			wantInMsg: []string{"cannot be listed (timeout)"},
		},
		"a marked ForeignCluster whose record is complete and with nothing left is deleted": {
			d: deletion{Old: fc(id, done)}, wantAllowed: true, wantReason: reasonDeleted,
		},
		"a marked ForeignCluster with no record and nothing left is deleted (the janitor never ran)": {
			d: deletion{Old: fc(id, marked)}, wantAllowed: true, wantReason: reasonDeleted,
		},
		"a complete record does not outweigh a peering object that is back": {
			d:        deletion{Old: fc(id, done), Peering: tenant},
			wantCode: http.StatusUnprocessableEntity,
		},
		"the override with the verb lets it go, with a warning (rule 17)": {
			d: deletion{Old: fc(id, overridden), Peering: tenant, permission: permitted}, wantAllowed: true,
			wantReason: reasonOverride, wantWarning: "deleted while its unpeering runs (left that Liqo re-creates it from: Tenant",
		},
		"the override without the verb is forbidden": {
			d:         deletion{Old: fc(id, overridden), Peering: tenant, permission: permission{Reason: "no RBAC policy matched"}},
			wantCode:  http.StatusForbidden,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/allow-delete-while-unpeering]"},
			wantInMsg: []string{`user "alice" may not use the break-glass override`, "kubectl create clusterrolebinding mark-unreachable-alice"},
		},
		"the override when the verb cannot be checked is forbidden": {
			d:        deletion{Old: fc(id, overridden), Peering: tenant, permission: permission{Err: errors.New("timeout")}},
			wantCode: http.StatusForbidden,
		},
		"an override naming another cluster is no override": {
			d:         deletion{Old: fc(id, with(marked, liqojanitor.AllowDeleteAnnotation, "provider-b")), Peering: tenant, permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantInMsg: []string{`its liqo-janitor.io/allow-delete-while-unpeering is "provider-b", not the cluster ID`},
		},
		"an unfenced return recorded on the ForeignCluster holds it after the unpeering (rule 30)": {
			d:         deletion{Old: fc(id, with(returned, liqojanitor.UnpeeringAnnotation, complete)), Return: onFC},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/fenced]"},
			wantInMsg: []string{"liqo-janitor recorded its return at " + liqojanitor.RecordTime(returnedAt) + " (Liqo's APIServerStatus turned Established)",
				"may still run this consumer's workloads", "kubectl liqo-janitor fence provider-a --provider-kubeconfig <provider kubeconfig>",
				"liqo-janitor.io/allow-delete-while-unpeering=provider-a --overwrite"},
			wantReason: reasonUnfencedReturn,
		},
		"a return kept only in the janitor's namespace holds it too, and says why it is not on the ForeignCluster": {
			d:         deletion{Old: fc(id, done), Return: kept},
			wantCode:  http.StatusUnprocessableEntity,
			wantInMsg: []string{"liqo-janitor kept its return at " + liqojanitor.RecordTime(returnedAt), "ConfigMap liqo-janitor-records", "another admission webhook"},
		},
		"the kept records cannot be read: refused (fail closed)": {
			d:         deletion{Old: fc(id, done), ReturnErr: errors.New("forbidden")},
			wantCode:  http.StatusUnprocessableEntity,
			wantInMsg: []string{"records of returned providers cannot be read (forbidden)", "--namespace"},
		},
		"a stamped fence of that very return lets it go": {
			d: deletion{Old: fc(id, with(fencedOnFC, liqojanitor.UnpeeringAnnotation, complete)), Return: onFC}, wantAllowed: true, wantReason: reasonDeleted,
		},
		"a fence of another return, or one the gate did not stamp, fences nothing": {
			d: deletion{Old: fc(id, with(returned, liqojanitor.UnpeeringAnnotation, complete,
				liqojanitor.FencedAnnotation, fence(now, "alice", returnedAt.Add(-time.Minute)))), Return: onFC},
			wantCode:  http.StatusUnprocessableEntity,
			wantInMsg: []string{"does not fence this return"},
		},
		"an unstamped fence record fences nothing": {
			d: deletion{Old: fc(id, with(returned, liqojanitor.UnpeeringAnnotation, complete,
				liqojanitor.FencedAnnotation, fence(now, "alice", time.Time{}))), Return: onFC},
			wantCode: http.StatusUnprocessableEntity,
		},
		"a fence stamped before the return fences nothing": {
			d: deletion{Old: fc(id, with(returned, liqojanitor.UnpeeringAnnotation, complete,
				liqojanitor.FencedAnnotation, fence(returnedAt.Add(-time.Minute), "alice", returnedAt))), Return: onFC},
			wantCode: http.StatusUnprocessableEntity,
		},
		"both hold: both are said": {
			d:          deletion{Old: fc(id, returned), Peering: tenant, Return: onFC},
			wantCode:   http.StatusUnprocessableEntity,
			wantPaths:  []string{"metadata.annotations[liqo-janitor.io/unpeering]", "metadata.annotations[liqo-janitor.io/fenced]"},
			wantReason: reasonUnpeering,
		},
		"the override with the verb lets an unfenced return go, with a warning naming the fence": {
			d: deletion{Old: fc(id, with(returned, liqojanitor.AllowDeleteAnnotation, id)), Return: onFC, permission: permitted}, wantAllowed: true,
			wantReason: reasonOverride, wantWarning: "kubectl liqo-janitor fence provider-a",
		},
		"the override without the verb does not let an unfenced return go": {
			d:         deletion{Old: fc(id, with(returned, liqojanitor.AllowDeleteAnnotation, id)), Return: onFC, permission: permission{}},
			wantCode:  http.StatusForbidden,
			wantInMsg: []string{"while its provider answered again after the mark"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := tc.d
			d.User = alice
			v := decideDelete(&d)
			assertVerdict(t, &v, d.Old, tc.wantAllowed, tc.wantCode, tc.wantPaths, tc.wantInMsg)
			if tc.wantReason != "" && v.Reason != tc.wantReason {
				t.Errorf("Reason = %q, want %q", v.Reason, tc.wantReason)
			}
			if tc.wantWarning != "" && (len(v.Warnings) != 1 || !strings.Contains(v.Warnings[0], tc.wantWarning)) {
				t.Errorf("warnings = %q, want one containing %q", v.Warnings, tc.wantWarning)
			}
		})
	}
}
