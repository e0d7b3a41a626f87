package fencerenew_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor/fencerenew"
	"github.com/liqo-janitor/liqo-janitor/janitor/providerfence"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// The provider: a second control plane of its own (started once, by the first test that needs it), whose
// cluster ID is providerID; the consumer is the package's control plane.
const (
	providerID    = "provider-p"
	consumerID    = "consumer-c"
	liqoNamespace = "liqo"
	renewEvery    = time.Second
	fenceAfter    = 8 * time.Second
)

var provider struct {
	env *harness.Env
	err error
}

func TestMain(m *testing.M) {
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	code := harness.Run(m, harness.Options{}, func(e *harness.Env) error {
		return e.InstallLocalClusterID(context.Background(), liqoNamespace, consumerID)
	})
	if provider.env != nil {
		if err := provider.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the provider:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// providerEnv is the provider's control plane.
func providerEnv(t *testing.T) *harness.Env {
	t.Helper()
	harness.Require(t)
	if provider.env == nil && provider.err == nil {
		provider.env, provider.err = harness.Start(harness.Options{})
		if provider.err == nil {
			provider.err = provider.env.InstallLocalClusterID(context.Background(), liqoNamespace, providerID)
		}
	}
	if provider.err != nil {
		t.Fatal(provider.err)
	}
	return provider.env
}

// peering is the consumer (the package's control plane, cluster ID consumerID) opted in on the provider,
// with a tenant of its own for each test (the provider tells them apart by tenant namespace only: the
// credential names it), its fence credential in a janitor namespace of its own, and its ForeignCluster of
// the provider.
type peering struct {
	id, janitorNS string
	tenant        *fixture.Tenant
	fc            *liqov1beta1.ForeignCluster
	stopAgent     func()
	stopRenewer   func()
}

// peer lays out a consumer, starts the provider's agent and this consumer's renewer.
func peer(t *testing.T) *peering {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	consumer, prov := harness.Require(t), providerEnv(t)
	p := &peering{id: fixture.Prefix("consumer-")}
	var err error
	p.tenant, err = fixture.LayOutTenant(ctx, prov.Client, fixture.TenantSpec{ID: p.id, Provider: providerID, FenceAfter: fenceAfter.String()})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = prov.Client.Delete(context.Background(), p.tenant.Tenant) })
	kubeconfig, err := prov.FenceCredential(ctx, p.tenant.Namespace)
	g.Expect(err).NotTo(HaveOccurred())
	p.fc = &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{GenerateName: "provider-",
		Labels: map[string]string{liqojanitor.RemoteClusterIDLabel: providerID}},
		Spec: liqov1beta1.ForeignClusterSpec{ClusterID: providerID}}
	g.Expect(consumer.Client.Create(ctx, p.fc)).To(Succeed())
	fixture.RetireAtEnd(t, consumer.Client, p.fc)
	p.startAgent(t)
	p.stopRenewer, p.janitorNS, err = consumer.StartFenceRenewer(fencerenew.Options{LiqoNamespace: liqoNamespace, Interval: renewEvery})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(p.stopRenewer)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "fence-" + providerID, Namespace: p.janitorNS,
		Labels: map[string]string{liqojanitor.ProviderFenceSecretLabel: providerID}},
		Data: map[string][]byte{liqojanitor.ProviderFenceKubeconfigKey: kubeconfig}}
	g.Expect(consumer.Client.Create(ctx, secret)).To(Succeed())
	return p
}

func (p *peering) startAgent(t *testing.T) {
	t.Helper()
	stop, err := providerEnv(t).StartProviderFence(providerfence.Options{LiqoNamespace: liqoNamespace, Poll: time.Second, GraceCap: 2 * time.Second}, nil)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	p.stopAgent = stop
	t.Cleanup(stop)
}

// record is the renewer's record of the provider, as the gate and the janitor read it.
func (p *peering) record(t *testing.T) liqojanitor.FenceRenewal {
	t.Helper()
	cm := &corev1.ConfigMap{}
	err := harness.Require(t).Client.Get(t.Context(), client.ObjectKey{Namespace: p.janitorNS, Name: liqojanitor.FenceRenewalsConfigMap}, cm)
	if apierrors.IsNotFound(err) {
		return liqojanitor.FenceRenewal{}
	}
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return liqojanitor.FenceRenewals(cm)[providerID]
}

// lease is the consumer's Lease on the provider.
func (p *peering) lease(t *testing.T) *coordinationv1.Lease {
	t.Helper()
	l := &coordinationv1.Lease{}
	NewWithT(t).Expect(providerEnv(t).Client.Get(t.Context(), client.ObjectKey{Namespace: p.tenant.Namespace, Name: liqojanitor.FenceLeaseName}, l)).To(Succeed())
	return l
}

// TestRenewalsAreAcknowledgedAndKept: the renewer renews the provider's Lease as renew rule 2 says (this
// consumer's cluster ID, its interval), the agent arms, and the renewer keeps the contract, lastAck and
// lastLanded in its ConfigMap (renew rules 3 and 4); the deadline is lastLanded + the contract's SafeAfter.
func TestRenewalsAreAcknowledgedAndKept(t *testing.T) {
	g := NewWithT(t)
	p := peer(t)
	g.Eventually(func() *time.Time { return p.record(t).LastAck }).ShouldNot(BeNil(), "an acknowledged renewal")
	rec := p.record(t)
	d, c, ok := rec.Deadline()
	g.Expect(ok).To(BeTrue())
	g.Expect(c.ProviderClusterID).To(Equal(providerID))
	g.Expect(d).To(Equal(rec.LastLanded.Add(c.SafeAfter())))
	g.Expect(rec.LastLanded.Before(*rec.LastAck)).To(BeFalse())
	l := p.lease(t)
	g.Expect(ptr.Deref(l.Spec.HolderIdentity, "")).To(Equal(consumerID))
	g.Expect(ptr.Deref(l.Spec.LeaseDurationSeconds, 0)).To(Equal(int32(1)))
	s, err := fixture.FenceState(t.Context(), providerEnv(t).Client, p.tenant.Namespace)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.ArmedAt).NotTo(BeNil())
	g.Expect(s.Fence).To(BeNil())
	first := *rec.LastAck
	g.Eventually(func() time.Time { return *p.record(t).LastAck }).Should(BeTemporally(">", first), "acknowledged again and again")
}

