package manifests_test

import (
	"maps"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// grant is one resource a role allows verbs on; Namespace "" means cluster-wide.
type grant struct {
	Namespace, Group, Resource string
}

// needed is what the code calls, from the +kubebuilder:rbac markers in janitor/ (controller_setup.go, target_fabric.go,
// internal/liqoversion, internal/unpeering) and webhook/gate.go,
// plus leader election (a Lease and the core Events client-go records, in the install namespace). A new
// marker must be added here on purpose.
var needed = map[grant][]string{
	{"", "core.liqo.io", "foreignclusters"}:            {"get", "list", "patch", "watch"},
	{"", "authentication.liqo.io", "resourceslices"}:   {"get", "list", "patch", "watch"},
	{"", "authentication.liqo.io", "renews"}:           {"get", "list", "patch", "watch"},
	{"", "offloading.liqo.io", "namespacemaps"}:        {"get", "list", "patch", "watch"},
	{"", "offloading.liqo.io", "namespaceoffloadings"}: {"get", "list", "patch", "watch"},
	{"", "offloading.liqo.io", "virtualnodes"}:         {"get", "list", "watch"},
	{"", "", "nodes"}:               {"get", "list", "watch"},
	{"", "", "namespaces"}:          {"get", "list", "watch"},
	{"", "", "pods"}:                {"delete", "get", "list", "watch"},
	{"", "events.k8s.io", "events"}: {"create", "patch"},
	{"", "authorization.k8s.io", "subjectaccessreviews"}: {"create"},
	{"", "authentication.k8s.io", "tokenreviews"}:        {"create"}, // the metrics endpoint's authentication
	{liqoNS, "", "configmaps"}:                           {"get", "list", "watch"},
	// janitor rules 12 and 13: the installed Liqo's version (its controller-manager, by name, else two CRDs by
	// name), the legacy InternalFabric finalizer, and what holds a dead cluster's tenant namespace
	{liqoNS, "apps", "deployments"}:                           {"get"},
	{"", "apiextensions.k8s.io", "customresourcedefinitions"}: {"get"},
	{"", "networking.liqo.io", "internalfabrics"}:             {"get", "list", "patch"},
	{"", "networking.liqo.io", "routeconfigurations"}:         {"list"},
	{"", "networking.liqo.io", "firewallconfigurations"}:      {"list"},
	{"", "networking.liqo.io", "wggatewayservers"}:            {"list"},
	{"", "networking.liqo.io", "wggatewayclients"}:            {"list"},
	// gate rule 16 and janitor rule 13: what Liqo re-creates a ForeignCluster from (liqojanitor.PeeringKinds)
	{"", "networking.liqo.io", "configurations"}: {"list"},
	{"", "networking.liqo.io", "connections"}:    {"list"},
	{"", "networking.liqo.io", "gatewayservers"}: {"list"},
	{"", "networking.liqo.io", "gatewayclients"}: {"list"},
	// gate rule 18: the pod a token of Liqo's uninstaller is bound to, read live in Liqo's namespace
	{liqoNS, "", "pods"}:                         {"get"},
	{"", "authentication.liqo.io", "identities"}: {"list"},
	{"", "authentication.liqo.io", "tenants"}:    {"list"},
	{"", "ipam.liqo.io", "ips"}:                  {"list"},
	{"", "ipam.liqo.io", "networks"}:             {"list"},
	// issue 38: volumes pinned to a dead cluster, reported and never written (janitor/internal/unpeering), read live
	{"", "", "persistentvolumeclaims"}:           {"list"},
	{"", "", "persistentvolumes"}:                {"list"},
	{"", "storage.k8s.io", "storageclasses"}:     {"list"},
	{"", "apps", "statefulsets"}:                 {"list"},
	{installNS, "coordination.k8s.io", "leases"}: {"create", "get", "list", "patch", "update", "watch"},
	{installNS, "", "configmaps"}:                {"create", "get", "list", "patch", "watch"}, // the brake (janitor rule 14) and the records (janitor rule 16), by name
	{installNS, "", "events"}:                    {"create", "patch"},
	// renew rule 1 (janitor/fencerenew): the providers' fence credentials, by label (Role liqo-janitor-fence-credentials)
	{installNS, "", "secrets"}: {"list"},
}

// withSelfManagedCerts is what the default install grants (certManager.enabled=false, templates/certs-rbac.yaml):
// the code's needs, and its two certificate Secrets (get and patch by name, create in the install namespace
// alone, narrowed by the policy liqo-janitor-certs) and the caBundle of its two webhook configurations.
var withSelfManagedCerts = func() map[grant][]string {
	m := maps.Clone(needed)
	m[grant{installNS, "", "secrets"}] = []string{"create", "get", "list", "patch"}
	m[grant{"", "admissionregistration.k8s.io", "mutatingwebhookconfigurations"}] = []string{"get", "patch"}
	m[grant{"", "admissionregistration.k8s.io", "validatingwebhookconfigurations"}] = []string{"get", "patch"}
	return m
}()

// withIdentitySecrets is what the identity-secrets component adds: the metadata-only watch and the
// finalizer patch on control-plane identity Secrets, which RBAC cannot narrow by label.
var withIdentitySecrets = func() map[grant][]string {
	m := maps.Clone(withSelfManagedCerts)
	m[grant{"", "", "secrets"}] = []string{"get", "list", "patch", "watch"}
	return m
}()

// serviceAccountGrants resolves what the install's bindings give its ServiceAccount, verbs sorted.
func serviceAccountGrants(t *testing.T, b built) map[grant][]string {
	t.Helper()
	return grantsOf(t, b, appName)
}

// grantsOf resolves what the install's bindings give its ServiceAccount named sa, verbs sorted.
func grantsOf(t *testing.T, b built, sa string) map[grant][]string {
	t.Helper()
	out := map[grant][]string{}
	add := func(namespace string, rules []rbacv1.PolicyRule) {
		for _, r := range rules {
			for _, group := range r.APIGroups {
				for _, resource := range r.Resources {
					k := grant{namespace, group, resource}
					out[k] = slices.Compact(slices.Sorted(slices.Values(append(out[k], r.Verbs...))))
				}
			}
		}
	}
	for _, crb := range all[*rbacv1.ClusterRoleBinding](b) {
		if boundTo(crb.Subjects, sa) {
			add("", one[*rbacv1.ClusterRole](t, b, "", crb.RoleRef.Name).Rules)
		}
	}
	for _, rb := range all[*rbacv1.RoleBinding](b) {
		if !boundTo(rb.Subjects, sa) {
			continue
		}
		if rb.RoleRef.Kind == "ClusterRole" {
			add(rb.Namespace, one[*rbacv1.ClusterRole](t, b, "", rb.RoleRef.Name).Rules)
		} else {
			add(rb.Namespace, one[*rbacv1.Role](t, b, rb.Namespace, rb.RoleRef.Name).Rules)
		}
	}
	return out
}

func boundTo(subjects []rbacv1.Subject, sa string) bool {
	return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
		return s.Kind == rbacv1.ServiceAccountKind && s.Name == sa && s.Namespace == installNS
	})
}

