package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"net/http"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/liqo-janitor/liqo-janitor/webhook/certs"
)

// The ways the webhook server gets its certificate (--cert-management).
const (
	// certNone and certManager serve tls.crt and tls.key from --webhook-cert-dir, reloaded on change:
	// cert-manager's Secret mounted there, or any other. The binary writes nothing.
	certNone    = "none"
	certManager = "cert-manager"
	// certSelf: the binary keeps a CA and a serving certificate itself (package webhook/certs).
	certSelf = "self"
)

// certOptions holds the --cert-* flags.
type certOptions struct {
	mode      string
	namespace string
	extraDNS  string
	certs.Options
}

func (o *certOptions) bindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.mode, "cert-management", certNone,
		"Where the webhook serving certificate comes from: \"none\" or \"cert-manager\" serve tls.crt and tls.key from --webhook-cert-dir "+
			"(reloaded on change); \"self\" keeps a CA and the serving certificate in two Secrets of --cert-namespace, renews them "+
			"and injects the CA bundle into the webhook configurations named --webhook-configuration.")
	fs.StringVar(&o.namespace, "cert-namespace", "",
		"With --cert-management=self: the namespace of the certificates' Secrets; defaults to --namespace.")
	fs.StringVar(&o.Service, "webhook-service", "liqo-janitor-webhook",
		"With --cert-management=self: the Service the API server calls the webhook through (the certificate's DNS names).")
	fs.StringVar(&o.WebhookConfiguration, "webhook-configuration", "liqo-janitor",
		"With --cert-management=self: the name of the MutatingWebhookConfiguration and the ValidatingWebhookConfiguration that get the CA bundle.")
	fs.DurationVar(&o.CertValidity, "cert-validity", certs.DefaultCertValidity,
		"With --cert-management=self: how long a serving certificate is valid; it is renewed with a third left.")
	fs.DurationVar(&o.CAValidity, "ca-validity", certs.DefaultCAValidity,
		"With --cert-management=self: how long a CA is valid (at least three times --cert-validity); it is renewed with a third left, "+
			"and the previous CA stays in the bundle until it expires.")
	fs.DurationVar(&o.CheckInterval, "cert-check-interval", certs.DefaultCheckInterval,
		"With --cert-management=self: how often each replica looks at the certificates and the webhook configurations.")
	fs.StringVar(&o.extraDNS, "cert-extra-dns-names", "",
		"With --cert-management=self: more DNS names for the serving certificate, comma-separated (e.g. localhost for a test).")
}

// resolve fills the namespace and the DNS names, and checks the flags of the chosen mode.
func (o *certOptions) resolve(enableWebhook bool, ownNamespace string) error {
	switch o.mode {
	case certNone, certManager:
		return nil
	case certSelf:
	default:
		return fmt.Errorf("--cert-management must be none, cert-manager or self, got %q", o.mode)
	}
	if !enableWebhook {
		return fmt.Errorf("--cert-management=self is for the webhook server, and --enable-webhook is false: use --cert-management=none")
	}
	o.Namespace = o.namespace
	if o.Namespace == "" {
		o.Namespace = ownNamespace
	}
	o.ExtraDNSNames = nil
	for n := range strings.SplitSeq(o.extraDNS, ",") {
		if n = strings.TrimSpace(n); n != "" {
			o.ExtraDNSNames = append(o.ExtraDNSNames, n)
		}
	}
	return o.Validate()
}

// newCertManager returns the self-managed certificates, or nil in the other modes.
func newCertManager(o *options) *certs.Manager {
	if o.certs.mode != certSelf {
		return nil
	}
	return certs.New(o.certs.Options)
}

// servingTLS has the webhook server serve the managed certificate (controller-runtime's webhook server
// then runs no file watcher: "This option is only used when TLSOpts does not set GetCertificate").
func servingTLS(cm *certs.Manager) []func(*tls.Config) {
	if cm == nil {
		return nil
	}
	return []func(*tls.Config){func(c *tls.Config) { c.GetCertificate = cm.GetCertificate }}
}

// addCertManager runs cm with mgr, if there is one.
func addCertManager(mgr ctrl.Manager, cm *certs.Manager) error {
	if cm == nil {
		return nil
	}
	if err := cm.Add(mgr); err != nil {
		return fmt.Errorf("adding the certificate manager: %w", err)
	}
	return nil
}

// readyChecker is the webhook server's own check, and with self-managed certificates also that the
// certificate served verifies against the bundle injected.
func readyChecker(started healthz.Checker, cm *certs.Manager) healthz.Checker {
	if cm == nil {
		return started
	}
	return func(r *http.Request) error {
		if err := started(r); err != nil {
			return err
		}
		return cm.Ready(r)
	}
}
