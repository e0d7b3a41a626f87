package janitor_test

import (
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// provider — only with a certificate of the provider's CA: another CA's answer is no return.
func TestAReturnIsSeenAfterLiqoForgetsTheProvider(t *testing.T) {
	for name, providersCA := range map[string]bool{"the provider's CA": true, "another CA": false} {
		t.Run(name, func(t *testing.T) { returnAfterLiqoForgets(t, providersCA) })
	}
}

func returnAfterLiqoForgets(t *testing.T, providersCA bool) {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns := env.Namespace(t)
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
	identity := &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Name: "controlplane-" + p.ID, Namespace: p.TenantNS},
		Spec: authv1beta1.IdentitySpec{ClusterID: liqov1beta1.ClusterID(p.ID), Type: authv1beta1.ControlPlaneIdentityType,
			AuthParams: authv1beta1.AuthParams{CA: ca, APIServer: "https://" + link.Addr}}}
	g.Expect(env.Client.Create(ctx, identity)).To(Succeed())
	fc := get(t, p.ForeignCluster)
	fc.Status.APIServerURL, fc.Status.TenantNamespace.Local = "https://"+link.Addr, p.TenantNS
	g.Expect(env.Client.Status().Update(ctx, fc)).To(Succeed())

	startJanitor(t, janitor.Options{Namespace: ns, ReturnProbeInterval: 200 * time.Millisecond})
	g.Expect(fixture.Mark(ctx, env.Client, p)).To(Succeed())
	g.Eventually(func() string {
		cm := &corev1.ConfigMap{}
		_ = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "liqo-janitor-records"}, cm)
		return cm.Data[string(fc.UID)]
	}).WithTimeout(30*time.Second).Should(ContainSubstring(`"apiServer":"https://`+link.Addr+`"`), "kept at the first sight")

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
		ContainSubstring("https://"+link.Addr+" answered the janitor's probe with a certificate of the provider's CA")))
}
