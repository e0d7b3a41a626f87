package providerfence

import (
	"context"
	"fmt"
	"sync"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor/internal/leaderloop"
)

// ReportingController is the reportingController of the agent's events.
const ReportingController = liqojanitor.Name + "-provider-fence"

// Agent is the provider fence: every Poll it reads each opted-in consumer's Lease and its own record live,
// and fences a consumer whose renewals stopped (the package's rules).
type Agent struct {
	c        client.Client
	recorder events.EventRecorder
	opts     Options
	now      func() time.Time

	mu sync.Mutex
	// memory is, per Tenant UID, what one leader's polls carry from one to the next.
	memory map[types.UID]*memo
}

// memo is what the leader remembers of one consumer between polls.
type memo struct {
	// polled: a poll of this consumer succeeded since this leader began and none failed since.
	polled    bool
	holdUntil time.Time
	// refused is the last refusal announced (an Event once per distinct refusal).
	refused string
	// logged is the last deadline logged.
	logged time.Time
}

// New returns the agent, which reads and writes through c (uncached: every read is live, fence rule 3)
// and reports through recorder. opts must be valid (Options.Validate).
func New(c client.Client, recorder events.EventRecorder, opts Options) *Agent {
	return &Agent{c: c, recorder: recorder, opts: opts.Default(), now: time.Now, memory: map[types.UID]*memo{}}
}

// Setup adds the agent to mgr, to run on the elected leader, reading and writing live.
func Setup(mgr manager.Manager, opts Options) error {
	opts = opts.Default()
	if err := opts.Validate(); err != nil {
		return err
	}
	c, err := leaderloop.LiveClient(mgr, "the provider fence")
	if err != nil {
		return err
	}
	return mgr.Add(New(c, mgr.GetEventRecorder(ReportingController), opts).Loop())
}

// Loop is the agent's work: a round of polls every Poll, on the elected leader only (only the leader
// fences).
func (a *Agent) Loop() leaderloop.Loop {
	return leaderloop.Loop{Name: "provider-fence", Every: a.opts.Poll, Round: a.round}
}

// round polls every opted-in consumer once, within one Poll: a read that does not answer by then has
// failed (fence rule 7).
func (a *Agent) round(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, a.opts.Poll)
	defer cancel()
	var tenants authv1beta1.TenantList
	if err := a.c.List(rctx, &tenants); err != nil {
		if ctx.Err() != nil {
			return
		}
		logf.FromContext(ctx).Info("The API server does not answer: no fence while it does not", "error", err.Error())
		a.forgetPolls()
		return
	}
	providerID, idErr := liqojanitor.LocalClusterID(rctx, a.c, a.opts.LiqoNamespace)
	seen := map[types.UID]bool{}
	for i := range tenants.Items {
		t := &tenants.Items[i]
		if _, ok := t.Annotations[liqojanitor.FenceAfterAnnotation]; !ok {
			continue // fence rule 1
		}
		seen[t.UID] = true
		m := a.memo(t.UID)
		err := idErr
		if err == nil {
			err = a.poll(ctx, rctx, t, providerID, m)
		}
		if err != nil && ctx.Err() == nil { // an agent that stops ends its polls: nothing to report
			m.polled = false
			logf.FromContext(ctx).Error(err, "Polling a consumer", "tenant", klog.KObj(t), "consumer", t.Spec.ClusterID)
		}
	}
	a.forgetAllBut(seen)
}

func (a *Agent) memo(uid types.UID) *memo {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := a.memory[uid]
	if m == nil {
		m = &memo{}
		a.memory[uid] = m
	}
	return m
}

// forgetPolls marks every consumer as not polled since a failure (fence rule 7).
func (a *Agent) forgetPolls() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, m := range a.memory {
		m.polled = false
	}
}

func (a *Agent) forgetAllBut(seen map[types.UID]bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for uid := range a.memory {
		if !seen[uid] {
			delete(a.memory, uid)
			forgetMetrics(string(uid))
		}
	}
}

