package liqojanitor

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ApplyFenceCredential makes, in a consumer's tenant namespace ns on a provider, its fence credential,
// idempotently (server-side apply by fieldOwner, its fields forced): the ServiceAccount, the Role that may
// only get, update and patch the Lease FenceLeaseName, their RoleBinding, and the ServiceAccount's token
// Secret, which Kubernetes' token controller fills. `kubectl liqo-janitor fence-credential` runs it.
func ApplyFenceCredential(ctx context.Context, c client.Client, ns, fieldOwner string) error {
	name := FenceCredentialName
	labels := map[string]string{"app.kubernetes.io/name": Name, "app.kubernetes.io/component": "provider-fence-credential"}
	objects := []struct {
		what string
		obj  runtime.ApplyConfiguration
	}{
		{"ServiceAccount", corev1ac.ServiceAccount(name, ns).WithLabels(labels).WithAutomountServiceAccountToken(false)},
		{"Role", rbacv1ac.Role(name, ns).WithLabels(labels).WithRules(rbacv1ac.PolicyRule().
			WithAPIGroups("coordination.k8s.io").WithResources("leases").
			WithResourceNames(FenceLeaseName).WithVerbs("get", "update", "patch"))},
		{"RoleBinding", rbacv1ac.RoleBinding(name, ns).WithLabels(labels).
			WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(name)).
			WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(name).WithNamespace(ns))},
		{"Secret", corev1ac.Secret(FenceCredentialTokenSecret, ns).WithLabels(labels).
			WithAnnotations(map[string]string{corev1.ServiceAccountNameKey: name}).
			WithType(corev1.SecretTypeServiceAccountToken)},
	}
	for _, o := range objects {
		if err := c.Apply(ctx, o.obj, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s/%s: %w", o.what, ns, name, err)
		}
	}
	return nil
}
