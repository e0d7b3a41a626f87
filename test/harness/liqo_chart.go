package harness

import (
	"fmt"

	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// What Liqo's chart installs for its admission webhook, written out from the chart of the release test/liqo
// pins (deployments/liqo in github.com/liqotech/liqo@v1.2.0, rendered with its default values.yaml and
// release name liqo). TestLiqoChartObjects renders the chart's templates and checks these against them.
// Left out: the chart's common labels (liqo.labels: app.kubernetes.io/*, helm.sh/chart), which nothing
// selects on.
const (
	// LiqoWebhookName names the webhook's Deployment, Service and both configurations: liqo.prefixedName of
	// "webhook" (templates/_helpers.tpl).
	LiqoWebhookName = "liqo-webhook"
	// LiqoWebhookSecret is the Secret of the webhook's certificates (templates/webhooks/liqo-webhook-secret.yaml),
	// passed as --secret-name (templates/liqo-webhook-deployment.yaml).
	LiqoWebhookSecret = LiqoWebhookName + "-certs"
	// liqoWebhookLabel marks the webhook's configurations and Secret (consts.WebHookLabel): the webhook
	// writes the Secret's CA into the caBundle of every configuration that carries it
	// (pkg/webhooks/secretcontroller, HandleSecret).
	liqoWebhookLabel = "liqo.io/webhook"
	// liqoVKOptionsTemplate is the default VkOptionsTemplate (templates/liqo-vk-options-template.yaml), passed
	// as --vk-options-default-template: the VirtualNode webhook reads it on every request and denies the
	// request if it is missing (pkg/webhooks/virtualnode, Handle).
	liqoVKOptionsTemplate = "virtual-kubelet-default"
)

// liqoHook is one webhook of Liqo's configurations (templates/webhooks/liqo-mutating-webhook.yaml and
// liqo-validating-webhook.yaml): every one has admissionReviewVersions [v1, v1beta1], sideEffects None
// and failurePolicy webhook.failurePolicy (values.yaml: Fail), and no matchPolicy, timeoutSeconds or
// reinvocationPolicy (the API server's defaults: Equivalent, 10 s, Never).
type liqoHook struct {
	name, path               string
	ops                      []admissionregistrationv1.OperationType
	group, version, resource string
	selector                 liqoSelector
}

// liqoSelector is which selector a Liqo webhook has.
type liqoSelector int

const (
	// selectsAll: neither selector.
	selectsAll liqoSelector = iota
	// skippable: objectSelector liqo.io/webhook-skip NotIn ["true"] (an object labelled so skips it).
	skippable
	// schedulingNamespaces: namespaceSelector liqo.io/scheduling-enabled: "true".
	schedulingNamespaces
)

var (
	create       = []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
	createUpdate = []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	allWrites    = []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete}
)

// liqoMutatingHooks are the webhooks of templates/webhooks/liqo-mutating-webhook.yaml, in its order.
// tenant.validate.liqo.io is the chart's name for the mutating Tenant webhook too.
var liqoMutatingHooks = []liqoHook{
	{"pod.mutate.liqo.io", "/mutate/pod", create, "", "v1", "pods", schedulingNamespaces},
	{"shadowpod.mutate.liqo.io", "/mutate/shadowpods", allWrites, "offloading.liqo.io", "v1beta1", "shadowpods", selectsAll},
	{"fc.mutate.liqo.io", "/mutate/foreign-cluster", createUpdate, "core.liqo.io", "v1beta1", "foreignclusters", skippable},
	{"virtualnode.mutate.liqo.io", "/mutate/virtualnodes", createUpdate, "offloading.liqo.io", "v1beta1", "virtualnodes", skippable},
	{"firewallconfiguration.mutate.liqo.io", "/mutate/firewallconfigurations", createUpdate, "networking.liqo.io", "v1beta1",
		"firewallconfigurations", skippable},
	{"tenant.validate.liqo.io", "/mutate/tenants", createUpdate, "authentication.liqo.io", "v1beta1", "tenants", skippable},
}

