package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// consumer is one consumer of this provider: its cluster ID, the tenant namespace Liqo made for it here,
// and its Tenant there (nil if there is none).
type consumer struct {
	id        string
	namespace string
	tenant    *authv1beta1.Tenant
}

// findConsumer finds consumer id's tenant namespace as Liqo's pkg/tenantNamespace does (labels
// liqo.io/remote-cluster-id=<id> and liqo.io/tenant-namespace), refusing none or several, and its Tenant
// there (spec.clusterID id), refusing several.
func findConsumer(ctx context.Context, c client.Reader, id string) (*consumer, error) {
	selector := fmt.Sprintf("%s,%s=%s", liqojanitor.TenantNamespaceLabel, liqojanitor.RemoteClusterIDLabel, id)
	var nss corev1.NamespaceList
	if err := c.List(ctx, &nss, client.MatchingLabels{liqojanitor.RemoteClusterIDLabel: id},
		client.HasLabels{liqojanitor.TenantNamespaceLabel}); err != nil {
		return nil, fmt.Errorf("listing the tenant namespace of consumer %q: %w", id, err)
	}
	switch len(nss.Items) {
	case 0:
		return nil, fmt.Errorf("no tenant namespace of consumer %q on this cluster (no namespace labelled %s): is %q the cluster ID of "+
			"a consumer peered with this provider, and is this kubeconfig the provider's? List the consumers with "+
			"kubectl get namespaces -l %s -L %s", id, selector, id, liqojanitor.TenantNamespaceLabel, liqojanitor.RemoteClusterIDLabel)
	case 1:
	default:
		var names []string
		for i := range nss.Items {
			names = append(names, nss.Items[i].Name)
		}
		slices.Sort(names)
		return nil, fmt.Errorf("%d tenant namespaces of consumer %q (%s, labelled %s): Liqo and the provider fence agent act on one; "+
			"remove the stale one's labels or the namespace first", len(names), id, strings.Join(names, ", "), selector)
	}
	cons := &consumer{id: id, namespace: nss.Items[0].Name}
	var tenants authv1beta1.TenantList
	if err := c.List(ctx, &tenants, client.InNamespace(cons.namespace)); err != nil {
		return nil, fmt.Errorf("listing the Tenants in %s: %w", cons.namespace, err)
	}
	for i := range tenants.Items {
		if string(tenants.Items[i].Spec.ClusterID) != id {
			continue
		}
		if cons.tenant != nil {
			return nil, fmt.Errorf("several Tenants of consumer %q in %s (%s, %s): the agent fences none of them; remove the stale one",
				id, cons.namespace, cons.tenant.Name, tenants.Items[i].Name)
		}
		cons.tenant = &tenants.Items[i]
	}
	return cons, nil
}

// optInCommand is how the provider's admin opts the consumer in (fence rule 1).
func (c *consumer) optInCommand() string {
	name := "<tenant>"
	if c.tenant != nil {
		name = c.tenant.Name
	}
	return fmt.Sprintf("kubectl annotate tenant -n %s %s %s=120s", c.namespace, name, liqojanitor.FenceAfterAnnotation)
}
