package liqojanitor

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestUnpeeringRoundTrip(t *testing.T) {
	g := NewWithT(t)
	u := Unpeering{Phase: UnpeeringInProgress, Since: "2026-12-02T10:00:00Z", LiqoVersion: "v1.1.0", TenantNamespace: "liqo-tenant-a",
		Left: []LeftObject{{Kind: "FirewallConfiguration", Namespace: "liqo-tenant-a", Name: "fw", HeldBy: "finalizer f", Next: "wait"}},
		More: 2, Notes: []string{"a note"}}
	back, ok := ParseUnpeering(u.String())
	g.Expect(ok).To(BeTrue())
	g.Expect(back).To(Equal(u))
	g.Expect(back.SinceTime().IsZero()).To(BeFalse())
	for _, garbage := range []string{"", "{", `{"phase":"Done"}`, "unpeering complete", `{"left":[]}`} {
		_, ok := ParseUnpeering(garbage)
		g.Expect(ok).To(BeFalse(), "%q is no record", garbage)
	}
	g.Expect(u.Summary()).To(Equal("unpeering in progress: 3 objects left: FirewallConfiguration liqo-tenant-a/fw held by finalizer f " +
		"(not released by liqo-janitor): wait; and 2 more"))
	done := Unpeering{Phase: UnpeeringComplete}
	g.Expect(done.Complete()).To(BeTrue())
	g.Expect(strings.HasPrefix(done.Summary(), "unpeering complete: ")).To(BeTrue())
}