// TestWithTheAgentStoppedRenewalsLandButAreNotAcknowledged: the provider's API server answers, its agent
// does not run: renewals succeed, lastLanded advances, lastAck freezes and its age (the metric the alert
// reads) grows (renew rule 3).
func TestWithTheAgentStoppedRenewalsLandButAreNotAcknowledged(t *testing.T) {
	g := NewWithT(t)
	p := peer(t)
	g.Eventually(func() *time.Time { return p.record(t).LastAck }).ShouldNot(BeNil())
	p.stopAgent()
	frozen := *p.record(t).LastAck
	landed := *p.record(t).LastLanded
	g.Eventually(func() time.Time { return *p.record(t).LastLanded }).Should(BeTemporally(">", landed.Add(3*renewEvery)), "renewals still land")
	// the last renewal the stopped agent published an ack for may still be acknowledged once
	g.Expect(*p.record(t).LastAck).To(BeTemporally("<=", frozen.Add(2*renewEvery)))
	frozen = *p.record(t).LastAck
	g.Consistently(func() time.Time { return *p.record(t).LastAck }).WithTimeout(3 * renewEvery).Should(BeTemporally("==", frozen))
	g.Eventually(func() float64 { return gauge(t, "liqo_janitor_fence_last_ack_age_seconds") }).Should(BeNumerically(">=", 3), "the ack's age grows")
}

// TestAMarkStopsTheRenewals: once the provider's ForeignCluster is marked, the renewer never renews its
// Lease again for that mark (renew rule 5): the provider sees no further renewal; an unmark resumes them.
func TestAMarkStopsTheRenewals(t *testing.T) {
	g := NewWithT(t)
	c := harness.Require(t).Client
	p := peer(t)
	g.Eventually(func() *time.Time { return p.record(t).LastAck }).ShouldNot(BeNil())
	g.Expect(fixture.MarkCluster(t.Context(), c, p.fc, liqojanitor.MarkedAtAnnotation, "2026-12-06T12:00:00Z")).To(Succeed())
	g.Eventually(func() string { return p.record(t).StoppedForMark }).Should(Equal("2026-12-06T12:00:00Z"))
	renewed := p.lease(t).Spec.RenewTime.Time
	g.Consistently(func() time.Time { return p.lease(t).Spec.RenewTime.Time }).WithTimeout(4*renewEvery).Should(BeTemporally("==", renewed),
		"the provider sees no renewal after the mark")
	g.Expect(fixture.Annotate(t.Context(), c, p.fc, map[string]*string{liqojanitor.MarkAnnotation: nil})).To(Succeed())
	g.Eventually(func() time.Time { return p.lease(t).Spec.RenewTime.Time }).Should(BeTemporally(">", renewed), "an unmark resumes them")
	// the renewal reaches the provider before the renewer writes its record: await the record too
	g.Eventually(func() string { return p.record(t).StoppedForMark }).Should(BeEmpty(), "the record no longer says stopped")
}

// TestAProviderThatFencedAHealthyConsumerIsReported: the renewer was away longer than fenceAfter (an
// outage of this consumer's janitor); the provider fenced it. Renewing again, the renewer keeps the
// provider's record and warns on the ForeignCluster with the next step (renew rule 6).
func TestAProviderThatFencedAHealthyConsumerIsReported(t *testing.T) {
	g := NewWithT(t)
	c := harness.Require(t).Client
	p := peer(t)
	g.Eventually(func() *time.Time { return p.record(t).LastAck }).ShouldNot(BeNil())
	p.stopRenewer()
	g.Eventually(func() (*liqojanitor.ProviderFence, error) {
		s, err := fixture.FenceState(t.Context(), providerEnv(t).Client, p.tenant.Namespace)
		return s.Fence, err
	}).ShouldNot(BeNil(), "the provider fences the consumer that stopped renewing")
	stop, _, err := harness.Require(t).StartFenceRenewer(fencerenew.Options{Namespace: p.janitorNS, LiqoNamespace: liqoNamespace, Interval: renewEvery})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(stop)
	g.Eventually(func() string { return p.record(t).ProviderFenced }).Should(ContainSubstring(`"shadowPods":2`))
	g.Eventually(func() ([]string, error) {
		var evs eventsv1.EventList
		err := c.List(t.Context(), &evs)
		var notes []string
		for _, ev := range evs.Items {
			if ev.Regarding.Name == p.fc.Name && ev.Reason == "FencedByProvider" {
				notes = append(notes, ev.Note)
			}
		}
		return notes, err
	}).Should(ContainElement(And(ContainSubstring("fenced by the provider at"), ContainSubstring("kubectl liqo-janitor unfence"))))
}

// gauge is the renewer's gauge for the provider, as the process's metrics registry has it.
func gauge(t *testing.T, name string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "provider" && l.GetValue() == providerID {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}
