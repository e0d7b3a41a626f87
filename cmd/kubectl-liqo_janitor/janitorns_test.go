package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/view"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// janitorNamespace is liqo-janitor's namespace in this package's API server: the release namespace, where
// the gate's webhook configuration calls its Service.
func janitorNamespace(t *testing.T) string {
	t.Helper()
	inst, err := harness.Require(t).DefaultInstall()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return inst.Namespace
}

// putConfigMapData sets data in ConfigMap ns/name, creating it if need be; at the end of the test it
// deletes a ConfigMap it created (a brake is set while it exists), or removes those keys.
func putConfigMapData(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	c := harness.Require(t).Client
	g := NewWithT(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
	err := c.Create(t.Context(), cm)
	if err == nil {
		t.Cleanup(func() { _ = c.Delete(context.Background(), cm) })
		return
	}
	g.Expect(apierrors.IsAlreadyExists(err)).To(BeTrue(), "creating ConfigMap %s/%s: %v", ns, name, err)
	patch, err := json.Marshal(map[string]any{"data": data})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Patch(t.Context(), cm, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
	t.Cleanup(func() {
		remove := map[string]any{}
		for k := range data {
			remove[k] = nil
		}
		patch, _ := json.Marshal(map[string]any{"data": remove})
		_ = c.Patch(context.Background(), cm, client.RawPatch(types.MergePatchType, patch))
	})
}

// keepRecord writes, in ConfigMap liqo-janitor-records of namespace ns, the janitor's record of p's provider
// for its current mark: targets, as the janitor keeps them at its first sight of the confirmed mark.
func keepRecord(t *testing.T, ns string, p *fixture.Provider, targets liqojanitor.Targets) {
	t.Helper()
	fc := p.ForeignCluster.DeepCopy()
	NewWithT(t).Expect(harness.Require(t).Client.Get(t.Context(), client.ObjectKeyFromObject(fc), fc)).To(Succeed())
	rec := liqojanitor.KeptRecord{Mark: fc.Annotations[liqojanitor.MarkedAtAnnotation], Targets: targets,
		From: "the ForeignCluster's status and Identity " + p.TenantNS + "/controlplane", At: metav1.NewTime(time.Now().Truncate(time.Second))}
	putConfigMapData(t, ns, liqojanitor.RecordsConfigMap, map[string]string{string(fc.UID): rec.String()})
}

// TestStatusReadsTheBrakeOnlyInTheJanitorsNamespace: a ConfigMap liqo-janitor-brake anyone may create in
// their own namespace is named as ignored, never reported as the brake; the one in liqo-janitor's
// namespace (the gate's webhook configuration's, or --janitor-namespace) is.
func TestStatusReadsTheBrakeOnlyInTheJanitorsNamespace(t *testing.T) {
	testEnv := harness.Require(t)
	g := NewWithT(t)
	janitorNS, other := janitorNamespace(t), testEnv.Namespace(t)
	forged := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: liqojanitor.BrakeConfigMap},
		Data: map[string]string{liqojanitor.BrakeReasonKey: "FORGED"}}
	g.Expect(testEnv.Client.Create(t.Context(), forged)).To(Succeed())
	status := func(args ...string) (string, view.StatusReport) {
		out, _, err := kubectl(t, alice, "", append([]string{"status"}, args...)...)
		g.Expect(err).NotTo(HaveOccurred())
		js, _, err := kubectl(t, alice, "", append([]string{"status", "-o", "json"}, args...)...)
		g.Expect(err).NotTo(HaveOccurred())
		var report view.StatusReport
		g.Expect(json.Unmarshal([]byte(js), &report)).To(Succeed())
		return out, report
	}
	ignored := func(ns, in string) string {
		return "ignored: ConfigMap " + ns + "/liqo-janitor-brake is not in the janitor's namespace " + in + "\n"
	}

	out, report := status()
	g.Expect(out).NotTo(ContainSubstring("BRAKE SET"), "a brake forged in another namespace is not the brake")
	g.Expect(out).To(ContainSubstring(ignored(other, janitorNS)))
	g.Expect(report.Brakes).To(BeEmpty())
	g.Expect(report.Janitor).To(And(HaveField("Namespace", janitorNS), HaveField("From", "the Service of ValidatingWebhookConfiguration liqo-janitor"),
		HaveField("Ignored", ContainElement(other+"/liqo-janitor-brake")))) // and whatever earlier tests left in theirs

	putConfigMapData(t, janitorNS, liqojanitor.BrakeConfigMap, map[string]string{liqojanitor.BrakeReasonKey: "checking the provider"})
	out, report = status()
	g.Expect(out).To(ContainSubstring("BRAKE SET: liqo-janitor releases nothing for any cluster while ConfigMap " + janitorNS +
		"/liqo-janitor-brake exists (reason: \"checking the provider\"). Delete it to go on: kubectl -n " + janitorNS + " delete configmap liqo-janitor-brake\n"))
	g.Expect(out).NotTo(ContainSubstring("FORGED"))
	g.Expect(out).To(ContainSubstring(ignored(other, janitorNS)))
	g.Expect(report.Brakes).To(Equal([]view.Brake{{Namespace: janitorNS, Reason: "checking the provider"}}))

	// --janitor-namespace names it: the operator's word, over the webhook configuration's.
	out, report = status("--janitor-namespace", other)
	g.Expect(out).To(ContainSubstring("BRAKE SET: liqo-janitor releases nothing for any cluster while ConfigMap " + other + "/liqo-janitor-brake exists (reason: \"FORGED\")"))
	g.Expect(out).To(ContainSubstring(ignored(janitorNS, other)))
	g.Expect(report.Janitor.From).To(Equal("--janitor-namespace"))
}

