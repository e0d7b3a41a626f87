// Package certs manages the gate's webhook certificates without cert-manager (--cert-management=self):
// a CA and a serving certificate kept in two Secrets of the binary's namespace, the CA's bundle injected
// into the gate's two webhook configurations, rotation well before expiry, and a readiness check that
// holds until the certificate served verifies against the bundle the API server was given.
//
// Why not github.com/open-policy-agent/cert-controller (v0.16.0, the newest the module proxy serves): it
// keeps the CA key in the serving Secret (ca.key next to tls.key, so it is mounted wherever the serving
// certificate is), replaces the caBundle by the new CA alone when the CA rotates (replicas still serving
// the old CA's certificate fail until they reload), watches webhook configurations and Secrets through a
// cache of its own (list and watch on every one of them), and its readiness says the CA was injected, not
// that the certificate served verifies against it.
package certs

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// The Secrets of the namespace the binary keeps its certificates in (the chart grants get and patch on
// these names only). The CA's is never mounted: only the binary reads it, through the API.
const (
	// CASecretName holds the CA: tls.crt and tls.key, and ca.crt, the bundle injected into the webhook
	// configurations (the current CA and, after a rotation, the previous one until it expires).
	CASecretName = "liqo-janitor-webhook-ca"
	// CertSecretName holds the serving certificate: tls.crt and tls.key, nothing else.
	CertSecretName = "liqo-janitor-webhook-cert"
)

// Defaults of the binary's flags.
const (
	DefaultCertValidity  = 365 * 24 * time.Hour
	DefaultCAValidity    = 10 * DefaultCertValidity
	DefaultCheckInterval = time.Minute
	// notReadyInterval is how often a replica that is not ready yet looks again.
	notReadyInterval = 2 * time.Second
)

// Options says what the manager keeps and where.
type Options struct {
	// Namespace holds the two Secrets.
	Namespace string
	// Service is the webhook Service: the certificate serves <Service>.<Namespace>.svc (what the API
	// server calls) and <Service>.<Namespace>.svc.cluster.local.
	Service string
	// ExtraDNSNames are served too (tests call the webhook at localhost).
	ExtraDNSNames []string
	// WebhookConfiguration names the MutatingWebhookConfiguration and the ValidatingWebhookConfiguration
	// whose webhooks get the CA bundle; no other object is touched.
	WebhookConfiguration string
	// CAValidity and CertValidity are how long a new CA and a new serving certificate are valid; each is
	// renewed when a third of it is left. CAValidity is at least three times CertValidity.
	CAValidity, CertValidity time.Duration
	// CheckInterval is how often a replica looks at the Secrets and the webhook configurations.
	CheckInterval time.Duration
}

// Validate says what is wrong with o, for a person at a terminal.
func (o Options) Validate() error {
	var errs []error
	if o.Namespace == "" {
		errs = append(errs, errors.New("--cert-management=self needs the namespace of its Secrets: set --cert-namespace (in a pod it defaults to the pod's own)"))
	}
	if o.Service == "" || o.WebhookConfiguration == "" {
		errs = append(errs, errors.New("--cert-management=self needs --webhook-service and --webhook-configuration"))
	}
	if o.CertValidity <= 0 || o.CheckInterval <= 0 {
		errs = append(errs, fmt.Errorf("--cert-validity (%s) and --cert-check-interval (%s) must be positive", o.CertValidity, o.CheckInterval))
	}
	if o.CAValidity < 3*o.CertValidity {
		errs = append(errs, fmt.Errorf("--ca-validity (%s) must be at least three times --cert-validity (%s): a CA is renewed with a third of it left, "+
			"and the certificates it signed must end before it does", o.CAValidity, o.CertValidity))
	}
	return errors.Join(errs...)
}

// hosts are the DNS names the serving certificate is for; the first is the one the API server calls.
func (o Options) hosts() []string {
	svc := o.Service + "." + o.Namespace + ".svc"
	return append([]string{svc, svc + ".cluster.local"}, o.ExtraDNSNames...)
}

// Manager keeps the certificates. Every replica runs it: each loads the serving certificate from its
// Secret and serves it (GetCertificate); only the elected one writes the Secrets and the bundle.
type Manager struct {
	opts    Options
	writer  client.Writer
	reader  client.Reader // the API server, not a cache: two Secrets and two configurations, by name
	elected <-chan struct{}
	log     logr.Logger
	now     func() time.Time

	served  atomic.Pointer[tls.Certificate]
	bundles atomic.Pointer[[]injected] // as last read from the webhook configurations
}

