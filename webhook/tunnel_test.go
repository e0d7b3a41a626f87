package webhook_test

import (
	"net/http"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// The data-plane veto (rule 20, issue 28): a provider whose API server is down but whose tunnel Liqo
// reports up still runs its pods. The test fails without checkTunnel in decide.

// setTunnel writes fc's NetworkConnectionStatus as Liqo's foreigncluster controller does
// (foreigncluster-controller/status.go handleConnectionStatus: status.modules.networking, enabled), with
// the given status since the given time ago, keeping the other conditions.
func setTunnel(t *testing.T, fc *liqov1beta1.ForeignCluster, status liqov1beta1.ConditionStatusType, since time.Duration) {
	t.Helper()
	env := harness.Require(t)
	latest := get(t, fc)
	latest.Status.Modules.Networking = liqov1beta1.Module{Enabled: true, Conditions: []liqov1beta1.Condition{{
		Type: liqov1beta1.NetworkConnectionStatusCondition, Status: status,
		LastTransitionTime: metav1.NewTime(time.Now().Add(-since).Truncate(time.Second)),
	}}}
	NewWithT(t).Expect(env.Client.Status().Update(t.Context(), latest)).To(Succeed())
}

// TestTheTunnelVetoesTheMark: Liqo reports the API server unreachable for an hour, but the tunnel
// Established: the mark is refused, saying what the tunnel shows; a tunnel that left Established seconds
// ago is refused too (a blip is not a death), with the time to retry; a tunnel down for longer than
// --min-unreachable lets the mark through.
func TestTheTunnelVetoesTheMark(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	vetoed := map[string]string{"operation": "UPDATE", "result": "denied", "reason": "TunnelUp"}
	seen := harness.Metric("liqo_janitor_gate_decisions_total", vetoed)

	setTunnel(t, fc, liqov1beta1.ConditionStatusEstablished, time.Hour)
	err := fixture.Annotate(ctx, alice, fc, markAndConfirm(fc))
	expectDenied(t, err, http.StatusUnprocessableEntity, "status.modules.networking.conditions", fc,
		"Liqo reports the data plane to the provider as up (its tunnel: NetworkConnectionStatus Established since",
		"its nodes and pods still run", "wait until Liqo reports the tunnel down and retry")
	g.Expect(harness.Metric("liqo_janitor_gate_decisions_total", vetoed)).To(Equal(seen + 1))
	g.Expect(get(t, fc).Annotations).NotTo(HaveKey(liqojanitor.MarkAnnotation))

	setTunnel(t, fc, liqov1beta1.ConditionStatusError, 5*time.Second)
	err = fixture.Annotate(ctx, alice, fc, markAndConfirm(fc))
	expectDenied(t, err, http.StatusUnprocessableEntity, "status.modules.networking.conditions", fc,
		"the data plane to the provider changed state only", "NetworkConnectionStatus Error", "a blip is not a death: retry after",
		"--min-unreachable is 1m0s")
	g.Expect(get(t, fc).Annotations).NotTo(HaveKey(liqojanitor.MarkAnnotation))

	setTunnel(t, fc, liqov1beta1.ConditionStatusError, 2*time.Minute)
	g.Expect(fixture.Annotate(ctx, alice, fc, markAndConfirm(fc))).To(Succeed(), "a tunnel down for longer than --min-unreachable")
	g.Expect(get(t, fc).Annotations).To(HaveKeyWithValue(liqojanitor.MarkAnnotation, "true"))
}

// TestTheTunnelVetoesLiqosUninstallerToo: rule 18 keeps rule 20 — a force uninstall bare-marks every
// ForeignCluster, but a provider whose tunnel is up still runs the pods the janitor would release here.
func TestTheTunnelVetoesLiqosUninstallerToo(t *testing.T) {
	g := NewWithT(t)
	_, uninstaller := liqosUninstaller(t)
	fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	setTunnel(t, fc, liqov1beta1.ConditionStatusEstablished, time.Hour)
	err := liqoctlForceUnpeerPatch(t, uninstaller, fc)
	expectDenied(t, err, http.StatusUnprocessableEntity, "status.modules.networking.conditions", fc, "NetworkConnectionStatus Established")
	g.Expect(get(t, fc).Annotations).To(BeEmpty())

	setTunnel(t, fc, liqov1beta1.ConditionStatusError, time.Hour)
	g.Expect(liqoctlForceUnpeerPatch(t, uninstaller, fc)).To(Succeed())
}

// TestNoTunnelConditionIsNoEvidence (rules 12 and 20): without an APIServerStatus and without a tunnel
// condition, the refusal of rule 12 says the data plane shows nothing either.
func TestNoTunnelConditionIsNoEvidence(t *testing.T) {
	fc := newProvider(t, "", 0)
	err := fixture.Annotate(t.Context(), alice, fc, markAndConfirm(fc))
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/no-reachability-evidence]", fc,
		"nor a NetworkConnectionStatus of its tunnel", "networking module may be off")
}
