package main

import (
	"fmt"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
	"github.com/liqo-janitor/liqo-janitor/webhook"
)

// TestTheJanitorRecoversWhenTheAPIServerGoesAwayMidCleanup: the binary, as the chart's ServiceAccount,
// reaches the API server through a proxy on a fixed address (harness.Outage: envtest cannot restart kube-apiserver with the same
// certificates and users). Mid-clean-up every connection is cut and new ones are refused; the webhook
// server keeps answering the API server (which calls it directly). When the address answers again the
// janitor finishes without a restart, and a foreign finalizer on a ResourceSlice it released survives.
func TestTheJanitorRecoversWhenTheAPIServerGoesAwayMidCleanup(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	var guarded *authv1beta1.ResourceSlice
	dead, live := layoutDead(t, func(dead *fixture.Provider) {
		guarded = dead.ExtraSlices[len(dead.ExtraSlices)-1]
		g.Expect(env.Client.Patch(ctx, guarded, client.RawPatch(types.JSONPatchType,
			fmt.Appendf(nil, `[{"op":"add","path":"/metadata/finalizers/-","value":%q}]`, fixture.ForeignFinalizer)))).To(Succeed())
	})
	before, err := fixture.ResourceVersions(ctx, env.Client, append(live.Objects(), live.ForeignCluster)...)
	g.Expect(err).NotTo(HaveOccurred())

	outage, err := env.NewOutage("outage")
	g.Expect(err).NotTo(HaveOccurred())
	inst, err := env.DefaultInstall()
	g.Expect(err).NotTo(HaveOccurred())
	kubeconfig, err := env.ServiceAccountKubeconfig(inst.Namespace, inst.ServiceAccount)
	g.Expect(err).NotTo(HaveOccurred())
	kubeconfig, err = outage.Through(kubeconfig, kubeconfig+".outage")
	g.Expect(err).NotTo(HaveOccurred())
	// Without the chart's leader election: a leader that cannot renew its Lease for the renew deadline
	// (10s) stops, by design, and its pod is restarted (the HA tests show another replica finishing);
	// this test is about one process riding out the outage.
	r, err := env.StartReplica("outage", "--kubeconfig="+kubeconfig, "--leader-elect=false", "--grace-period=0",
		"--janitor-workers=1", "--kube-api-qps=200", "--kube-api-burst=1", stormGuardOff)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = r.Kill() })

	g.Expect(fixture.Mark(ctx, env.Client, dead)).To(Succeed())
	g.Eventually(podsOn(t, dead)).WithPolling(20*time.Millisecond).WithTimeout(60*time.Second).
		Should(BeNumerically("<", 950), "the janitor has begun")

	failedPasses := func() (float64, error) {
		return r.Metric("controller_runtime_reconcile_errors_total", map[string]string{"controller": liqojanitor.Name})
	}
	seen, err := failedPasses()
	g.Expect(err).NotTo(HaveOccurred())
	outage.Down()
	g.Eventually(failedPasses).WithTimeout(60*time.Second).Should(BeNumerically(">=", seen+3),
		"the janitor's passes fail and are retried with backoff while the API server is away")
	left, err := podsOn(t, dead)()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(left).To(BeNumerically(">", 0), "the outage came mid-clean-up")
	resp, err := env.Review(r, webhook.ValidatePath, harness.UnconfirmedMarkReview())
	g.Expect(err).NotTo(HaveOccurred(), "the webhook server keeps serving")
	g.Expect(resp.Allowed).To(BeFalse())

	g.Expect(outage.Up()).To(Succeed())
	g.Eventually(podsOn(t, dead)).WithTimeout(120*time.Second).Should(BeZero(), "finished after the outage, without a restart")
	g.Eventually(func() ([]string, error) {
		rs := &authv1beta1.ResourceSlice{}
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(guarded), rs)
		return rs.Finalizers, err
	}).WithTimeout(60*time.Second).Should(Equal([]string{fixture.ForeignFinalizer}), "ours removed, the foreign one kept")
	g.Eventually(func() string {
		fc := dead.ForeignCluster.DeepCopy()
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(fc), fc)
		return fc.Annotations[liqojanitor.CleanupAnnotation]
	}).WithTimeout(60 * time.Second).Should(HaveSuffix("blocked 1"))
	select {
	case <-r.Exited():
		t.Fatalf("the replica exited during the outage (log: %s)", r.Log)
	default:
	}
	after, err := fixture.ResourceVersions(ctx, env.Client, append(live.Objects(), live.ForeignCluster)...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after).To(Equal(before), "nothing of the live provider was written")
}