// allRules returns every rule of every ClusterRole and Role in the build, bound or not.
func allRules(b built) []rbacv1.PolicyRule {
	var rules []rbacv1.PolicyRule
	for _, cr := range all[*rbacv1.ClusterRole](b) {
		rules = append(rules, cr.Rules...)
	}
	for _, r := range all[*rbacv1.Role](b) {
		rules = append(rules, r.Rules...)
	}
	return rules
}

func TestServiceAccountGetsExactlyWhatTheCodeCalls(t *testing.T) {
	tests := map[string]struct {
		dir  string
		want map[grant][]string
	}{
		"the default install grants the markers, leader election and its own certificates": {
			dir: defaultDir, want: withSelfManagedCerts,
		},
		"the identity-secrets component adds Secrets, nothing else": {
			dir: identitySecretDir, want: withIdentitySecrets,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(serviceAccountGrants(t, kustomize(t, tc.dir))).To(Equal(tc.want))
		})
	}
}

func TestRolesHaveNoWildcardsAndDefaultHasNoSecretsButItsCertificates(t *testing.T) {
	for name, dir := range map[string]string{
		"default": defaultDir, "identity-secrets overlay": identitySecretDir, "policy": policyDir,
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			b := kustomize(t, dir)
			for _, r := range allRules(b) {
				g.Expect(r.APIGroups).NotTo(ContainElement("*"), "rule %v", r)
				g.Expect(r.Resources).NotTo(ContainElement(ContainSubstring("*")), "rule %v", r)
				g.Expect(r.Verbs).NotTo(ContainElement("*"), "rule %v", r)
				// the one non-resource rule: liqo-janitor:metrics-reader's get /metrics
				if len(r.NonResourceURLs) > 0 {
					g.Expect(r).To(Equal(rbacv1.PolicyRule{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}), "rule %v", r)
				}
			}
			if dir == defaultDir {
				for _, cr := range all[*rbacv1.ClusterRole](b) {
					for _, r := range cr.Rules {
						g.Expect(r.Resources).NotTo(ContainElement("secrets"), "cluster-wide Secrets are for the opt-in component only (%s)", cr.Name)
					}
				}
				for _, role := range all[*rbacv1.Role](b) {
					for _, r := range role.Rules {
						if !slices.Contains(r.Resources, "secrets") {
							continue
						}
						if role.Name == appName+"-fence-credentials" { // the fence renewer lists its providers' credentials there
							g.Expect(role.Namespace).To(Equal(installNS))
							g.Expect(r).To(Equal(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"list"}}))
							continue
						}
						g.Expect(role.Namespace+"/"+role.Name).To(Equal(installNS+"/"+appName+"-certs"), "Secrets only for the janitor's own certificates")
					}
				}
			}
		})
	}
}

func TestBreakGlassRoleShipsUnbound(t *testing.T) {
	g := NewWithT(t)
	b := kustomize(t, defaultDir)
	role := one[*rbacv1.ClusterRole](t, b, "", liqojanitor.MarkRoleName)
	g.Expect(role.Rules).To(Equal([]rbacv1.PolicyRule{{
		APIGroups: []string{"core.liqo.io"}, Resources: []string{"foreignclusters"}, Verbs: []string{"mark-unreachable"},
	}}))
	// Who may declare a provider dead is the admin's decision: the install binds the role to nobody.
	for _, crb := range all[*rbacv1.ClusterRoleBinding](b) {
		g.Expect(crb.RoleRef.Name).NotTo(Equal(role.Name), "ClusterRoleBinding %s", crb.Name)
	}
	for _, rb := range all[*rbacv1.RoleBinding](b) {
		g.Expect(rb.RoleRef.Name).NotTo(Equal(role.Name), "RoleBinding %s/%s", rb.Namespace, rb.Name)
	}
}
