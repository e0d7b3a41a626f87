package providerfence_test

import (
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	. "github.com/onsi/gomega"

	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// TestTheFenceOnEachLiqoVersionsCRDs: on a provider with each supported Liqo release's CRDs (the Tenant's
// tenantCondition, the ShadowPod), a consumer that stops renewing is fenced: its Tenant Cordoned, its
// ShadowPods and pods gone, what it keeps kept.
func TestTheFenceOnEachLiqoVersionsCRDs(t *testing.T) {
	harness.Require(t) // skips in the unit lane
	for _, version := range harness.SupportedLiqoVersions {
		t.Run(version, func(t *testing.T) {
			g := NewWithT(t)
			prov, err := harness.Start(harness.Options{LiqoVersion: version})
			g.Expect(err).NotTo(HaveOccurred())
			t.Cleanup(func() { g.Expect(prov.Stop()).To(Succeed()) })
			g.Expect(prov.InstallLocalClusterID(t.Context(), liqoNamespace, providerID)).To(Succeed())
			c := prov.Client
			w := layOut(t, c, fenceAfter.String())
			startFence(t, prov, nil)
			r := startRenewing(t, c, w, renewEvery, 0)
			g.Eventually(func() *time.Time { return state(t, c, w).ArmedAt }).ShouldNot(BeNil())
			r.Stop()
			f := awaitFence(t, c, w, time.Minute)
			g.Expect(f.Tenant).To(Equal("cordoned"))
			g.Expect(tenantCondition(t, c, w)).To(Equal(authv1beta1.TenantConditionCordoned))
			gone, err := fixture.ResourceVersions(t.Context(), c, w.Mine...)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(fixture.Gone(gone)).To(Equal(len(w.Mine)))
			kept, err := fixture.ResourceVersions(t.Context(), c, w.Kept...)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(kept).To(Equal(w.KeptBefore))
		})
	}
}
