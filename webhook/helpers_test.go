package webhook_test

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// deadURL is an address where nothing listens: the API server's calls fail at once.
const deadURL = "https://127.0.0.1:1/"

// decodeWebhookConfig decodes one generated webhook configuration and points every webhook at deadURL.
func decodeWebhookConfig(doc []byte) (client.Object, error) {
	switch {
	case strings.Contains(string(doc), "kind: MutatingWebhookConfiguration"):
		cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := yaml.UnmarshalStrict(doc, cfg); err != nil {
			return nil, err
		}
		for i := range cfg.Webhooks {
			cfg.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To(deadURL)}
		}
		return cfg, nil
	case strings.Contains(string(doc), "kind: ValidatingWebhookConfiguration"):
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := yaml.UnmarshalStrict(doc, cfg); err != nil {
			return nil, err
		}
		for i := range cfg.Webhooks {
			cfg.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To(deadURL)}
		}
		return cfg, nil
	}
	return nil, nil
}
