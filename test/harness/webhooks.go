package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// GeneratedWebhooksFile holds the webhook configurations `make manifests` generates from the gate's markers
// (into the chart, which names them and points them at its Service).
const GeneratedWebhooksFile = "manifests/chart/liqo-janitor/files/webhooks.yaml"

// GeneratedWebhooks reads the generated Mutating- and ValidatingWebhookConfiguration (strictly: an unknown
// field fails), as they are before the chart.
func (e *Env) GeneratedWebhooks() (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	data, err := os.ReadFile(filepath.Join(e.Root, GeneratedWebhooksFile))
	if err != nil {
		return nil, nil, err
	}
	mut := &admissionregistrationv1.MutatingWebhookConfiguration{}
	val := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var into any
		switch {
		case strings.Contains(doc, "kind: MutatingWebhookConfiguration"):
			into = mut
		case strings.Contains(doc, "kind: ValidatingWebhookConfiguration"):
			into = val
		default:
			continue
		}
		if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", GeneratedWebhooksFile, err)
		}
	}
	if len(mut.Webhooks) == 0 || len(val.Webhooks) == 0 {
		return nil, nil, fmt.Errorf("%s lacks a mutating or a validating webhook", GeneratedWebhooksFile)
	}
	return mut, val, nil
}

// ForEachWebhook calls f with the client config and the object selector of every webhook of a Mutating-
// or ValidatingWebhookConfiguration, for f to change them.
func ForEachWebhook(cfg client.Object, f func(*admissionregistrationv1.WebhookClientConfig, **metav1.LabelSelector)) {
	switch c := cfg.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for i := range c.Webhooks {
			f(&c.Webhooks[i].ClientConfig, &c.Webhooks[i].ObjectSelector)
		}
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for i := range c.Webhooks {
			f(&c.Webhooks[i].ClientConfig, &c.Webhooks[i].ObjectSelector)
		}
	}
}
