package fence

import (
	"context"
	"errors"
	"fmt"
	"strings"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// Which cluster fence reached: not this consumer (kube-system's UID), and the marked provider itself (the
// Liqo cluster ID read on it). fence deletes and records nothing before both hold.

// clusterIDRead is a Liqo cluster ID and the ConfigMap it was read from ("liqo/liqo-clusterid-configmap").
type clusterIDRead struct {
	id, from string
}

// clusterIDError is why a cluster's Liqo cluster ID could not be read in namespace ns: the List failed
// (err), or it found no labelled ConfigMap, several, or one without a CLUSTER_ID (found).
type clusterIDError struct {
	ns    string
	found []string
	err   error
}

func (e *clusterIDError) Error() string {
	selector := liqojanitor.ClusterIDConfigMapNameLabel + "=" + liqojanitor.ClusterIDConfigMapNameValue
	switch {
	case e.err != nil:
		return fmt.Sprintf("listing the ConfigMaps labelled %s in namespace %s: %v", selector, e.ns, e.err)
	case len(e.found) == 0:
		return fmt.Sprintf("no ConfigMap labelled %s in namespace %s", selector, e.ns)
	case len(e.found) > 1:
		return fmt.Sprintf("%d ConfigMaps labelled %s in namespace %s (%s), where Liqo takes exactly one",
			len(e.found), selector, e.ns, strings.Join(e.found, ", "))
	}
	return fmt.Sprintf("ConfigMap %s has no %s", e.found[0], liqojanitor.ClusterIDConfigMapKey)
}

func (e *clusterIDError) Unwrap() error { return e.err }

// readClusterID reads a cluster's Liqo cluster ID in namespace ns as Liqo reads its own
// (utils.GetClusterIDWithControllerClient, pkg/utils/cluster_info.go: getters.GetConfigMapByLabel,
// pkg/utils/getters/k8sGetters.go, with labels.ClusterIDConfigMapLabelSelector — exactly one ConfigMap
// labelled app.kubernetes.io/name=clusterid-configmap in the namespace, none or several an error — then
// getters.RetrieveClusterIDFromConfigMap, dataGetters.go: its CLUSTER_ID key; the same in v1.0.3, v1.1.0
// and v1.2.0). Liqo takes an empty CLUSTER_ID; fence does not.
func readClusterID(ctx context.Context, c client.Client, ns string) (clusterIDRead, error) {
	var cms corev1.ConfigMapList
	if err := c.List(ctx, &cms, client.InNamespace(ns),
		client.MatchingLabels{liqojanitor.ClusterIDConfigMapNameLabel: liqojanitor.ClusterIDConfigMapNameValue}); err != nil {
		return clusterIDRead{}, &clusterIDError{ns: ns, err: err}
	}
	found := make([]string, 0, len(cms.Items))
	for i := range cms.Items {
		found = append(found, output.Printable(cms.Items[i].Namespace+"/"+cms.Items[i].Name))
	}
	if len(found) != 1 {
		return clusterIDRead{}, &clusterIDError{ns: ns, found: found}
	}
	id := cms.Items[0].Data[liqojanitor.ClusterIDConfigMapKey]
	if id == "" {
		return clusterIDRead{}, &clusterIDError{ns: ns, found: found}
	}
	return clusterIDRead{id: id, from: "ConfigMap " + found[0]}, nil
}

// kubeSystemUID is the UID of namespace kube-system: one per cluster, so two API servers with the same
// are the same cluster.
func kubeSystemUID(ctx context.Context, c client.Client) (string, error) {
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, ns); err != nil {
		return "", err
	}
	return string(ns.UID), nil
}

