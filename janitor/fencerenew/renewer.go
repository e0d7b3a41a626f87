package fencerenew

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor/internal/leaderloop"
)

// DefaultInterval is --fence-renew-interval's default.
const DefaultInterval = 10 * time.Second

// ReportingController is the reportingController of the renewer's events: the janitor's (its events
// policy lets only the janitor's ServiceAccount write under that name).
const ReportingController = liqojanitor.Name

// Options are the renewer's settings.
type Options struct {
	// Namespace is the janitor's own: the credentials' Secrets and the renewals ConfigMap live there.
	Namespace string
	// LiqoNamespace holds Liqo's cluster-ID ConfigMap: this consumer's cluster ID is the renewals' holder.
	LiqoNamespace string
	// Interval is how often each provider's Lease is renewed, in whole seconds (the Lease states it in
	// spec.leaseDurationSeconds); each request may take half of it.
	Interval time.Duration
}

// Default fills the settings left zero.
func (o Options) Default() Options {
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	return o
}

// Validate says what is wrong with the settings.
func (o Options) Validate() error {
	var errs []error
	if o.Namespace == "" || o.LiqoNamespace == "" {
		errs = append(errs, errors.New("the fence renewer needs the janitor's namespace and Liqo's"))
	}
	if o.Interval < time.Second || o.Interval%time.Second != 0 {
		errs = append(errs, fmt.Errorf("--fence-renew-interval %s must be a whole number of seconds, at least 1s "+
			"(the Lease states it in spec.leaseDurationSeconds)", o.Interval))
	}
	return errors.Join(errs...)
}

// timeout bounds every request to a provider (renew rule 2).
func (o Options) timeout() time.Duration { return o.Interval / 2 }

// Renewer renews the providers' fence Leases (the package's rules).
type Renewer struct {
	c        client.Client
	recorder events.EventRecorder
	opts     Options
	now      func() time.Time

	mu        sync.Mutex
	providers map[string]*provider
	// failing is, per provider, the last renewal error reported: a partition fails every renewal the same
	// way, and is reported once (and its end once), not every interval.
	failing map[string]string
}

// provider is what the leader keeps of one provider between renewals.
type provider struct {
	// secret identifies the credential the client was made of (UID and resourceVersion).
	secret string
	c      client.Client
	// namespace is the provider's tenant namespace of this consumer, where the Lease is.
	namespace string
	// prevRV is the resourceVersion of this leader's last successful renewal (renew rule 3).
	prevRV string
	// warned is the provider's fence record last warned about (renew rule 6).
	warned string
}

// New returns a renewer that reads live and writes through c.
func New(c client.Client, recorder events.EventRecorder, opts Options) *Renewer {
	return &Renewer{c: c, recorder: recorder, opts: opts.Default(), now: time.Now, providers: map[string]*provider{}, failing: map[string]string{}}
}

// Setup adds the renewer to mgr, on the elected leader, reading live (uncached).
func Setup(mgr manager.Manager, opts Options) error {
	opts = opts.Default()
	if err := opts.Validate(); err != nil {
		return err
	}
	c, err := leaderloop.LiveClient(mgr, "the fence renewer")
	if err != nil {
		return err
	}
	return mgr.Add(New(c, mgr.GetEventRecorder(ReportingController), opts).Loop())
}

// Loop is the renewer's work: a round of renewals every interval, on the janitor's leader only.
func (r *Renewer) Loop() leaderloop.Loop {
	return leaderloop.Loop{Name: "fence-renewer", Every: r.opts.Interval, Round: func(ctx context.Context) {
		if err := r.round(ctx); err != nil && ctx.Err() == nil {
			logf.FromContext(ctx).Error(err, "Renewing the providers' fence Leases")
		}
	}}
}

