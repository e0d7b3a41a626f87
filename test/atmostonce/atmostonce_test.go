package atmostonce_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor/fencerenew"
	"github.com/liqo-janitor/liqo-janitor/janitor/providerfence"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
	"github.com/liqo-janitor/liqo-janitor/webhook"
)

// The scenario's settings: the short ones of the renewer's and the agent's tests, scaled alike, so that the
// deadline the consumer computes (FenceContract.SafeAfter, about 49 s) is reached within a test.
const (
	liqoNamespace = "liqo"
	// prefix names the consumer's layout (fixture.Build), whose provider is providerID.
	prefix     = "e2e"
	providerID = prefix + "-provider-0"
	// renewEvery is the consumer's --fence-renew-interval; poll, graceCap the provider agent's; fenceAfter
	// the provider's admin's opt-in on the consumer's Tenant.
	renewEvery = time.Second
	poll       = time.Second
	graceCap   = 2 * time.Second
	fenceAfter = 8 * time.Second
	// minUnreachable is the gate's --min-unreachable and gracePeriod the janitor's --grace-period, scaled
	// down as the rest (60 s and 30 s by default).
	minUnreachable = 2 * time.Second
	gracePeriod    = time.Second
	// replicas is the consumer's ReplicaSet's; marker the operator who marks (bound to the break-glass role).
	replicas = 2
	marker   = "alice"
)

// TestAtMostOnce (issue 37, end to end): a consumer renews a provider's fence Lease through a proxy, and the
// provider's agent runs. The proxy cuts consumer↔provider traffic (a partition); Liqo on the consumer sees
// the provider unreachable. Then what an operator and Kubernetes do on the consumer is played: the operator
// marks the provider dead as soon as the gate admits it (retrying; the gate's refusal names the time), then
// unpeers it (the VirtualNode deleted, and on Liqo v1.0.3 its drain's evictions); the janitor force-deletes
// the dead provider's pods (on v1.2.0 standing for Liqo's drain, which force-deletes them when the
// VirtualNode of a dead cluster is deleted); the ReplicaSet controller, the real one, replaces them. On this
// machine's one clock: the provider's last pod of this consumer is gone before the consumer's first
// deletion of a pod of the provider, and before the ReplicaSet's first replacement.
//
// Not played: Liqo's own controller manager on the consumer (its VirtualNode drain; the janitor, which
// deletes what that drain selects, stands for it — without the drain's immediacy: Liqo's drain acts at the
// VirtualNode's deletion, the janitor after its grace period) and the node lifecycle controller's taint
// eviction (its 300 s default toleration is beyond this timeline, and with the virtual node the only Node,
// NotReady, the zone counts as fully disrupted and that controller evicts nothing; the agent refuses a
// contract whose SafeAfter exceeds it: FenceContract.CheckArming).
func TestAtMostOnce(t *testing.T) {
	for _, version := range []string{"v1.0.3", "v1.2.0"} {
		t.Run("Liqo "+version, func(t *testing.T) {
			s := setUp(t, version)
			s.run(t)
		})
	}
}

// scenario is one consumer peered with the provider, before the partition.
type scenario struct {
	version, consumerID string
	prov, cons          *harness.Env
	// asMarker is the operator's client on the consumer.
	asMarker  client.Client
	janitorNS string
	p         *fixture.Provider
	// appNS is the consumer's offloaded namespace; rs its ReplicaSet there, whose pods, and a bare pod,
	// are bound to the provider's virtual node: ofX (UID → name).
	appNS string
	rs    *appsv1.ReplicaSet
	ofX   map[types.UID]string
	// tenant is the consumer's side on the provider; outage the proxy between the consumer's renewer and
	// the provider's API server.
	tenant  *fixture.Tenant
	outage  *harness.Outage
	deletes *deleteRecorder
}

