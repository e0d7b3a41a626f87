package janitor_test

import (
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// A return is seen whatever Liqo forgot (janitor rule 16): the janitor keeps, at its first sight of the
// confirmed mark, the provider's API server and its CA (the control-plane Identity's authParams) in its own
// namespace; Liqo then forgets them (force unpeer deletes the tenant namespace: the Identity goes, the
// status loses its URL and APIServerStatus), and when the partition heals the janitor still hears the
// provider — only with a certificate of the provider's CA: another CA's answer is no return. An in-band
// peering's provider is reached through Liqo's proxy (the Identity's proxyURL, an HTTP CONNECT proxy): the
// janitor probes through it, at an address only the proxy reaches.
func TestAReturnIsSeenAfterLiqoForgetsTheProvider(t *testing.T) {
	for name, c := range map[string]struct{ providersCA, viaProxy bool }{
		"the provider's CA": {providersCA: true}, "another CA": {}, "through Liqo's proxy": {providersCA: true, viaProxy: true},
	} {
		t.Run(name, func(t *testing.T) { returnAfterLiqoForgets(t, c.providersCA, c.viaProxy) })
	}
}

func returnAfterLiqoForgets(t *testing.T, providersCA, viaProxy bool) {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns := env.OwnNamespace(t) // the janitor's own namespace, granted as the release namespace is
	p := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 2}).Providers[0]
	kill(t, p)
	provider, err := harness.Start(harness.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(provider.Stop()).To(Succeed()) })
	link, err := provider.NewOutage("provider-" + p.ID)
	g.Expect(err).NotTo(HaveOccurred())
	link.Down()
	ca := provider.Config.CAData
	if !providersCA {
		ca = harness.AnotherCA(t)
	}
	apiServer, auth := "https://"+link.Addr, authv1beta1.AuthParams{CA: ca}
	var proxy *harness.ConnectProxy
	if viaProxy {
		// localhost (in the provider's certificate) at a port where nothing listens here: only the proxy,
		// which tunnels it to the provider, reaches it
		closed, err := harness.FreeLocalAddr()
		g.Expect(err).NotTo(HaveOccurred())
		_, port, _ := strings.Cut(closed, ":")
		apiServer = "https://localhost:" + port
		proxy = harness.StartConnectProxy(t, map[string]string{"localhost:" + port: link.Addr})
		auth.ProxyURL = ptr.To("http://" + proxy.Addr)
	}
	auth.APIServer = apiServer
	identity := &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Name: "controlplane-" + p.ID, Namespace: p.TenantNS},
		Spec: authv1beta1.IdentitySpec{ClusterID: liqov1beta1.ClusterID(p.ID), Type: authv1beta1.ControlPlaneIdentityType, AuthParams: auth}}
	g.Expect(env.Client.Create(ctx, identity)).To(Succeed())
	fc := get(t, p.ForeignCluster)
	fc.Status.APIServerURL, fc.Status.TenantNamespace.Local = apiServer, p.TenantNS
	g.Expect(env.Client.Status().Update(ctx, fc)).To(Succeed())

	startJanitor(t, janitor.Options{Namespace: ns, ReturnProbeInterval: 200 * time.Millisecond})
	g.Expect(fixture.Mark(ctx, env.Client, p)).To(Succeed())
	g.Eventually(func() string {
		cm := &corev1.ConfigMap{}
		_ = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "liqo-janitor-records"}, cm)
		return cm.Data[string(fc.UID)]
	}).WithTimeout(30*time.Second).Should(ContainSubstring(`"apiServer":"`+apiServer+`"`), "kept at the first sight")

	// What Liqo does after force unpeer: the Identity goes with the tenant namespace, the status is rebuilt
	// without the URL, and APIServerStatus is deleted.
	g.Expect(env.Client.Delete(ctx, identity)).To(Succeed())
	fc = get(t, p.ForeignCluster)
	fc.Status.APIServerURL, fc.Status.TenantNamespace.Local, fc.Status.Conditions = "", "", nil
	g.Expect(env.Client.Status().Update(ctx, fc)).To(Succeed())
	g.Eventually(func() int { return podsLeft(t, p) }).WithTimeout(30 * time.Second).Should(BeZero())

	g.Expect(link.Up()).To(Succeed())
	if !providersCA {
		g.Consistently(cleanupAnnotation(t, p)).WithTimeout(3*time.Second).ShouldNot(HavePrefix(liqojanitor.ReturnedPrefix),
			"an answer with another CA's certificate is no return")
		return
	}
	g.Eventually(cleanupAnnotation(t, p)).WithTimeout(10 * time.Second).Should(And(HavePrefix(liqojanitor.ReturnedPrefix),
		ContainSubstring(apiServer+" answered the janitor's probe with a certificate of the provider's CA")))
	if viaProxy {
		g.Expect(proxy.Requests()).To(ContainElement(strings.TrimPrefix(apiServer, "https://")), "the probe went through Liqo's proxy")
	}
}