// round renews every provider this consumer holds a credential for, once.
func (r *Renewer) round(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, r.opts.Interval)
	defer cancel()
	var secrets corev1.SecretList
	if err := r.c.List(rctx, &secrets, client.InNamespace(r.opts.Namespace), client.HasLabels{liqojanitor.ProviderFenceSecretLabel}); err != nil {
		return fmt.Errorf("listing the fence credentials: %w", err)
	}
	if len(secrets.Items) == 0 {
		r.forgetAllBut(nil)
		return nil
	}
	localID, err := liqojanitor.LocalClusterID(rctx, r.c, r.opts.LiqoNamespace)
	if err != nil {
		return err
	}
	var fcs liqov1beta1.ForeignClusterList
	if err := r.c.List(rctx, &fcs); err != nil {
		return fmt.Errorf("listing ForeignClusters: %w", err)
	}
	store, err := r.loadRecords(rctx)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	var errs []error
	for i := range secrets.Items {
		s := &secrets.Items[i]
		id := s.Labels[liqojanitor.ProviderFenceSecretLabel]
		if id == "" || seen[id] {
			errs = append(errs, fmt.Errorf("the Secret %s: its label %s must name one provider's cluster ID, once", s.Name, liqojanitor.ProviderFenceSecretLabel))
			continue
		}
		seen[id] = true
		before, err := store.read(id)
		if err != nil {
			// never written over: the gate and the janitor hold the provider while it cannot be read
			errs = append(errs, fmt.Errorf("provider %s: %w: fix or delete the key %s of ConfigMap %s/%s (the gate and the janitor hold it meanwhile)",
				id, err, id, r.opts.Namespace, liqojanitor.FenceRenewalsConfigMap))
			continue
		}
		after, err := r.renewOne(ctx, s, id, localID, before, marksOf(fcs.Items, id))
		if r.changed(ctx, id, err) {
			errs = append(errs, fmt.Errorf("provider %s: %w", id, err))
		}
		setMetrics(id, after, r.now())
		if after.String() != before.String() {
			if err := store.write(rctx, r.c, id, after); err != nil {
				errs = append(errs, err)
			}
		}
	}
	r.forgetAllBut(seen)
	return errors.Join(errs...)
}

// changed says whether err is news for provider id (the first of its kind, to report), and logs the end of
// a run of failures.
func (r *Renewer) changed(ctx context.Context, id string, err error) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	last := r.failing[id]
	if err == nil {
		if last != "" {
			delete(r.failing, id)
			logf.FromContext(ctx).Info("Renewals of this provider's fence Lease succeed again", "provider", id)
		}
		return false
	}
	kind := failureKind(err)
	r.failing[id] = kind
	return kind != last
}

// failureKind is what a renewal error says, without what changes from one attempt to the next (the
// request's URL and timings are the same for a partition; the message's head names the failure).
func failureKind(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, ": "); i > 0 {
		return msg[:i]
	}
	return msg
}

// clusterMarks is what the live ForeignClusters of one cluster ID say of its mark.
type clusterMarks struct {
	fcs []*liqov1beta1.ForeignCluster
	// mark is the marked-at stamp of a marked one ("" when none is marked; "(no marked-at stamp)" when
	// marked past the gate).
	mark string
}

func marksOf(items []liqov1beta1.ForeignCluster, id string) clusterMarks {
	var m clusterMarks
	for i := range items {
		fc := &items[i]
		if string(fc.Spec.ClusterID) != id && fc.Labels[liqojanitor.RemoteClusterIDLabel] != id {
			continue
		}
		m.fcs = append(m.fcs, fc)
		if liqojanitor.IsMarked(fc.Annotations) && m.mark == "" {
			m.mark = fc.Annotations[liqojanitor.MarkedAtAnnotation]
			if m.mark == "" {
				m.mark = "(no marked-at stamp)"
			}
		}
	}
	return m
}

// renewOne is one renewal of one provider, unless it is marked (renew rule 5), and returns the record after.
func (r *Renewer) renewOne(ctx context.Context, s *corev1.Secret, id, localID string, rec liqojanitor.FenceRenewal, marks clusterMarks) (
	liqojanitor.FenceRenewal, error) {
	if marks.mark != "" {
		if rec.StoppedForMark != marks.mark {
			logf.FromContext(ctx).Info("A mark stops the renewals of this provider's fence Lease", "provider", id, "markedAt", marks.mark)
			renewalsTotal.WithLabelValues(id, "stopped").Inc()
		}
		rec.StoppedForMark = marks.mark
		return rec, nil
	}
	rec.StoppedForMark = ""
	p, err := r.providerFor(s, id)
	if err != nil {
		return rec, err
	}
	return r.renew(ctx, p, id, localID, rec, marks)
}

