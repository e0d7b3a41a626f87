package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubectl/pkg/drain"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/manifests"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
	"github.com/liqo-janitor/liqo-janitor/webhook/certs"
)

// localClusterID is the consumer's cluster ID in Liqo's ConfigMap, which the gate reads.
const localClusterID = "node-lane-consumer"

// leaseName is the Lease the replicas compete for (cmd/liqo-janitor's leaderElectionID).
const leaseName = "liqo-janitor.liqo-janitor.io"

// TestTheAPIServerCallsTheGateThroughTheChartsService: the API server reaches the replicas through the
// chart's Service (kube-proxy's rules for its ClusterIP) and the certificate they manage, for both
// webhooks. A confirmed mark of a provider unreachable for seconds only is refused with the validating
// gate's own message (the chart's ValidatingAdmissionPolicy, which refuses an unconfirmed mark first,
// cannot tell time); once it has been unreachable for an hour, the mark is stored with the mutating
// webhook's stamps (the admin's name, the time).
func TestTheAPIServerCallsTheGateThroughTheChartsService(t *testing.T) {
	env := harness.Require(t)
	logReplicasOnFailure(t)
	g := NewWithT(t)
	ctx := t.Context()
	fc := &liqov1beta1.ForeignCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "provider-node", Labels: map[string]string{liqojanitor.RemoteClusterIDLabel: "provider-node"}},
		Spec:       liqov1beta1.ForeignClusterSpec{ClusterID: "provider-node"},
	}
	g.Expect(env.Client.Create(ctx, fc)).To(Succeed())
	// unmarked and deleted at the end (fixture.RetireAtEnd): later tests' marks count no storm with it
	fixture.RetireAtEnd(t, env.Client, fc)
	mark, confirm := "true", fc.Name
	kv := map[string]*string{liqojanitor.MarkAnnotation: &mark, liqojanitor.ConfirmAnnotation: &confirm}

	g.Expect(fixture.SetAPIServerStatus(ctx, env.Client, fc, liqov1beta1.ConditionStatusError, 5*time.Second)).To(Succeed())
	err := fixture.Annotate(ctx, env.Client, fc, kv)
	g.Expect(err).To(HaveOccurred(), "a mark of a provider unreachable for seconds")
	g.Expect(err.Error()).To(And(ContainSubstring("admission webhook"), ContainSubstring("denied the request"),
		ContainSubstring("a blip is not a death")))

	g.Expect(fixture.SetAPIServerStatus(ctx, env.Client, fc, liqov1beta1.ConditionStatusError, time.Hour)).To(Succeed())
	g.Expect(fixture.Annotate(ctx, env.Client, fc, kv)).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(fc), fc)).To(Succeed())
	g.Expect(fc.Annotations).To(HaveKeyWithValue(liqojanitor.MarkAnnotation, "true"))
	g.Expect(fc.Annotations).To(HaveKey(liqojanitor.MarkedAtAnnotation), "stamped by the mutating webhook")
	g.Expect(fc.Annotations[liqojanitor.MarkedByAnnotation]).NotTo(BeEmpty(), "stamped by the mutating webhook")
}

// holder returns the Lease's holder identity and the replica it names (controller-runtime's identity is
// the pod's hostname, its name, then "_" and a UUID).
func holder(ctx context.Context, c client.Client) (identity, pod string, err error) {
	var lease coordinationv1.Lease
	if err := c.Get(ctx, client.ObjectKey{Namespace: manifests.ReleaseNamespace, Name: leaseName}, &lease); err != nil {
		return "", "", err
	}
	identity = ptr.Deref(lease.Spec.HolderIdentity, "")
	pod, _, _ = strings.Cut(identity, "_")
	return identity, pod, nil
}

// TestOneReplicaLeadsAndAKilledLeaderHandsOver: the Lease names one of the two replicas; when that
// replica's process is killed (SIGKILL, so it never releases the Lease, as when its node dies), a replica
// takes the Lease once it expires: the other one, or the killed one's restarted container, under a new
// identity either way.
func TestOneReplicaLeadsAndAKilledLeaderHandsOver(t *testing.T) {
	env := harness.Require(t)
	logReplicasOnFailure(t)
	g := NewWithT(t)
	ctx := t.Context()
	g.Expect(waitAvailable(ctx, env.Client)).To(Succeed())
	byName := map[string]corev1.Pod{}
	for _, p := range replicas(t, env.Client) {
		byName[p.Name] = p
	}
	var old, leader string
	g.Expect(wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		old, leader, err = holder(ctx, env.Client)
		_, ok := byName[leader]
		return err == nil && ok, nil
	})).To(Succeed(), "one of the replicas holds the Lease")

	pod := byName[leader]
	pid, err := strconv.Atoi(containerPID(t, pod.Status.ContainerStatuses[0].ContainerID))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(syscall.Kill(pid, syscall.SIGKILL)).To(Succeed(), "killing the leader's process")
	var identity, next string
	g.Expect(wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		identity, next, err = holder(ctx, env.Client)
		return err == nil && identity != "" && identity != old, nil
	})).To(Succeed(), "a replica takes the Lease from %s", old)
	g.Expect(byName).To(HaveKey(next), "the new holder is a replica")
	g.Expect(waitAvailable(ctx, env.Client)).To(Succeed(), "the killed container restarts and is Ready again")
}

