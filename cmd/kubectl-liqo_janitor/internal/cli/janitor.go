package cli

import (
	"context"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// The janitor's namespace is where its brake (liqojanitor.BrakeConfigMap) and its records
// (liqojanitor.RecordsConfigMap) are: the plugin reads those ConfigMaps there and nowhere else. Anyone who
// may create ConfigMaps in some namespace can create one of the same name there; it is a look-alike, named
// as ignored, never the brake or the records. The plugin learns the namespace from --janitor-namespace or,
// without it, from the gate's ValidatingWebhookConfiguration: a cluster-scoped object only a cluster admin
// writes (the chart does, at install), whose webhooks call the gate's Service in the janitor's namespace.

// GateWebhookConfiguration is the name the chart gives the gate's ValidatingWebhookConfiguration
// (manifests/chart/liqo-janitor/templates/_helpers.tpl, liqo-janitor.webhookConfiguration; its webhooks'
// clientConfig.service.namespace is the release namespace, templates/webhook.yaml).
const GateWebhookConfiguration = "liqo-janitor"

// JanitorNamespaceFlag is the flag that names the janitor's namespace.
const JanitorNamespaceFlag = "janitor-namespace"

// JanitorNamespace is the namespace the janitor runs in, and how the plugin learned it.
type JanitorNamespace struct {
	Name string
	// From says how, for a person: the flag, or the gate's webhook configuration.
	From string
}

// AddJanitorNamespaceFlag registers --janitor-namespace on cmd, into into.
func AddJanitorNamespaceFlag(cmd *cobra.Command, into *string) {
	cmd.Flags().StringVar(into, JanitorNamespaceFlag, "", "the namespace liqo-janitor runs in, where its brake and records are "+
		"(default: the namespace of the Service of ValidatingWebhookConfiguration "+GateWebhookConfiguration+", the gate's)")
}

// FindJanitorNamespace is the janitor's namespace: flag when it is set, otherwise the namespace of the
// Service the gate's ValidatingWebhookConfiguration calls. It fails, saying what to pass, when neither
// names one.
func FindJanitorNamespace(ctx context.Context, c client.Reader, flag string) (JanitorNamespace, error) {
	if flag != "" {
		return JanitorNamespace{Name: flag, From: "--" + JanitorNamespaceFlag}, nil
	}
	next := fmt.Sprintf("pass --%s <namespace>, the namespace liqo-janitor is installed in "+
		"(kubectl get deployments -A -l app.kubernetes.io/name=liqo-janitor)", JanitorNamespaceFlag)
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	switch err := c.Get(ctx, client.ObjectKey{Name: GateWebhookConfiguration}, cfg); {
	case apierrors.IsNotFound(err):
		return JanitorNamespace{}, fmt.Errorf("cannot tell liqo-janitor's namespace, where its brake and records are: no "+
			"ValidatingWebhookConfiguration %s (the gate's, which names it) and no --%s: %s", GateWebhookConfiguration, JanitorNamespaceFlag, next)
	case apierrors.IsForbidden(err):
		return JanitorNamespace{}, fmt.Errorf("cannot tell liqo-janitor's namespace, where its brake and records are: you may "+
			"not get ValidatingWebhookConfiguration %s (the gate's, which names it): %s, or ask a cluster admin for get on it", GateWebhookConfiguration, next)
	case err != nil:
		return JanitorNamespace{}, fmt.Errorf("reading ValidatingWebhookConfiguration %s (the gate's, which names liqo-janitor's namespace): %w", GateWebhookConfiguration, err)
	}
	var namespaces []string
	for _, wh := range cfg.Webhooks {
		if s := wh.ClientConfig.Service; s != nil && !slices.Contains(namespaces, s.Namespace) {
			namespaces = append(namespaces, s.Namespace)
		}
	}
	if len(namespaces) != 1 {
		return JanitorNamespace{}, fmt.Errorf("cannot tell liqo-janitor's namespace: the webhooks of ValidatingWebhookConfiguration %s "+
			"call a Service in %d namespaces %q, where the chart's call one: %s", GateWebhookConfiguration, len(namespaces), namespaces, next)
	}
	return JanitorNamespace{Name: namespaces[0], From: "the Service of ValidatingWebhookConfiguration " + GateWebhookConfiguration}, nil
}

// JanitorConfigMap is one of the janitor's ConfigMaps, read in its namespace only.
type JanitorConfigMap struct {
	// ConfigMap is the one in the janitor's namespace, nil when there is none.
	ConfigMap *corev1.ConfigMap
	// Ignored are the look-alikes: ConfigMaps of the same name in other namespaces, as "namespace/name".
	Ignored []string
}

// ReadJanitorConfigMap reads the ConfigMap name in the janitor's namespace ns, and lists the ConfigMaps of
// that name elsewhere (best effort: a user who may not list ConfigMaps in every namespace sees none) to
// name them as ignored. Only the one in ns counts.
func ReadJanitorConfigMap(ctx context.Context, c client.Reader, ns, name string) (JanitorConfigMap, error) {
	var out JanitorConfigMap
	cm := &corev1.ConfigMap{}
	switch err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm); {
	case err == nil:
		out.ConfigMap = cm
	case !apierrors.IsNotFound(err):
		return out, fmt.Errorf("reading ConfigMap %s/%s (liqo-janitor's): %w", ns, name, err)
	}
	var all corev1.ConfigMapList
	if c.List(ctx, &all, client.MatchingFields{"metadata.name": name}) == nil {
		for i := range all.Items {
			if all.Items[i].Namespace != ns {
				out.Ignored = append(out.Ignored, output.Printable(all.Items[i].Namespace+"/"+all.Items[i].Name))
			}
		}
	}
	return out, nil
}

// IgnoredLine says why a look-alike ConfigMap ("namespace/name") is not the janitor's (both already
// passed through output.Printable).
func IgnoredLine(lookAlike, ns string) string {
	return fmt.Sprintf("ignored: ConfigMap %s is not in the janitor's namespace %s", lookAlike, ns)
}
