package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// caBundleKey is the key of the CA bundle in the CA's Secret, as in cert-manager's Secrets.
const caBundleKey = "ca.crt"

// caState is the CA that signs, with the bundle the webhook configurations must carry.
type caState struct {
	*keyPair
	bundle []byte
}

// issue is the elected replica's part, in the order that never leaves the API server without trust in a
// certificate being served: the CA (created, renewed, the expired one dropped from the bundle), then the
// bundle into both configurations, and only then a serving certificate signed by the CA of that bundle.
func (m *Manager) issue(ctx context.Context) error {
	ca, err := m.ensureCA(ctx)
	if err != nil {
		return fmt.Errorf("the CA in Secret %s/%s: %w", m.opts.Namespace, CASecretName, err)
	}
	if err := m.inject(ctx, ca.bundle); err != nil {
		return err
	}
	if err := m.ensureServing(ctx, ca); err != nil {
		return fmt.Errorf("the serving certificate in Secret %s/%s: %w", m.opts.Namespace, CertSecretName, err)
	}
	return nil
}

// ensureCA returns the current CA, making a new one when there is none (or it is unreadable) or a third
// of its validity is left; the previous CA stays in the bundle until it expires.
func (m *Manager) ensureCA(ctx context.Context) (*caState, error) {
	s, err := m.get(ctx, CASecretName)
	if err != nil {
		return nil, err
	}
	now := m.now()
	if s == nil {
		s = &corev1.Secret{}
	}
	ca, err := parseKeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	if err != nil || due(ca.cert, m.opts.CAValidity, now) {
		if ca, err = newCA(now, m.opts.CAValidity); err != nil {
			return nil, err
		}
		m.log.Info("Creating a new webhook CA", "secret", CASecretName, "notAfter", ca.cert.NotAfter, "replacing", s.ResourceVersion != "")
	}
	state := &caState{keyPair: ca, bundle: makeBundle(ca.cert, s.Data[caBundleKey], now)}
	if bytes.Equal(ca.certPEM, s.Data[corev1.TLSCertKey]) && bytes.Equal(state.bundle, s.Data[caBundleKey]) {
		return state, nil
	}
	err = m.write(ctx, s, CASecretName, map[string][]byte{
		corev1.TLSCertKey: ca.certPEM, corev1.TLSPrivateKeyKey: ca.keyPEM, caBundleKey: state.bundle})
	return state, err
}

// webhookConfigurations are the two objects the bundle goes into, by name.
func (m *Manager) webhookConfigurations() []client.Object {
	return []client.Object{
		&admissionregistrationv1.MutatingWebhookConfiguration{},
		&admissionregistrationv1.ValidatingWebhookConfiguration{},
	}
}

// inject sets bundle as the caBundle of every webhook of both configurations, writing only those that
// differ: a JSON patch of exactly those caBundles that tests the resourceVersion read (a conflict is
// retried at the next look), so nothing else of the configuration is written.
func (m *Manager) inject(ctx context.Context, bundle []byte) error {
	for _, cfg := range m.webhookConfigurations() {
		if err := m.reader.Get(ctx, types.NamespacedName{Name: m.opts.WebhookConfiguration}, cfg); err != nil {
			return fmt.Errorf("reading the %s %s to inject the CA bundle: %w", kindOf(cfg), m.opts.WebhookConfiguration, err)
		}
		patch, changed := caBundlePatch(cfg, bundle)
		if !changed {
			continue
		}
		m.log.Info("Injecting the CA bundle", "kind", kindOf(cfg), "name", cfg.GetName())
		if err := m.writer.Patch(ctx, cfg, patch); err != nil {
			return fmt.Errorf("injecting the CA bundle into %s %s: %w", kindOf(cfg), cfg.GetName(), err)
		}
	}
	return nil
}