// setUp starts the consumer's control plane with Liqo version's CRDs and lays out both sides, with the
// gate, the janitor, the renewer (through the proxy), the provider's agent and the consumer's ReplicaSet
// controller running, and returns once the provider's agent acknowledges the consumer's renewals.
func setUp(t *testing.T, version string) *scenario {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	s := &scenario{version: version, consumerID: "consumer-" + strings.NewReplacer("v", "", ".", "-").Replace(version)}
	s.prov = harness.Require(t)

	var err error
	s.cons, err = harness.Start(harness.Options{LiqoVersion: version, GeneratedWebhooks: true})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := s.cons.Stop(); err != nil {
			t.Errorf("stopping the consumer's control plane: %v", err)
		}
	})
	g.Expect(s.cons.InstallLocalClusterID(ctx, liqoNamespace, s.consumerID)).To(Succeed())
	g.Expect(s.cons.InstallOperators(ctx, []string{marker}, nil)).To(Succeed())
	s.asMarker, err = s.cons.NewClient(func(c *rest.Config) { c.Impersonate.UserName = marker })
	g.Expect(err).NotTo(HaveOccurred())
	// one namespace of the janitor's own for the gate, the janitor and the renewer: the renewals' record
	s.janitorNS = s.cons.OwnNamespace(t)
	g.Expect(s.cons.StartGate(webhook.Options{LiqoNamespace: liqoNamespace, MinUnreachable: minUnreachable, Namespace: s.janitorNS})).To(Succeed())
	_, err = s.cons.StartControllers([]string{"replicaset-controller"})
	g.Expect(err).NotTo(HaveOccurred())

	cons, err := fixture.Build(ctx, s.cons.Client, fixture.Spec{Prefix: prefix, Providers: 1, OffloadedNamespaces: 1})
	g.Expect(err).NotTo(HaveOccurred())
	s.p, s.appNS = cons.Providers[0], cons.Namespaces[0]
	g.Expect(s.p.ID).To(Equal(providerID))
	s.workload(t)

	s.providerSide(t)
	s.renewThroughProxy(t)
	s.deletes = &deleteRecorder{ns: s.appNS}
	stopJanitor, err := s.cons.StartJanitorWith(janitor.Options{Namespace: s.janitorNS, GracePeriod: gracePeriod, LiqoNamespace: liqoNamespace},
		func(c client.Client) client.Client { s.deletes.Client = c; return s.deletes })
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := stopJanitor(); err != nil {
			t.Errorf("stopping the janitor: %v", err)
		}
	})

	g.Eventually(func() *time.Time { return s.record(t).LastAck }).ShouldNot(BeNil(), "the provider's agent acknowledges the renewals")
	first := *s.record(t).LastAck
	g.Eventually(func() time.Time { return *s.record(t).LastAck }).Should(BeTemporally(">", first), "and goes on acknowledging them")
	return s
}