// TestDrainKeepsWhatTheDisruptionBudgetAsks: draining the only node (as `kubectl drain` does, through the
// eviction API) evicts one replica, whose replacement cannot be scheduled on the cordoned node, and is
// then refused the other until it gives up: the chart's PodDisruptionBudget (minAvailable 1) keeps one
// replica running.
func TestDrainKeepsWhatTheDisruptionBudgetAsks(t *testing.T) {
	env := harness.Require(t)
	logReplicasOnFailure(t)
	g := NewWithT(t)
	ctx := t.Context()
	cs, err := kubernetes.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	var out strings.Builder
	h := &drain.Helper{Ctx: ctx, Client: cs, GracePeriodSeconds: -1, IgnoreAllDaemonSets: true, DeleteEmptyDirData: true,
		Timeout: 40 * time.Second, Out: &out, ErrOut: &out}
	var node corev1.Node
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: Name}, &node)).To(Succeed())
	g.Expect(drain.RunCordonOrUncordon(h, &node, true)).To(Succeed())
	t.Cleanup(func() {
		g := NewWithT(t)
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Name: Name}, &node)).To(Succeed())
		g.Expect(drain.RunCordonOrUncordon(&drain.Helper{Ctx: context.Background(), Client: cs, Out: io.Discard, ErrOut: io.Discard}, &node, false)).To(Succeed())
		g.Expect(waitAvailable(context.Background(), env.Client)).To(Succeed(), "both replicas back after the uncordon")
	})

	err = drain.RunNodeDrain(h, Name)
	g.Expect(err).To(HaveOccurred(), "the drain cannot finish: %s", out.String())
	g.Expect(out.String()).To(ContainSubstring("Cannot evict pod as it would violate the pod's disruption budget"))

	running := 0
	for _, p := range replicas(t, env.Client) {
		if p.Spec.NodeName == Name && p.DeletionTimestamp == nil && podReady(&p) {
			running++
		}
	}
	g.Expect(running).To(Equal(1), "one replica still runs on the drained node")
	var pdb policyv1.PodDisruptionBudget
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: manifests.ReleaseNamespace, Name: manifests.ReleaseName}, &pdb)).To(Succeed())
	g.Expect(pdb.Status.DisruptionsAllowed).To(BeZero())
}

// TestMetricsAnswerAServiceAccountTokenOverHTTPS: /metrics on the chart's metrics Service answers over
// HTTPS, with the certificate the install's CA signed for that Service, a token of a ServiceAccount bound
// to the chart's metrics-reader ClusterRole, and refuses no token and a token without that binding.
func TestMetricsAnswerAServiceAccountTokenOverHTTPS(t *testing.T) {
	env := harness.Require(t)
	logReplicasOnFailure(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	reader, stranger := scraperToken(t, env, ns, "reader", true), scraperToken(t, env, ns, "stranger", false)

	var svc corev1.Service
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: manifests.ReleaseNamespace, Name: "liqo-janitor-metrics"}, &svc)).To(Succeed())
	var ca corev1.Secret
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: manifests.ReleaseNamespace, Name: certs.CASecretName}, &ca)).To(Succeed())
	pool := x509.NewCertPool()
	g.Expect(pool.AppendCertsFromPEM(ca.Data["ca.crt"])).To(BeTrue())
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, ServerName: svc.Name + "." + svc.Namespace + ".svc", MinVersion: tls.VersionTLS12}}}
	url := "https://" + net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(svc.Spec.Ports[0].Port))) + "/metrics"

	scrape := func(token string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		g.Expect(err).NotTo(HaveOccurred())
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		g.Expect(err).NotTo(HaveOccurred(), "GET %s", url)
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		g.Expect(err).NotTo(HaveOccurred())
		return resp.StatusCode, string(body)
	}
	code, body := scrape(reader)
	g.Expect(code).To(Equal(http.StatusOK), body)
	g.Expect(body).To(ContainSubstring("controller_runtime_"))
	code, _ = scrape("")
	g.Expect(code).To(Equal(http.StatusUnauthorized))
	code, _ = scrape(stranger)
	g.Expect(code).To(Equal(http.StatusForbidden))
}

// scraperToken creates a ServiceAccount, bound to the chart's metrics-reader ClusterRole if bound, and
// returns a token of it (TokenRequest).
func scraperToken(t *testing.T, env *harness.Env, ns, name string, bound bool) string {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	g.Expect(env.Client.Create(ctx, sa)).To(Succeed())
	if bound {
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s", ns, name)},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "liqo-janitor:metrics-reader"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}}
		g.Expect(env.Client.Create(ctx, crb)).To(Succeed())
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), crb) })
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
	g.Expect(env.Client.SubResource("token").Create(ctx, sa, tr)).To(Succeed())
	return tr.Status.Token
}