// providerFor is the provider's client, made again when its credential changed.
func (r *Renewer) providerFor(s *corev1.Secret, id string) (*provider, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	version := string(s.UID) + "/" + s.ResourceVersion
	if p := r.providers[id]; p != nil && p.secret == version {
		return p, nil
	}
	c, ns, err := clientFor(s.Data[liqojanitor.ProviderFenceKubeconfigKey], r.opts.timeout())
	if err != nil {
		return nil, fmt.Errorf("the Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	p := &provider{secret: version, c: c, namespace: ns}
	if old := r.providers[id]; old != nil {
		p.warned = old.warned
	}
	r.providers[id] = p
	return p, nil
}

func (r *Renewer) forgetAllBut(seen map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range r.providers {
		if !seen[id] {
			delete(r.providers, id)
			forgetMetrics(id)
		}
	}
}

// renew updates the provider's Lease (renew rule 2) and records what its answer shows (renew rules 3
// and 4); a conflict (the agent wrote in between) is read again and retried once.
func (r *Renewer) renew(ctx context.Context, p *provider, id, localID string, rec liqojanitor.FenceRenewal, marks clusterMarks) (
	liqojanitor.FenceRenewal, error) {
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		lease := &coordinationv1.Lease{}
		gctx, cancel := context.WithTimeout(ctx, r.opts.timeout())
		err = p.c.Get(gctx, client.ObjectKey{Namespace: p.namespace, Name: liqojanitor.FenceLeaseName}, lease)
		cancel()
		if err != nil {
			break
		}
		var sent time.Time
		var wrote bool
		lease, sent, wrote, err = r.update(ctx, p, lease, localID)
		switch {
		case err == nil:
			return r.answered(ctx, p, id, rec, lease, marks), nil
		case apierrors.IsConflict(err):
			continue
		case wrote:
			// sent, with no answer: it may have landed by the time the request could last (renew rule 4)
			rec.LastLanded = later(rec.LastLanded, sent.Add(r.opts.timeout()))
			renewalsTotal.WithLabelValues(id, "unknown").Inc()
			return rec, fmt.Errorf("renewal sent, outcome unknown: %w", err)
		}
		break
	}
	renewalsTotal.WithLabelValues(id, "failed").Inc()
	return rec, fmt.Errorf("renewal not sent: %w", err)
}

// answered records a renewal the provider answered: it landed by now; it is acknowledged if the answer
// shows the agent observed the previous one (renew rule 3).
func (r *Renewer) answered(ctx context.Context, p *provider, id string, rec liqojanitor.FenceRenewal, lease *coordinationv1.Lease,
	marks clusterMarks) liqojanitor.FenceRenewal {
	at := r.now()
	rec.LastLanded = later(rec.LastLanded, at)
	a := lease.Annotations
	contract, err := liqojanitor.ParseFenceContract(a[liqojanitor.FenceContractAnnotation])
	switch {
	case err != nil:
		rec.Contract = "" // no contract: nothing promised, nothing to wait for
	case contract.ProviderClusterID != id:
		rec.Contract = ""
		logf.FromContext(ctx).Info("The provider's fence contract names another cluster: not counted", "provider", id,
			"contractProvider", contract.ProviderClusterID)
	default:
		rec.Contract = a[liqojanitor.FenceContractAnnotation]
	}
	acked := rec.Contract != "" && a[liqojanitor.ArmedAtAnnotation] != "" && p.prevRV != "" && a[liqojanitor.SeenRVAnnotation] == p.prevRV
	p.prevRV = lease.ResourceVersion
	if acked {
		rec.LastAck = &at
		renewalsTotal.WithLabelValues(id, "acknowledged").Inc()
	} else {
		renewalsTotal.WithLabelValues(id, "unacknowledged").Inc()
	}
	rec.ProviderFenced = a[liqojanitor.ProviderFencedAnnotation]
	r.warnFenced(p, id, rec, marks)
	return rec
}

// warnFenced tells, once per record, that the provider fenced this consumer although its ForeignCluster is
// not marked: this consumer's renewals did not reach it in time (renew rule 6).
func (r *Renewer) warnFenced(p *provider, id string, rec liqojanitor.FenceRenewal, marks clusterMarks) {
	if rec.ProviderFenced == "" || rec.ProviderFenced == p.warned || r.recorder == nil {
		return
	}
	p.warned = rec.ProviderFenced
	what := rec.ProviderFenced
	if f, err := liqojanitor.ParseProviderFence(rec.ProviderFenced); err == nil {
		what = f.Describe()
	}
	for _, fc := range marks.fcs {
		r.recorder.Eventf(fc, nil, corev1.EventTypeWarning, "FencedByProvider", "Renew",
			"provider %s %s: it observed no renewal of this consumer for its fenceAfter (a renewer outage here, or a partition), "+
				"and this consumer's pods there are stopped; when they should run there again, the provider's admin runs "+
				"kubectl liqo-janitor unfence <this cluster's ID> on the provider", id, what)
	}
}

func later(t *time.Time, u time.Time) *time.Time {
	if t != nil && t.After(u) {
		return t
	}
	return &u
}