// poll is one poll of one consumer: read, decide, record, publish, fence.
func (a *Agent) poll(ctx, rctx context.Context, t *authv1beta1.Tenant, providerID string, m *memo) error {
	cons, err := a.consumerOf(rctx, t)
	if err != nil || cons == nil {
		return err
	}
	fenceAfter, ok := fenceAfterOf(t)
	if !ok {
		a.announce(t, m, corev1.EventTypeWarning, "FenceRefused", fmt.Sprintf("%s %q is not a positive duration such as \"120s\": "+
			"this consumer is not fenced until it is", liqojanitor.FenceAfterAnnotation, t.Annotations[liqojanitor.FenceAfterAnnotation]))
		return nil
	}
	contract := a.opts.contract(fenceAfter, providerID)
	lease, stateLease, state, err := a.read(rctx, cons, contract)
	if err != nil {
		return err
	}
	contractAt := func(f time.Duration) liqojanitor.FenceContract { return a.opts.contract(f, providerID) }
	v := decide(a.now(), contract, contractAt, lease, state, !m.polled, m.holdUntil)
	if v.fence && v.state.Fence == nil {
		at := a.now()
		v.state.Fence = &liqojanitor.ProviderFence{StartedAt: at, LastObservedAt: v.state.ObservedAt}
	}
	stateLease, err = a.record(rctx, cons, stateLease, state, v.state)
	if err != nil {
		return err // nothing counts before it is recorded (fence rules 3 and 6)
	}
	m.polled, m.holdUntil = true, v.holdUntil
	a.report(ctx, t, m, v)
	if err := a.publish(rctx, lease, contract, v); err != nil {
		logf.FromContext(ctx).Info("Publishing on the consumer's Lease (next poll retries)", "lease", klog.KObj(lease), "error", err.Error())
	}
	if v.state.Fence == nil {
		return nil
	}
	return a.enforce(ctx, t, cons, stateLease, v.state)
}

// fenceAfterOf is the Tenant's opt-in, if it is a positive duration.
func fenceAfterOf(t *authv1beta1.Tenant) (time.Duration, bool) {
	d, err := time.ParseDuration(t.Annotations[liqojanitor.FenceAfterAnnotation])
	return d, err == nil && d > 0
}

// consumer is one opted-in consumer: its cluster ID and its tenant namespace.
type consumer struct {
	id, namespace string
}

// consumerOf checks fence rule 1: the Tenant is in the tenant namespace Liqo made for its cluster ID.
// nil, with an Event, when it is not.
func (a *Agent) consumerOf(ctx context.Context, t *authv1beta1.Tenant) (*consumer, error) {
	id := string(t.Spec.ClusterID)
	var ns corev1.Namespace
	if err := a.c.Get(ctx, client.ObjectKey{Name: t.Namespace}, &ns); err != nil {
		return nil, fmt.Errorf("reading the Tenant's namespace: %w", err)
	}
	if _, ok := ns.Labels[liqojanitor.TenantNamespaceLabel]; id == "" || !ok || ns.Labels[liqojanitor.RemoteClusterIDLabel] != id {
		a.announce(t, a.memo(t.UID), corev1.EventTypeWarning, "FenceRefused", fmt.Sprintf("the Tenant of cluster %q is not in the tenant namespace "+
			"Liqo made for it (labels %s=%s and %s): this consumer is not fenced", id, liqojanitor.RemoteClusterIDLabel, id, liqojanitor.TenantNamespaceLabel))
		return nil, nil
	}
	return &consumer{id: id, namespace: t.Namespace}, nil
}

// report shows the poll's outcome: metrics always, an Event and a log line on each change.
func (a *Agent) report(ctx context.Context, t *authv1beta1.Tenant, m *memo, v verdict) {
	setMetrics(string(t.UID), string(t.Spec.ClusterID), v)
	log := logf.FromContext(ctx).WithValues("tenant", klog.KObj(t), "consumer", t.Spec.ClusterID)
	switch {
	case v.refused != nil:
		a.announce(t, m, corev1.EventTypeWarning, "FenceRefused", "not armed: "+v.refused.Error())
	case v.state.ArmedAt != nil && v.state.Fence == nil && m.refused != "armed":
		a.announce(t, m, corev1.EventTypeNormal, "FenceArmed", fmt.Sprintf("armed at %s by an observed renewal: "+
			"this consumer's pods are stopped %s after the last renewal observed", v.state.ArmedAt.UTC().Format(time.RFC3339), t.Annotations[liqojanitor.FenceAfterAnnotation]))
		m.refused = "armed"
	}
	if !v.deadline.IsZero() && !v.deadline.Equal(m.logged) && v.observed {
		m.logged = v.deadline
		log.V(1).Info("Renewal observed", "seenRV", v.state.SeenRV, "fenceDue", v.deadline)
	}
}

// announce writes an Event on the Tenant once per distinct message.
func (a *Agent) announce(t *authv1beta1.Tenant, m *memo, kind, reason, msg string) {
	if m.refused == msg {
		return
	}
	m.refused = msg
	if a.recorder != nil {
		a.recorder.Eventf(t, nil, kind, reason, "Fence", "%s", msg)
	}
}