var _ manager.LeaderElectionRunnable = (*Manager)(nil)

// New returns a Manager for o; Add connects it to a controller-runtime manager.
func New(o Options) *Manager { return &Manager{opts: o, now: time.Now} }

// Add gives m the manager's client, API reader and election, and runs m with the manager. Reads go to the
// API server (never to the manager's cache, which would list every Secret and webhook configuration).
func (m *Manager) Add(mgr manager.Manager) error {
	m.writer, m.reader, m.elected = mgr.GetClient(), mgr.GetAPIReader(), mgr.Elected()
	m.log = mgr.GetLogger().WithName("certs")
	return mgr.Add(m)
}

// NeedLeaderElection is false: every replica must load the certificate it serves; the writes are gated
// on the election inside (leading).
func (m *Manager) NeedLeaderElection() bool { return false }

// Start looks every CheckInterval (more often while not ready) until ctx ends.
func (m *Manager) Start(ctx context.Context) error {
	m.log.Info("Managing the webhook certificates", "namespace", m.opts.Namespace,
		"caSecret", CASecretName, "certSecret", CertSecretName, "webhookConfiguration", m.opts.WebhookConfiguration)
	for {
		if err := m.sync(ctx); err != nil && ctx.Err() == nil {
			m.log.Error(err, "Webhook certificates not in order yet; retrying")
		}
		wait := m.opts.CheckInterval
		if m.Ready(nil) != nil {
			wait = min(wait, notReadyInterval)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

func (m *Manager) sync(ctx context.Context) error {
	if m.leading() {
		if err := m.issue(ctx); err != nil {
			return err
		}
	}
	return m.load(ctx)
}

// leading reports whether this replica holds the lease (or runs without leader election).
func (m *Manager) leading() bool {
	select {
	case <-m.elected:
		return true
	default:
		return false
	}
}

// GetCertificate serves the loaded certificate (tls.Config.GetCertificate): a renewal is served at the
// next handshake, without a restart.
func (m *Manager) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := m.served.Load(); c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("no serving certificate yet: waiting for Secret %s/%s", m.opts.Namespace, CertSecretName)
}

// Ready is a healthz checker: nil once the certificate served verifies, for the name the API server
// calls, against the caBundle of every webhook of both configurations.
func (m *Manager) Ready(*http.Request) error {
	served := m.served.Load()
	if served == nil {
		return fmt.Errorf("no serving certificate loaded yet from Secret %s/%s", m.opts.Namespace, CertSecretName)
	}
	bundles := m.bundles.Load()
	if bundles == nil {
		return fmt.Errorf("the webhook configurations %s have not been read yet", m.opts.WebhookConfiguration)
	}
	for _, b := range *bundles {
		if err := verify(served.Leaf, b.bundle, m.opts.hosts()[0], m.now()); err != nil {
			return fmt.Errorf("the certificate served does not verify against the caBundle of webhook %s in %s: %w", b.webhook, b.config, err)
		}
	}
	return nil
}

// get reads one Secret of the namespace; a missing one is (nil, nil).
func (m *Manager) get(ctx context.Context, name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	err := m.reader.Get(ctx, types.NamespacedName{Namespace: m.opts.Namespace, Name: name}, s)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return s, err
}

// write creates s when it is new (no resourceVersion), else patches its data under the resourceVersion
// read (a merge patch with optimistic lock): a replica that read an older version gets a conflict and
// looks again, so concurrent replicas never overwrite each other.
func (m *Manager) write(ctx context.Context, s *corev1.Secret, name string, data map[string][]byte) error {
	if s.ResourceVersion == "" {
		s.ObjectMeta = metav1.ObjectMeta{Namespace: m.opts.Namespace, Name: name,
			Labels: map[string]string{"app.kubernetes.io/name": "liqo-janitor", "app.kubernetes.io/component": "webhook-certificates"}}
		s.Data, s.Type = data, corev1.SecretTypeTLS
		return m.writer.Create(ctx, s)
	}
	before := s.DeepCopy()
	s.Data = data
	return m.writer.Patch(ctx, s, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}