// liqoValidatingHooks are the webhooks of templates/webhooks/liqo-validating-webhook.yaml, in its order.
var liqoValidatingHooks = []liqoHook{
	{"nsoff.validate.liqo.io", "/validate/namespace-offloading", createUpdate, "offloading.liqo.io", "v1beta1",
		"namespaceoffloadings", skippable},
	{"shadowpod.validate.liqo.io", "/validate/shadowpods", allWrites, "offloading.liqo.io", "v1beta1", "shadowpods", selectsAll},
	{"firewallconfiguration.validate.liqo.io", "/validate/firewallconfigurations", createUpdate, "networking.liqo.io", "v1beta1",
		"firewallconfigurations", skippable},
	{"routeconfiguration.validate.liqo.io", "/validate/routeconfigurations", createUpdate, "networking.liqo.io", "v1beta1",
		"routeconfigurations", skippable},
	{"resourceslice.validate.liqo.io", "/validate/resourceslices", createUpdate, "authentication.liqo.io", "v1beta1",
		"resourceslices", selectsAll},
	{"tenant.validate.liqo.io", "/validate/tenants", createUpdate, "authentication.liqo.io", "v1beta1", "tenants", skippable},
}

// LiqoWebhookConfigurations are Liqo's Mutating- and ValidatingWebhookConfiguration as its chart renders
// them, except that each webhook calls base+path (base as https://127.0.0.1:9443, in place of the chart's
// Service) and trusts caBundle.
func LiqoWebhookConfigurations(base string, caBundle []byte) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	meta := metav1.ObjectMeta{Name: LiqoWebhookName, Labels: map[string]string{liqoWebhookLabel: "true"}}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: meta}
	for _, h := range liqoMutatingHooks {
		v := h.validating(base, caBundle)
		mutating.Webhooks = append(mutating.Webhooks, admissionregistrationv1.MutatingWebhook{Name: v.Name,
			ClientConfig: v.ClientConfig, Rules: v.Rules, FailurePolicy: v.FailurePolicy, SideEffects: v.SideEffects,
			NamespaceSelector: v.NamespaceSelector, ObjectSelector: v.ObjectSelector, AdmissionReviewVersions: v.AdmissionReviewVersions})
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: *meta.DeepCopy()}
	for _, h := range liqoValidatingHooks {
		validating.Webhooks = append(validating.Webhooks, h.validating(base, caBundle))
	}
	return mutating, validating
}

// validating is the webhook h as a ValidatingWebhook (the fields a MutatingWebhook shares with it).
func (h liqoHook) validating(base string, caBundle []byte) admissionregistrationv1.ValidatingWebhook {
	w := admissionregistrationv1.ValidatingWebhook{
		Name:         h.name,
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(base + h.path), CABundle: caBundle},
		Rules: []admissionregistrationv1.RuleWithOperations{{Operations: h.ops, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{h.group}, APIVersions: []string{h.version}, Resources: []string{h.resource}}}},
		FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1", "v1beta1"},
	}
	switch h.selector {
	case skippable:
		w.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: liqojanitor.WebhookSkipLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"true"}}}}
	case schedulingNamespaces:
		w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{liqojanitor.SchedulingLabel: "true"}}
	}
	return w
}

// LiqoWebhookSecretFor is the chart's certificate Secret of the webhook in Liqo's namespace ns
// (templates/webhooks/liqo-webhook-secret.yaml), holding data: the chart creates it empty, and the webhook
// fills an empty one with a CA and a serving certificate of its own, for the Service's names only
// (HandleSecret, createCA).
func LiqoWebhookSecretFor(ns string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: LiqoWebhookSecret, Namespace: ns,
			Labels:      map[string]string{liqoWebhookLabel: "true"},
			Annotations: map[string]string{"liqo.io/webhook-service-name": LiqoWebhookName}},
		Type: "opaque", // sic
		Data: data,
	}
}

// liqoVKOptions is the chart's default VkOptionsTemplate in Liqo's namespace ns, version the Liqo release
// (its image tag), with the fields the CRD requires and the replicas (values.yaml: virtualKubelet.replicas
// 1, offloading.createNode true, offloading.disableNetworkCheck false, metrics.enabled false,
// virtualKubelet.image.name); the rest (reflection, extra arguments) only shapes the virtual kubelet's
// Deployment, which no test runs.
func liqoVKOptions(ns, version string) *offloadingv1beta1.VkOptionsTemplate {
	return &offloadingv1beta1.VkOptionsTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: liqoVKOptionsTemplate, Namespace: ns},
		Spec: offloadingv1beta1.VkOptionsTemplateSpec{
			Replicas:            ptr.To[int32](1),
			CreateNode:          true,
			DisableNetworkCheck: false,
			ContainerImage:      fmt.Sprintf("ghcr.io/liqotech/virtual-kubelet:%s", version),
			MetricsEnabled:      false,
		},
	}
}