// workload creates the consumer's ReplicaSet and binds its pods to the provider's virtual node as the
// scheduler would, labelled as Liqo's virtual kubelet labels the pods it offloaded; and a bare pod there.
func (s *scenario) workload(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	c := s.cons.Client
	labels := map[string]string{"app": "web"}
	s.rs = &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: s.appNS},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(replicas)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				AutomountServiceAccountToken: ptr.To(false), Containers: []corev1.Container{{Name: "app", Image: "registry.example/web:1"}}}}}}
	g.Expect(c.Create(ctx, s.rs)).To(Succeed())
	var pods corev1.PodList
	g.Eventually(func() ([]corev1.Pod, error) {
		err := c.List(ctx, &pods, client.InNamespace(s.appNS), client.MatchingLabels(labels))
		return pods.Items, err
	}).Should(HaveLen(replicas), "the ReplicaSet controller makes the pods")
	s.ofX = map[types.UID]string{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
			Target: corev1.ObjectReference{Kind: "Node", Name: s.p.Node.Name}}
		g.Expect(c.SubResource("binding").Create(ctx, pod, binding)).To(Succeed())
		patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:"true"}}}`, liqojanitor.ShadowPodLabel)
		g.Expect(c.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
		s.ofX[pod.UID] = pod.Name
	}
	bare, err := fixture.BindPod(ctx, c, s.p, s.appNS, s.appNS+"-0", true)
	g.Expect(err).NotTo(HaveOccurred())
	s.ofX[bare.UID] = bare.Name
}

// providerSide lays out the consumer's side on the provider — its Tenant opted in with fenceAfter, and a
// ShadowPod with its pod for each of the consumer's pods there — and starts the provider's agent.
func (s *scenario) providerSide(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	var err error
	// one remote namespace, <appNS>-<consumer> as Liqo maps it, with the bare pod's copy <appNS>-0
	s.tenant, err = fixture.LayOutTenant(ctx, s.prov.Client, fixture.TenantSpec{ID: s.consumerID, Provider: providerID,
		FenceAfter: fenceAfter.String(), Apps: []string{s.appNS}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = s.prov.Client.Delete(context.Background(), s.tenant.Tenant) })
	for _, name := range s.ofX {
		if name == s.appNS+"-0" {
			continue
		}
		_, err := fixture.ShadowPod(ctx, s.prov.Client, s.tenant.RemoteNamespaces[0], name, s.consumerID, providerID)
		g.Expect(err).NotTo(HaveOccurred())
	}
	stop, err := s.prov.StartProviderFence(providerfence.Options{LiqoNamespace: liqoNamespace, Poll: poll, GraceCap: graceCap}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(stop)
}

// renewThroughProxy hands the consumer the fence credential, rewritten to reach the provider's API server
// through a proxy of its own (the partition), and starts the renewer.
func (s *scenario) renewThroughProxy(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	kubeconfig, err := s.prov.FenceCredential(ctx, s.tenant.Namespace)
	g.Expect(err).NotTo(HaveOccurred())
	s.outage, err = s.prov.NewOutage("fence-" + s.consumerID)
	g.Expect(err).NotTo(HaveOccurred())
	dir := t.TempDir()
	direct := filepath.Join(dir, "credential")
	g.Expect(os.WriteFile(direct, kubeconfig, 0o600)).To(Succeed())
	proxied, err := s.outage.Through(direct, filepath.Join(dir, "credential-through-proxy"))
	g.Expect(err).NotTo(HaveOccurred())
	kubeconfig, err = os.ReadFile(proxied)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(kubeconfig)).To(ContainSubstring(s.outage.Addr), "the renewer reaches the provider through the proxy only")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "fence-" + providerID, Namespace: s.janitorNS,
		Labels: map[string]string{liqojanitor.ProviderFenceSecretLabel: providerID}},
		Data: map[string][]byte{liqojanitor.ProviderFenceKubeconfigKey: kubeconfig}}
	g.Expect(s.cons.Client.Create(ctx, secret)).To(Succeed())
	stop, _, err := s.cons.StartFenceRenewer(fencerenew.Options{Namespace: s.janitorNS, LiqoNamespace: liqoNamespace, Interval: renewEvery})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(stop)
}

// record is the renewer's record of the provider, as the gate and the janitor read it.
func (s *scenario) record(t *testing.T) liqojanitor.FenceRenewal {
	t.Helper()
	cm := &corev1.ConfigMap{}
	err := s.cons.Client.Get(t.Context(), client.ObjectKey{Namespace: s.janitorNS, Name: liqojanitor.FenceRenewalsConfigMap}, cm)
	if apierrors.IsNotFound(err) {
		return liqojanitor.FenceRenewal{}
	}
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return liqojanitor.FenceRenewals(cm)[providerID]
}

// completesBy is the time a refusal of gate rule 31 names.
var completesBy = regexp.MustCompile(`completes by (\S+) \(`)

// markWhenAdmitted marks the provider as the operator does, again until the gate admits it (every 200 ms:
// the gate's refusal names the time the provider's fence completes; another refusal, the provider
// unreachable for less than --min-unreachable, passes by itself). It returns the times of the admitted
// request (sent, answered), the first refusal naming a deadline, and the deadline the last such refusal
// named.
func (s *scenario) markWhenAdmitted(t *testing.T, within time.Duration) (sent, answered, firstRefused, named time.Time, refusals int) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		sent = time.Now()
		err := fixture.Mark(t.Context(), s.asMarker, s.p)
		if err == nil {
			answered = time.Now()
			return nil
		}
		var status apierrors.APIStatus
		if !errors.As(err, &status) || !strings.Contains(err.Error(), "denied the request") {
			t.Fatalf("marking %s: not a refusal of the gate: %v", s.p.ID, err)
		}
		refusals++
		if m := completesBy.FindStringSubmatch(err.Error()); m != nil {
			at, perr := time.Parse(time.RFC3339, m[1])
			if perr != nil {
				t.Fatalf("the gate's refusal names no time: %v", err)
			}
			if firstRefused.IsZero() {
				firstRefused = sent
				t.Logf("the gate refuses the mark: %v", err)
			}
			named = at
		}
		return err
	}).WithTimeout(within).WithPolling(200*time.Millisecond).Should(Succeed(), "the gate admits the mark at the time it named")
	return sent, answered, firstRefused, named, refusals
}

// run partitions the consumer from the provider and plays the operator and Kubernetes on the consumer.
func (s *scenario) run(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	c := s.cons.Client
	onProvider := watchPods(t, s.prov.Config, "", fixture.OriginLabel+"="+s.consumerID)
	g.Expect(onProvider.initial).To(HaveLen(len(s.ofX)), "a copy on the provider of each of the consumer's pods there")
	onConsumer := watchPods(t, s.cons.Config, s.appNS, "")

	// the partition: the renewer's traffic to the provider is cut, and Liqo's API-server checker on the
	// consumer reports the provider unreachable
	partition := time.Now()
	s.outage.Down()
	g.Expect(fixture.SetAPIServerStatus(ctx, c, s.p.ForeignCluster, liqov1beta1.ConditionStatusError, 0)).To(Succeed())

	// the operator marks as soon as the gate admits it
	markSent, markAnswered, firstRefused, named, refusals := s.markWhenAdmitted(t, 3*time.Minute)
	rec := s.record(t)
	deadline, contract, ok := rec.Deadline()
	g.Expect(ok).To(BeTrue(), "the renewer recorded the provider's contract and a renewal that landed: %s", rec)

	// then unpeers: the VirtualNode and the peering's replicated objects deleted (liqoctl force unpeer; on
	// v1.0, deleting the tenant namespace); Liqo v1.0.3's drain evicts the VirtualNode's offloaded pods (and
	// waits), Liqo v1.2.0's force-deletes them for a dead cluster: here the janitor does (janitor rule 4).
	g.Expect(fixture.Terminate(ctx, c, s.p)).To(Succeed())
	var evicted time.Time
	if s.version == "v1.0.3" {
		evicted = time.Now()
		for uid, name := range s.ofX {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.appNS, UID: uid}}
			g.Expect(client.IgnoreNotFound(c.SubResource("eviction").Create(ctx, pod, &policyv1.Eviction{}))).To(Succeed(), "evicting %s", name)
		}
	}

	// the janitor force-deletes them; the ReplicaSet replaces its own
	g.Eventually(func() (int, error) {
		left := 0
		for uid, name := range s.ofX {
			pod := &corev1.Pod{}
			switch err := c.Get(ctx, client.ObjectKey{Namespace: s.appNS, Name: name}, pod); {
			case apierrors.IsNotFound(err):
			case err != nil:
				return 0, err
			case pod.UID == uid:
				left++
			}
		}
		return left, nil
	}).Should(BeZero(), "the janitor force-deletes the dead provider's pods")
	g.Eventually(func() *corev1.Pod { _, pod := onConsumer.firstAdded(s.rs.UID); return pod }).ShouldNot(BeNil(), "the ReplicaSet replaces them")
	g.Eventually(func() string { return s.record(t).StoppedForMark }).ShouldNot(BeEmpty(), "the mark stopped the renewals")

	// the provider's fence, whenever it came (awaited: a consumer that did not wait sees it after its own steps)
	g.Eventually(onProvider.lastGone).ShouldNot(BeZero(), "the provider's agent stops every copy of the consumer's pods")
	var state liqojanitor.FenceState
	g.Eventually(func() (*time.Time, error) {
		var err error
		state, err = fixture.FenceState(ctx, s.prov.Client, s.tenant.Namespace)
		if state.Fence == nil {
			return nil, err
		}
		return state.Fence.StoppedAt, err
	}).ShouldNot(BeNil(), "the agent records its fence done")

	// the timeline, on this machine's clock
	providerGone := onProvider.lastGone()
	janitorFirst, janitorPod := s.deletes.firstSent()
	g.Expect(janitorFirst).NotTo(BeZero(), "the janitor force-deleted the pods")
	consumerFirst := janitorFirst // the first request that deleted a pod of the provider, as it was sent
	if !evicted.IsZero() {
		consumerFirst = evicted
	}
	deletionSeen, deletedPod := onConsumer.firstDeletion(s.ofX)
	replacementSeen, replacement := onConsumer.firstAdded(s.rs.UID)
	_, providerOpen := onProvider.snapshot()
	_, consumerOpen := onConsumer.snapshot()
	g.Expect(providerOpen && consumerOpen).To(BeTrue(), "both watches saw everything")
	// the API server's clock is this machine's; creationTimestamp is whole seconds, rounded down
	replacementCreated := replacement.CreationTimestamp.Time

	at := func(tm time.Time) string {
		return fmt.Sprintf("%s  partition %+7.3fs", tm.UTC().Format("15:04:05.000"), tm.Sub(partition).Seconds())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "at most once, Liqo %s consumer %s, provider %s (renew %s, poll %s, fenceAfter %s, grace cap %s; gate --min-unreachable %s, janitor --grace-period %s)\n",
		s.version, s.consumerID, providerID, renewEvery, poll, fenceAfter, graceCap, minUnreachable, gracePeriod)
	fmt.Fprintf(&b, "  contract: %s; its bound poll+fenceAfter+failover+stop = %s; SafeAfter (T_safe) = %s\n",
		contract.Summary(), contract.Bound(), contract.SafeAfter())
	row := func(what string, tm time.Time) { fmt.Fprintf(&b, "  %-78s %s\n", what, at(tm)) }
	row("partition (the proxy between the renewer and the provider down)", partition)
	row("last acknowledged renewal (lastAck, the renewals ConfigMap)", *rec.LastAck)
	row("last renewal that may have landed (lastLanded)", *rec.LastLanded)
	if state.Fence.LastObservedAt != nil {
		row("provider: last renewal its agent observed", *state.Fence.LastObservedAt)
	}
	row("provider: fence decided (its record's startedAt)", state.Fence.StartedAt)
	if state.Fence.FencedAt != nil {
		row("provider: Tenant cordoned, every deletion issued (fencedAt)", *state.Fence.FencedAt)
	}
	row("provider: last pod of this consumer gone (watch)", providerGone)
	row("provider: its agent saw none left (stoppedAt)", *state.Fence.StoppedAt)
	if firstRefused.IsZero() {
		fmt.Fprintf(&b, "  %-78s\n", "gate: no refusal of the mark naming the provider's fence deadline (gate rule 31)")
	} else {
		row("gate: first refusal of the mark (gate rule 31), naming "+named.UTC().Format(time.RFC3339), firstRefused)
	}
	row(fmt.Sprintf("deadline = lastLanded + T_safe (%s)", contract.SafeAfter().Round(time.Millisecond)), deadline)
	row(fmt.Sprintf("gate: mark admitted, request sent (after %d refusals)", refusals), markSent)
	row("gate: mark admitted, answered", markAnswered)
	if !evicted.IsZero() {
		row("consumer: first eviction sent (Liqo v1.0.3's drain, played)", evicted)
	}
	row("consumer: janitor's first force-delete sent ("+janitorPod+")", janitorFirst)
	row("consumer: first deletion of a pod of the provider seen ("+deletedPod.Name+", watch)", deletionSeen)
	row("consumer: first replacement created ("+replacement.Name+", creationTimestamp: whole s, rounded down)", replacementCreated)
	row("consumer: first replacement seen (watch)", replacementSeen)
	fmt.Fprintf(&b, "  provider's fence done %.3fs after lastLanded (its bound %s); consumer's first deletion %.3fs after the provider's last pod gone",
		providerGone.Sub(*rec.LastLanded).Seconds(), contract.Bound(), consumerFirst.Sub(providerGone).Seconds())
	t.Log("\n" + b.String())

	// at most once: the provider's copies are gone before the consumer deletes or replaces any pod of it
	g.Expect(providerGone).To(BeTemporally("<", consumerFirst), "the provider's last pod gone before the consumer's first deletion of a pod of it")
	g.Expect(providerGone).To(BeTemporally("<", replacementCreated), "the provider's last pod gone before the ReplicaSet's first replacement")
	g.Expect(deletionSeen).To(BeTemporally(">=", consumerFirst), "no deletion of a pod of the provider before the first one sent")
	// the contract kept: the fence completes by the deadline the consumer computed from it
	g.Expect(providerGone).To(BeTemporally("<", deadline), "the provider's fence completes by the deadline")
	// what makes it so: the gate refused the mark until the deadline (gate rule 31), naming it, and admitted it
	// after; the janitor deleted nothing before it (janitor rule 22)
	g.Expect(refusals).To(BeNumerically(">", 0))
	g.Expect(named.Equal(deadline.Truncate(time.Second))).To(BeTrue(), "the gate named the deadline %s, the record's is %s", named, deadline)
	g.Expect(markAnswered).To(BeTemporally(">=", deadline), "the gate admitted the mark at or after the deadline")
	g.Expect(janitorFirst).To(BeTemporally(">=", deadline), "the janitor's first force-delete at or after the deadline")
	g.Expect(s.cons.RBACDenials()).To(BeEmpty(), "the consumer's install was refused nothing by RBAC")
}
