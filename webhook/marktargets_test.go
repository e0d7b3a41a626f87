package webhook_test

import (
	"net/http"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// markTargets reads fc's stored record of the targets at marking (rule 23).
func markTargets(t *testing.T, fc *liqov1beta1.ForeignCluster) liqojanitor.MarkTargets {
	t.Helper()
	v := get(t, fc).Annotations[liqojanitor.MarkTargetsAnnotation]
	rec, ok := liqojanitor.ParseMarkTargets(v)
	NewWithT(t).Expect(ok).To(BeTrue(), "the stored record %q is the gate's", v)
	return rec
}

// TestTheGateRecordsTheTargetsAtMarking (rule 23): the request that sets the mark gets the gate's record of
// where the provider is as Liqo knows it then — the status' URLs, and the control-plane Identity's API server
// and CA where there is one — whatever the request carried; the record does not change while marked, is
// refused on an unmarked ForeignCluster, and goes with the mark.
func TestTheGateRecordsTheTargetsAtMarking(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	// addresses where nothing listens: the gate's probe finds no answer at once
	const statusURL, proxyURL, identityURL = "https://127.0.0.1:1", "http://127.0.0.1:2", "https://127.0.0.1:3"

	// the status alone
	bare := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	latest := get(t, bare)
	latest.Status.APIServerURL, latest.Status.ForeignProxyURL = statusURL, proxyURL
	g.Expect(env.Client.Status().Update(ctx, latest)).To(Succeed())
	forged := liqojanitor.MarkTargets{Targets: liqojanitor.Targets{APIServer: "https://attacker.example:6443"}, From: "me", At: time.Now()}.String()
	withForged := markAndConfirm(bare)
	withForged[liqojanitor.MarkTargetsAnnotation] = &forged
	before := time.Now().Add(-time.Second).Truncate(time.Second)
	g.Expect(fixture.Annotate(ctx, alice, bare, withForged)).To(Succeed())
	rec := markTargets(t, bare)
	g.Expect(rec.Targets).To(Equal(liqojanitor.Targets{APIServer: statusURL, Proxy: proxyURL}), "the request's record is replaced")
	g.Expect(rec.From).To(Equal("the ForeignCluster's status"))
	g.Expect(rec.At).To(BeTemporally(">=", before))

	// the status and the provider's control-plane Identity in the tenant namespace it names
	fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	ns := env.Namespace(t)
	ca := harness.AnotherCA(t)
	g.Expect(env.Client.Create(ctx, &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Name: "controlplane", Namespace: ns},
		Spec: authv1beta1.IdentitySpec{ClusterID: fc.Spec.ClusterID, Type: authv1beta1.ControlPlaneIdentityType,
			AuthParams: authv1beta1.AuthParams{CA: ca, APIServer: identityURL}}})).To(Succeed())
	latest = get(t, fc)
	latest.Status.APIServerURL, latest.Status.TenantNamespace.Local = statusURL, ns
	g.Expect(env.Client.Status().Update(ctx, latest)).To(Succeed())
	g.Expect(fixture.Annotate(ctx, alice, fc, markAndConfirm(fc))).To(Succeed())
	rec = markTargets(t, fc)
	g.Expect(rec.Targets).To(Equal(liqojanitor.Targets{APIServer: identityURL, CA: ca}))
	g.Expect(rec.From).To(Equal("the ForeignCluster's status and Identity " + ns + "/controlplane"))

	// immutable while marked, for a holder of the verb too
	for _, v := range []*string{&forged, nil} {
		err := fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.MarkTargetsAnnotation: v})
		expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/mark-targets]", fc, "cannot")
	}
	g.Expect(markTargets(t, fc).Targets.APIServer).To(Equal(identityURL))

	// removing the mark removes the record; on an unmarked ForeignCluster nobody places one
	g.Expect(fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.MarkAnnotation: nil})).To(Succeed())
	g.Expect(get(t, fc).Annotations).NotTo(HaveKey(liqojanitor.MarkTargetsAnnotation))
	err := fixture.Annotate(ctx, alice, fc, map[string]*string{liqojanitor.MarkTargetsAnnotation: &forged})
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/mark-targets]", fc,
		"is written only by liqo-janitor, when the mark is set")
	g.Expect(get(t, fc).Annotations).NotTo(HaveKey(liqojanitor.MarkTargetsAnnotation))

	// one placed while the gate was absent is replaced by the mark
	withoutGate(t, bob, fc, map[string]*string{liqojanitor.MarkTargetsAnnotation: &forged})
	g.Expect(fixture.Annotate(ctx, alice, fc, markAndConfirm(fc))).To(Succeed())
	g.Expect(markTargets(t, fc).Targets.APIServer).To(Equal(identityURL))
}