// TestStatusAndPlanIgnoreLookAlikeRecords: a ConfigMap liqo-janitor-records in another namespace that names
// a kept target for the current mark is not the janitor's record: status and plan say where Liqo says the
// provider is, and name the look-alike as ignored.
func TestStatusAndPlanIgnoreLookAlikeRecords(t *testing.T) {
	testEnv := harness.Require(t)
	g := NewWithT(t)
	dead, _ := deadAndLive(t)
	name := dead.ForeignCluster.Name
	_, _, err := kubectl(t, alice, "", "mark", name, "--reason", "gone", "--yes")
	g.Expect(err).NotTo(HaveOccurred())
	const url = "https://198.51.100.9:6443"
	g.Expect(fixture.SetAPIServerURL(t.Context(), testEnv.Client, dead.ForeignCluster, url)).To(Succeed())
	other := testEnv.Namespace(t)
	keepRecord(t, other, dead, liqojanitor.Targets{APIServer: "https://forged.example:6443"})
	want := "  return probe: " + url + "; no CA of the provider is known: any TLS answer counts, unverified; from the ForeignCluster's status now"
	ignored := "ignored: ConfigMap " + other + "/liqo-janitor-records is not in the janitor's namespace " + janitorNamespace(t) + "\n"

	out, _, err := kubectl(t, alice, "", "status", name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring(want))
	g.Expect(out).To(ContainSubstring(ignored))
	g.Expect(out).NotTo(ContainSubstring("forged.example"))
	js, _, err := kubectl(t, alice, "", "plan", name, "-o", "json")
	g.Expect(err).NotTo(HaveOccurred())
	var report view.PlanReport
	g.Expect(json.Unmarshal([]byte(js), &report)).To(Succeed())
	g.Expect(report.Probe).To(Equal(&view.Probe{APIServer: url, From: "the ForeignCluster's status"}))
	g.Expect(report.Janitor.Ignored).To(ContainElement(other + "/liqo-janitor-records"))
	out, _, err = kubectl(t, alice, "", "plan", name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring(ignored))

	// the same record in the janitor's namespace is the janitor's
	keepRecord(t, janitorNamespace(t), dead, liqojanitor.Targets{APIServer: "https://kept.example:6443"})
	out, _, err = kubectl(t, alice, "", "status", name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("  return probe: https://kept.example:6443; no CA of the provider is known: any TLS answer counts, unverified; kept by liqo-janitor at "))
}

// TestTheJanitorsNamespaceIsNamedOrRefused: a user who may not read the gate's webhook configuration is
// told to pass --janitor-namespace, and nothing is read; with it, status runs.
func TestTheJanitorsNamespaceIsNamedOrRefused(t *testing.T) {
	testEnv := harness.Require(t)
	g := NewWithT(t)
	const carol = "carol" // reads what plan reads, not the gate's webhook configuration
	binding := harness.ClusterRoleBinding("plan-reader-"+carol, "plan-reader", carol)
	g.Expect(testEnv.Client.Create(t.Context(), binding)).To(Succeed())
	t.Cleanup(func() { _ = testEnv.Client.Delete(context.Background(), binding) })

	for _, args := range [][]string{{"status"}, {"status", "-o", "yaml"}} {
		_, stderr, err := kubectl(t, carol, "", args...)
		g.Expect(err).To(HaveOccurred())
		g.Expect(stderr).To(Equal("error: cannot tell liqo-janitor's namespace, where its brake and records are: you may not get " +
			"ValidatingWebhookConfiguration liqo-janitor (the gate's, which names it): pass --janitor-namespace <namespace>, the namespace " +
			"liqo-janitor is installed in (kubectl get deployments -A -l app.kubernetes.io/name=liqo-janitor), or ask a cluster admin for get on it\n"))
	}
	out, _, err := kubectl(t, carol, "", "status", "--janitor-namespace", janitorNamespace(t))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).NotTo(BeEmpty())
}