// checkNotConsumer refuses a provider connection that reaches the consumer itself.
func checkNotConsumer(ctx context.Context, consumer client.Client, p *providerConn) error {
	local, err := kubeSystemUID(ctx, consumer)
	if err != nil {
		return fmt.Errorf("reading namespace kube-system on this cluster: %w (fence compares its UID with the provider's, "+
			"to be sure %s does not reach this cluster itself); nothing was written", err, output.Printable(p.via))
	}
	remote, err := kubeSystemUID(ctx, p.c)
	if err != nil {
		return providerErr("reading namespace kube-system (fence compares its UID with this cluster's, to be sure "+
			output.Printable(p.via)+" does not reach this cluster itself)", err)
	}
	if local == remote {
		return output.Lines{
			fmt.Sprintf("%s reaches this cluster itself, not the provider: namespace kube-system has the same UID %s on both API servers.",
				output.Printable(p.via), local),
			"Nothing was deleted or written. Pass --provider-kubeconfig <file> with a kubeconfig of the provider.",
		}
	}
	return nil
}

// checkProviderID identifies the provider: fence goes on only when it read Liqo's cluster ID on the
// provider, in --provider-liqo-namespace, and it is the marked ForeignCluster's spec.clusterID. A kubeconfig
// of another cluster (a provider rebuilt at the same address, a multi-context file's current context)
// is refused before anything is listed there, and so is a provider where the ID cannot be read.
func checkProviderID(ctx context.Context, p *providerConn, ns string, fc *liqov1beta1.ForeignCluster, localID string) (clusterIDRead, error) {
	want := string(fc.Spec.ClusterID)
	read, err := readClusterID(ctx, p.c, ns)
	if err != nil {
		return clusterIDRead{}, unidentified(p, ns, fc, err)
	}
	next := "Nothing was deleted or written. Pass --provider-kubeconfig <file> with a kubeconfig of the provider " + output.Printable(want) + "."
	switch read.id {
	case want:
		return read, nil
	case localID:
		return clusterIDRead{}, output.Lines{
			fmt.Sprintf("%s reaches a cluster whose Liqo cluster ID is %s (%s): this consumer's own.", output.Printable(p.via), output.Printable(read.id), read.from),
			next,
		}
	}
	return clusterIDRead{}, output.Lines{
		fmt.Sprintf("wrong provider: %s reaches the Liqo cluster %s (%s there), not %s (ForeignCluster %s).",
			output.Printable(p.via), output.Printable(read.id), read.from, output.Printable(want), output.Printable(fc.Name)),
		next,
	}
}

// unidentified is fence's refusal when it could not read the provider's Liqo cluster ID, with the next
// step for why.
func unidentified(p *providerConn, ns string, fc *liqov1beta1.ForeignCluster, err error) error {
	want := output.Printable(string(fc.Spec.ClusterID))
	msg := output.Lines{
		fmt.Sprintf("fence could not read the provider's Liqo cluster ID through %s: %s.", output.Printable(p.via), output.Printable(err.Error())),
		fmt.Sprintf("It acts only on a provider whose Liqo cluster ID it read there and that is %s (ForeignCluster %s): "+
			"nothing was deleted on the provider or written on this cluster.", want, output.Printable(fc.Name)),
	}
	var idErr *clusterIDError
	switch {
	case apierrors.IsForbidden(err):
		return append(msg, fmt.Sprintf("Pass --provider-kubeconfig <file> with a kubeconfig of an admin of the provider %s "+
			"(who may list ConfigMaps in namespace %s there).", want, ns))
	case errors.As(err, &idErr) && idErr.err == nil && len(idErr.found) == 0:
		return append(msg,
			"If Liqo runs in another namespace there, pass --provider-liqo-namespace <namespace> (on the provider: kubectl get configmaps -A -l "+
				liqojanitor.ClusterIDConfigMapNameLabel+"="+liqojanitor.ClusterIDConfigMapNameValue+").",
			"If Liqo is not installed there, "+output.Printable(p.via)+" does not reach the provider: pass --provider-kubeconfig <file> "+
				"with a kubeconfig of the provider "+want+".")
	case errors.As(err, &idErr) && idErr.err == nil:
		return append(msg, "Liqo itself cannot read its cluster ID there either (it takes exactly one such ConfigMap, with a "+
			liqojanitor.ClusterIDConfigMapKey+"): repair Liqo's installation on the provider, or pass --provider-liqo-namespace <namespace> "+
			"if another namespace holds Liqo's.")
	}
	return append(msg, "Run fence again once the provider's API server answers.")
}
