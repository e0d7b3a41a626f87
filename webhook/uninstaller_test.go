package webhook_test

import (
	"net/http"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// Rule 18 through the API server: Liqo's uninstaller is a live pod of Liqo's pre-delete Job, seen in the
// request's credentials (a token bound to that pod), never its ServiceAccount's name alone. The suite's
// gate names uninstallerUser; the exemption is off by default (the binary's test tries that).

// liqosUninstaller lays out Liqo's pre-delete Job and a pod of it in the suite's Liqo namespace, and returns
// the pod and a client whose token is bound to it (harness.LiqoUninstallerPod).
func liqosUninstaller(t *testing.T) (*corev1.Pod, client.Client) {
	t.Helper()
	env := harness.Require(t)
	g := NewWithT(t)
	pod, cfg, err := env.LiqoUninstallerPod(t, liqoNamespace)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	return pod, c
}

// TestLiqosUninstallerMayBareMark (rule 18): a bare mark from a token bound to a live pod of Liqo's
// pre-delete Job is accepted without the confirmation, the verb or the no-evidence key; the gate writes the
// confirmation, a reason and the stamps in its name and emits an Event. It is still refused while the
// provider answers, and another identity's bare mark is refused as ever.
func TestLiqosUninstallerMayBareMark(t *testing.T) {
	g := NewWithT(t)
	_, uninstaller := liqosUninstaller(t)

	fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	before := time.Now().Add(-time.Second).Truncate(time.Second)
	g.Expect(liqoctlForceUnpeerPatch(t, uninstaller, fc)).To(Succeed())
	got := get(t, fc).Annotations
	g.Expect(got).To(And(HaveKeyWithValue(liqojanitor.MarkAnnotation, "true"),
		HaveKeyWithValue(liqojanitor.MarkedByAnnotation, uninstallerUser),
		HaveKeyWithValue(liqojanitor.ConfirmAnnotation, fc.Name),
		HaveKeyWithValue(liqojanitor.ReasonAnnotation, "marked by Liqo's uninstaller ("+uninstallerUser+")")))
	at, err := time.Parse(time.RFC3339, got[liqojanitor.MarkedAtAnnotation])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(at).To(BeTemporally(">=", before))
	g.Eventually(func() []string { return eventNotes(t, fc.Name, "MarkedByLiqoUninstaller") }).
		Should(ContainElement(And(ContainSubstring("marked permanently unreachable by Liqo's uninstaller ("+uninstallerUser+")"),
			ContainSubstring("gate rule 18"))))

	// no APIServerStatus at all: Liqo's uninstaller has no second key to give either
	g.Expect(liqoctlForceUnpeerPatch(t, uninstaller, newProvider(t, "", 0))).To(Succeed())

	// a provider that answers is not dead, whoever marks it
	live := newProvider(t, liqov1beta1.ConditionStatusEstablished, time.Hour)
	err = liqoctlForceUnpeerPatch(t, uninstaller, live)
	expectDenied(t, err, http.StatusUnprocessableEntity, "status.conditions", live, "Liqo reports the provider's API server as reachable")
	g.Expect(get(t, live).Annotations).To(BeEmpty())

	// the same bare mark by anyone else is refused as ever, the break-glass holder included
	other := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	err = liqoctlForceUnpeerPatch(t, alice, other)
	expectDenied(t, err, http.StatusUnprocessableEntity, "metadata.annotations[liqo-janitor.io/confirm-cluster-id]", other)
	err = liqoctlForceUnpeerPatch(t, bob, other)
	expectDenied(t, err, http.StatusForbidden, "metadata.annotations[liqo-janitor.io/confirm-cluster-id]", other, `user "bob" may not mark it`)
	g.Expect(get(t, other).Annotations).To(BeEmpty())
}

// TestOnlyAPodOfLiqosUninstallerJobMayBareMark (rule 18): the ServiceAccount's name is not enough. A token
// minted for it without a pod binding, an impersonation of it, one that also names the live pod (but not
// the credential ID every token kube-apiserver issues carries), and a token bound to a pod that has ended
// are each judged as anyone's bare mark — refused for want of the verb and the confirmation — while the
// token of the live pod marks.
func TestOnlyAPodOfLiqosUninstallerJobMayBareMark(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	pod, uninstaller := liqosUninstaller(t)

	unboundCfg, err := env.ServiceAccountConfig(liqoNamespace, liqojanitor.LiqoPreDeleteServiceAccount)
	g.Expect(err).NotTo(HaveOccurred())
	unbound, err := client.New(unboundCfg, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	impersonating := func(extra map[string][]string) client.Client {
		c, err := env.NewClient(func(c *rest.Config) {
			c.Impersonate = rest.ImpersonationConfig{UserName: uninstallerUser, Extra: extra}
		})
		g.Expect(err).NotTo(HaveOccurred())
		return c
	}
	podExtra := map[string][]string{"authentication.kubernetes.io/pod-name": {pod.Name},
		"authentication.kubernetes.io/pod-uid": {string(pod.UID)}}

	fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	for name, c := range map[string]client.Client{
		"a token without a pod binding":        unbound,
		"an impersonation":                     impersonating(nil),
		"an impersonation naming the live pod": impersonating(podExtra),
	} {
		err := liqoctlForceUnpeerPatch(t, c, fc)
		expectDenied(t, err, http.StatusForbidden, "metadata.annotations[liqo-janitor.io/confirm-cluster-id]", fc,
			`user "`+uninstallerUser+`" may not mark it`)
		g.Expect(get(t, fc).Annotations).To(BeEmpty(), name)
	}

	// the pod's token marks while the pod runs...
	g.Expect(liqoctlForceUnpeerPatch(t, uninstaller, fc)).To(Succeed())
	g.Expect(get(t, fc).Annotations).To(HaveKeyWithValue(liqojanitor.MarkedByAnnotation, uninstallerUser))

	// ...and no longer once it has ended (its token stays valid while the pod object exists)
	pod.Status.Phase = corev1.PodFailed
	g.Expect(env.Client.Status().Update(t.Context(), pod)).To(Succeed())
	ended := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
	err = liqoctlForceUnpeerPatch(t, uninstaller, ended)
	expectDenied(t, err, http.StatusForbidden, "metadata.annotations[liqo-janitor.io/confirm-cluster-id]", ended,
		`user "`+uninstallerUser+`" may not mark it`)
	g.Expect(get(t, ended).Annotations).To(BeEmpty())
}