// ensureServing issues a serving certificate signed by ca when there is none, or it was signed by
// another CA, names other hosts, or has a third of its validity left.
func (m *Manager) ensureServing(ctx context.Context, ca *caState) error {
	s, err := m.get(ctx, CertSecretName)
	if err != nil {
		return err
	}
	if s == nil {
		s = &corev1.Secret{}
	}
	now := m.now()
	if cur, err := parseKeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]); err == nil &&
		servingValid(cur, ca.keyPair, m.opts.hosts(), now, m.opts.CertValidity) && len(s.Data) == 2 {
		return nil
	}
	serving, err := newServing(ca.keyPair, m.opts.hosts(), now, m.opts.CertValidity)
	if err != nil {
		return err
	}
	m.log.Info("Issuing a webhook serving certificate", "secret", CertSecretName, "notAfter", serving.cert.NotAfter, "ca", ca.cert.Subject.CommonName)
	return m.write(ctx, s, CertSecretName, map[string][]byte{corev1.TLSCertKey: serving.certPEM, corev1.TLSPrivateKeyKey: serving.keyPEM})
}

// injected is the caBundle one webhook carries.
type injected struct {
	config, webhook string
	bundle          []byte
}

// load is every replica's part: serve the certificate of the serving Secret, and remember the bundles
// the webhook configurations carry (for Ready).
func (m *Manager) load(ctx context.Context) error {
	var bundles []injected
	for _, cfg := range m.webhookConfigurations() {
		if err := m.reader.Get(ctx, types.NamespacedName{Name: m.opts.WebhookConfiguration}, cfg); err != nil {
			return fmt.Errorf("reading the %s %s: %w", kindOf(cfg), m.opts.WebhookConfiguration, err)
		}
		forEachClientConfig(cfg, func(name string, cc *admissionregistrationv1.WebhookClientConfig) {
			bundles = append(bundles, injected{config: kindOf(cfg) + " " + cfg.GetName(), webhook: name, bundle: cc.CABundle})
		})
	}
	m.bundles.Store(&bundles)
	s, err := m.get(ctx, CertSecretName)
	if err != nil || s == nil {
		return err
	}
	if cur := m.served.Load(); cur != nil && bytes.Equal(cur.Certificate[0], certDER(s.Data[corev1.TLSCertKey])) {
		return nil
	}
	pair, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return fmt.Errorf("reading Secret %s/%s: %w", m.opts.Namespace, CertSecretName, err)
	}
	m.served.Store(&pair)
	m.log.Info("Serving the webhook certificate", "secret", CertSecretName, "notAfter", pair.Leaf.NotAfter)
	return nil
}

// certDER is the first certificate of a PEM chain, or nil.
func certDER(certPEM []byte) []byte {
	pair, err := parseBundle(certPEM)
	if err != nil || len(pair) == 0 {
		return nil
	}
	return pair[0].Raw
}

func forEachClientConfig(cfg client.Object, f func(webhook string, cc *admissionregistrationv1.WebhookClientConfig)) {
	switch c := cfg.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for i := range c.Webhooks {
			f(c.Webhooks[i].Name, &c.Webhooks[i].ClientConfig)
		}
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for i := range c.Webhooks {
			f(c.Webhooks[i].Name, &c.Webhooks[i].ClientConfig)
		}
	}
}

// caBundlePatch is the JSON patch that sets bundle as the caBundle of each webhook of cfg whose caBundle
// differs, testing cfg's resourceVersion first; it reports whether any differs.
func caBundlePatch(cfg client.Object, bundle []byte) (client.Patch, bool) {
	ops := []map[string]any{{"op": "test", "path": "/metadata/resourceVersion", "value": cfg.GetResourceVersion()}}
	i := 0
	forEachClientConfig(cfg, func(_ string, cc *admissionregistrationv1.WebhookClientConfig) {
		if !bytes.Equal(cc.CABundle, bundle) {
			ops = append(ops, map[string]any{"op": "add", "path": fmt.Sprintf("/webhooks/%d/clientConfig/caBundle", i), "value": bundle})
		}
		i++
	})
	data, _ := json.Marshal(ops) // []byte marshals as base64, as caBundle is stored
	return client.RawPatch(types.JSONPatchType, data), len(ops) > 1
}

func kindOf(cfg client.Object) string {
	if _, ok := cfg.(*admissionregistrationv1.MutatingWebhookConfiguration); ok {
		return "MutatingWebhookConfiguration"
	}
	return "ValidatingWebhookConfiguration"
}
