package webhook

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

func TestDecideDelete(t *testing.T) {
	t.Parallel()
	inProgress := liqojanitor.Unpeering{Phase: liqojanitor.UnpeeringInProgress, Left: []liqojanitor.LeftObject{{
		Kind: "FirewallConfiguration", Namespace: "liqo-tenant-provider-a", Name: "fw", HeldBy: "finalizer firewallconfigurations-controller.liqo.io/finalizer",
	}}}.String()
	complete := liqojanitor.Unpeering{Phase: liqojanitor.UnpeeringComplete}.String()
	tenant := []tenantNamespace{{Name: "liqo-tenant-provider-a"}}
	terminating := []tenantNamespace{{Name: "liqo-tenant-provider-a", Terminating: true}}
	overridden := with(marked, liqojanitor.AllowDeleteAnnotation, id)
	tests := map[string]struct {
		d           deletion
		wantAllowed bool
		wantCode    int32
		wantPaths   []string
		wantInMsg   []string
		wantReason  string
		wantWarning string
	}{
		"an unmarked ForeignCluster is deleted untouched, tenant namespace or not": {
			d: deletion{Old: fc(id, confirmed), TenantNamespaces: tenant}, wantAllowed: true, wantReason: reasonOther,
		},
		"a marked ForeignCluster whose tenant namespace exists stays (rule 16)": {
			d:         deletion{Old: fc(id, marked), TenantNamespaces: tenant},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/unpeering]"},
			wantInMsg: []string{"tenant namespace liqo-tenant-provider-a still exists", "WITHOUT the mark",
				"kubectl delete namespace liqo-tenant-provider-a", "liqoctl force unpeer provider-a",
				"kubectl liqo-janitor status provider-a says unpeering complete",
				"kubectl annotate foreigncluster provider-a liqo-janitor.io/allow-delete-while-unpeering=provider-a --overwrite"},
			wantReason: reasonUnpeering,
		},
		"a Terminating tenant namespace still counts; the next step is to wait": {
			d:         deletion{Old: fc(id, marked), TenantNamespaces: terminating},
			wantCode:  http.StatusUnprocessableEntity,
			wantInMsg: []string{"tenant namespace liqo-tenant-provider-a still Terminating", "wait until kubectl liqo-janitor status provider-a"},
		},
		"a marked ForeignCluster whose janitor's record is in progress stays, with no namespace left": {
			d:         deletion{Old: fc(id, with(marked, liqojanitor.UnpeeringAnnotation, inProgress))},
			wantCode:  http.StatusUnprocessableEntity,
			wantInMsg: []string{"liqo-janitor's record: unpeering in progress: 1 object left: FirewallConfiguration liqo-tenant-provider-a/fw"},
		},
		"an unreadable record counts as running": {
			d:         deletion{Old: fc(id, with(marked, liqojanitor.UnpeeringAnnotation, "{"))},
			wantCode:  http.StatusUnprocessableEntity,
			wantInMsg: []string{"liqo-janitor's record: unreadable"},
		},
		"the tenant namespaces cannot be listed: refused (fail closed)": {
			d:         deletion{Old: fc(id, marked), TenantNamespacesErr: errors.New("timeout")},
			wantCode:  http.StatusUnprocessableEntity,
			wantInMsg: []string{"cannot be listed (timeout)"},
		},
		"a marked ForeignCluster whose record is complete and whose namespace is gone is deleted": {
			d: deletion{Old: fc(id, with(marked, liqojanitor.UnpeeringAnnotation, complete))}, wantAllowed: true, wantReason: reasonDeleted,
		},
		"a marked ForeignCluster with no record and no namespace is deleted (the janitor never ran)": {
			d: deletion{Old: fc(id, marked)}, wantAllowed: true, wantReason: reasonDeleted,
		},
		"a complete record does not outweigh a namespace that is back": {
			d:        deletion{Old: fc(id, with(marked, liqojanitor.UnpeeringAnnotation, complete)), TenantNamespaces: tenant},
			wantCode: http.StatusUnprocessableEntity,
		},
		"the override with the verb lets it go, with a warning (rule 17)": {
			d: deletion{Old: fc(id, overridden), TenantNamespaces: tenant, permission: permitted}, wantAllowed: true,
			wantReason: reasonOverride, wantWarning: "deleted while its unpeering runs, by the break-glass override",
		},
		"the override without the verb is forbidden": {
			d:         deletion{Old: fc(id, overridden), TenantNamespaces: tenant, permission: permission{Reason: "no RBAC policy matched"}},
			wantCode:  http.StatusForbidden,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/allow-delete-while-unpeering]"},
			wantInMsg: []string{`user "alice" may not use the break-glass override`, "kubectl create clusterrolebinding mark-unreachable-alice"},
		},
		"the override when the verb cannot be checked is forbidden": {
			d:        deletion{Old: fc(id, overridden), TenantNamespaces: tenant, permission: permission{Err: errors.New("timeout")}},
			wantCode: http.StatusForbidden,
		},
		"an override naming another cluster is no override": {
			d:         deletion{Old: fc(id, with(marked, liqojanitor.AllowDeleteAnnotation, "provider-b")), TenantNamespaces: tenant, permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantInMsg: []string{`its liqo-janitor.io/allow-delete-while-unpeering is "provider-b", not the cluster ID`},
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
