package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/view"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// recordGraceEnd writes the janitor's grace-ends-at on the ForeignCluster, as the janitor does (as the
// janitor's identity, the install's ServiceAccount: the identity that gate rule 14 lets write the janitor's keys).
func recordGraceEnd(t *testing.T, p *fixture.Provider, ends time.Time) {
	t.Helper()
	NewWithT(t).Expect(fixture.Annotate(t.Context(), asJanitor(t), p.ForeignCluster, map[string]*string{
		liqojanitor.GraceEndsAnnotation: ptr.To(liqojanitor.RecordTime(ends)),
	})).To(Succeed())
}

// TestPlanAndStatusShowTheGraceWindowTheJanitorRecorded: the window is the janitor's grace-ends-at, never
// an assumed 30s; before the janitor records it, plan and status say they wait for it.
func TestPlanAndStatusShowTheGraceWindowTheJanitorRecorded(t *testing.T) {
	g := NewWithT(t)
	dead, _ := deadAndLive(t)
	name := dead.ForeignCluster.Name
	_, _, err := kubectl(t, alice, "", "mark", name, "--reason", "gone", "--yes")
	g.Expect(err).NotTo(HaveOccurred())
	markedAt := annotations(t, dead)[liqojanitor.MarkedAtAnnotation]
	status := func() string {
		out, _, err := kubectl(t, alice, "", "status", name)
		g.Expect(err).NotTo(HaveOccurred())
		return out
	}
	plan := func() (string, view.PlanReport) {
		out, _, err := kubectl(t, alice, "", "plan", name)
		g.Expect(err).NotTo(HaveOccurred())
		js, _, err := kubectl(t, alice, "", "plan", name, "-o", "json")
		g.Expect(err).NotTo(HaveOccurred())
		var report view.PlanReport
		g.Expect(json.Unmarshal([]byte(js), &report)).To(Succeed())
		return out, report
	}

	waiting := "waiting for the janitor to record its grace window; it lasts at least until " + markedAt + " + the janitor's --grace-period"
	g.Expect(status()).To(ContainSubstring("  grace period: " + waiting + "\n"))
	out, report := plan()
	g.Expect(out).To(ContainSubstring("Grace period: " + waiting + "\n"))
	g.Expect(out).To(ContainSubstring("marked, in the janitor's grace period"))
	g.Expect(report.Grace.EndsAt).To(BeNil())

	ends := time.Now().Add(42 * time.Minute).Truncate(time.Second)
	recordGraceEnd(t, dead, ends)
	left := regexp.QuoteMeta(" left (the janitor's ends at " + ends.UTC().Format(time.RFC3339) + ")")
	g.Expect(status()).To(MatchRegexp(`  grace period: 4[12]m\d+s` + left))
	out, report = plan()
	g.Expect(out).To(MatchRegexp(`Grace period: 4[12]m\d+s` + left))
	g.Expect(report.Plan.Wait).To(Equal(janitor.WaitGracePeriod))
	g.Expect(report.Plan.GraceLeft).To(BeNumerically("~", 42*time.Minute, time.Minute))
	g.Expect(report.Grace.EndsAt.Time).To(BeTemporally("==", ends))

	// over by the janitor's record, though the mark is younger than PlanCluster's default 30s
	at, _ := time.Parse(time.RFC3339, markedAt)
	recordGraceEnd(t, dead, at)
	over := "grace period over (the janitor's ended at " + markedAt + ")"
	g.Expect(status()).To(ContainSubstring("  grace period: " + over + "\n"))
	out, report = plan()
	g.Expect(out).To(ContainSubstring("Grace period: " + over + "\n"))
	g.Expect(out).To(ContainSubstring("marked and dead, the grace period over: the janitor does this now"))
	g.Expect(report.Plan.Wait).To(Equal(janitor.NotWaiting))
	g.Expect(out).NotTo(ContainSubstring("30s"), "no assumed grace period")
}

// TestStatusShowsTheGraceWindowTheRunningJanitorRecords: the janitor (grace period 1h) records its window
// and status shows it.
func TestStatusShowsTheGraceWindowTheRunningJanitorRecords(t *testing.T) {
	g := NewWithT(t)
	dead := markedByAlice(t, "gone")
	g.Eventually(func() string {
		out, _, _ := kubectl(t, alice, "", "status", dead.ForeignCluster.Name)
		return out
	}).WithTimeout(30 * time.Second).Should(MatchRegexp(`  grace period: (59m\d+s|1h0m0s) left \(the janitor's ends at `))
}

// TestStatusSaysFirstThatTheProviderReturned: once the janitor records a return, its line comes before
// everything else about that cluster, with the next step; after the fence, the fence and the step after.
func TestStatusSaysFirstThatTheProviderReturned(t *testing.T) {
	testEnv := harness.Require(t)
	g := NewWithT(t)
	dead := markedByAlice(t, "gone")
	g.Expect(fixture.Revive(t.Context(), testEnv.Client, dead)).To(Succeed()) // Liqo sees it answer after the mark
	firstLine := func() string {
		out, _, _ := kubectl(t, alice, "", "status", dead.ForeignCluster.Name)
		line, _, _ := strings.Cut(out, "\n")
		return line
	}
	g.Eventually(firstLine).WithTimeout(30 * time.Second).Should(And(
		HavePrefix("PROVIDER RETURNED: "+dead.ForeignCluster.Name+" (cluster ID "+dead.ID+") answered again at "),
		ContainSubstring("(Liqo's APIServerStatus turned Established)"),
		HaveSuffix("Fence them: kubectl liqo-janitor fence "+dead.ID+" --provider-kubeconfig <provider kubeconfig>")))

	js, _, err := kubectl(t, alice, "", "status", dead.ForeignCluster.Name, "-o", "json")
	g.Expect(err).NotTo(HaveOccurred())
	var report view.StatusReport
	g.Expect(json.Unmarshal([]byte(js), &report)).To(Succeed())
	g.Expect(report.Clusters).To(HaveLen(1))
	g.Expect(report.Clusters[0].Returned).NotTo(BeNil())
	g.Expect(report.Clusters[0].Returned.How).To(Equal("Liqo's APIServerStatus turned Established"))
	g.Expect(report.Clusters[0].Returned.Fenced).To(BeEmpty())

	asAlice, err := testEnv.NewClient(func(c *rest.Config) { c.Impersonate.UserName = alice })
	g.Expect(err).NotTo(HaveOccurred())
	fence := liqojanitor.FenceRecord{At: time.Now(), By: alice, Counts: "shadowpods 3, pods 3"}.String()
	g.Expect(fixture.Annotate(t.Context(), asAlice, dead.ForeignCluster, map[string]*string{liqojanitor.FencedAnnotation: &fence})).To(Succeed())
	g.Eventually(firstLine).Should(HaveSuffix("; fenced by alice: shadowpods 3, pods 3. Next: kubectl liqo-janitor unmark " +
		dead.ForeignCluster.Name + " and re-peer, or delete the ForeignCluster"))
}

// event is an events.k8s.io/v1 Event about the object regarding, reported by controller, in the
// namespace where the janitor's events about ForeignClusters land.
func event(regarding *liqov1beta1.ForeignCluster, uid types.UID, controller, reason, note string) *eventsv1.Event {
	return &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: regarding.Name + "-", Namespace: view.EventsNamespace},
		Regarding: corev1.ObjectReference{APIVersion: liqov1beta1.GroupVersion.String(), Kind: "ForeignCluster",
			Name: regarding.Name, UID: uid},
		EventTime: metav1.NowMicro(), ReportingController: controller, ReportingInstance: controller + "-0",
		Action: "Release", Reason: reason, Note: note, Type: corev1.EventTypeNormal,
	}
}

// TestStatusListsOnlyTheJanitorsEventsAboutThatForeignCluster: by regarding.uid (not an earlier
// ForeignCluster of the same name, not another one), by the janitor's reportingController, and the notes
// printed escaped.
func TestStatusListsOnlyTheJanitorsEventsAboutThatForeignCluster(t *testing.T) {
	testEnv := harness.Require(t)
	g := NewWithT(t)
	dead, live := deadAndLive(t)
	fc, other := dead.ForeignCluster.DeepCopy(), live.ForeignCluster.DeepCopy()
	g.Expect(testEnv.Client.Get(t.Context(), client.ObjectKeyFromObject(fc), fc)).To(Succeed())
	g.Expect(testEnv.Client.Get(t.Context(), client.ObjectKeyFromObject(other), other)).To(Succeed())
	for _, ev := range []*eventsv1.Event{
		event(fc, fc.UID, janitor.ReportingController, "Released", "released pods 3\x1b[2J\x1b]0;pwned\x07\nerror: forged line"),
		event(fc, fc.UID, "someone-else", "Released", "FORGED BY ANOTHER CONTROLLER"),
		event(fc, "uid-of-an-earlier-foreigncluster", janitor.ReportingController, "Released", "ABOUT AN EARLIER FOREIGNCLUSTER"),
		event(other, other.UID, janitor.ReportingController, "Released", "ABOUT ANOTHER FOREIGNCLUSTER"),
	} {
		g.Expect(testEnv.Client.Create(t.Context(), ev)).To(Succeed())
	}

	out, _, err := kubectl(t, alice, "", "status", fc.Name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring(`Released: released pods 3\x1b[2J\x1b]0;pwned\a\nerror: forged line` + "\n"))
	g.Expect(out).NotTo(ContainSubstring("\x1b"), "no raw escape reaches the terminal")
	g.Expect(out).NotTo(ContainSubstring("\nerror: forged line"))
	for _, decoy := range []string{"FORGED", "EARLIER", "ANOTHER"} {
		g.Expect(out).NotTo(ContainSubstring(decoy))
	}

	out, _, err = kubectl(t, alice, "", "status", fc.Name, "-o", "yaml")
	g.Expect(err).NotTo(HaveOccurred())
	var report view.StatusReport
	g.Expect(yaml.Unmarshal([]byte(out), &report)).To(Succeed())
	g.Expect(report.Clusters).To(HaveLen(1))
	g.Expect(report.Clusters[0].Events).To(ConsistOf(HaveField("Note", `released pods 3\x1b[2J\x1b]0;pwned\a\nerror: forged line`)),
		"the document escapes the cluster's text as the tables do")
}

// TestStatusPrintsTheMarkedClustersAsADocument: status -o yaml|json is the StatusReport of the marked
// clusters: the stamps, the janitor's grace window and summary, its events; --watch prints tables only.
func TestStatusPrintsTheMarkedClustersAsADocument(t *testing.T) {
	g := NewWithT(t)
	dead := markedByAlice(t, "gone for good")
	name := dead.ForeignCluster.Name
	var out string
	var report view.StatusReport
	g.Eventually(func(g Gomega) {
		var err error
		out, _, err = kubectl(t, alice, "", "status", name, "-o", "yaml")
		g.Expect(err).NotTo(HaveOccurred())
		report = view.StatusReport{}
		g.Expect(yaml.UnmarshalStrict([]byte(out), &report)).To(Succeed())
		g.Expect(report.Clusters).To(HaveLen(1))
		g.Expect(report.Clusters[0].Grace).NotTo(BeNil())
		g.Expect(report.Clusters[0].Grace.EndsAt).NotTo(BeNil(), "the janitor's record")
		g.Expect(report.Clusters[0].Cleanup).To(HavePrefix(fmt.Sprintf("grace: would release pods %d", len(dead.Pods))))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	t.Log("status -o yaml:\n" + out)
	g.Expect(out).To(HavePrefix("apiVersion: plugin.liqo-janitor.io/v1alpha1\nclusters:\n"))
	g.Expect(report.Kind).To(Equal("StatusReport"))
	cs := &report.Clusters[0]
	g.Expect(cs.ForeignCluster).To(Equal(name))
	g.Expect(cs.ClusterID).To(Equal(dead.ID))
	g.Expect(cs.Marked && cs.Confirmed && !cs.Paused).To(BeTrue())
	g.Expect(cs.MarkedBy).To(Equal(alice))
	g.Expect(cs.MarkedAt).NotTo(BeNil())
	g.Expect(cs.MarkedAt.Time).To(BeTemporally("~", time.Now(), time.Minute))
	g.Expect(cs.Reason).To(Equal("gone for good"))
	g.Expect(cs.Grace.EndsAt.Time).To(BeTemporally("~", cs.MarkedAt.Add(time.Hour), 5*time.Second))
	g.Expect(cs.Cleanup).To(HavePrefix(fmt.Sprintf("grace: would release pods %d", len(dead.Pods))))
	g.Expect(cs.Returned).To(BeNil())

	js, _, err := kubectl(t, alice, "", "status", "-o", "json")
	g.Expect(err).NotTo(HaveOccurred())
	var all view.StatusReport
	g.Expect(json.Unmarshal([]byte(js), &all)).To(Succeed())
	g.Expect(all.APIVersion).To(Equal(output.APIVersion))
	g.Expect(all.Clusters).To(ContainElement(HaveField("ForeignCluster", name)), "every marked cluster is in it")

	_, stderr, err := kubectl(t, alice, "", "status", name, "--watch", "-o", "json")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(Equal("error: --watch prints tables: leave out -o, or --watch to print one document\n"))
}

// TestStatusNamesWhatHoldsTheUnpeering: after the mark, the tenant namespace's deletion (what liqoctl
// force unpeer does) is held by a FirewallConfiguration with the finalizer of Liqo's fabric; status and
// status -o yaml name it, say liqo-janitor does not release it, and show the Liqo version the janitor found.
func TestStatusNamesWhatHoldsTheUnpeering(t *testing.T) {
	testEnv := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	dead, _ := deadAndLive(t)
	firewall := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"table": map[string]any{"name": dead.ID, "family": "IPV4"}}}}
	firewall.SetAPIVersion("networking.liqo.io/v1beta1")
	firewall.SetKind("FirewallConfiguration")
	firewall.SetNamespace(dead.TenantNS)
	firewall.SetName(dead.ID + "-masquerade")
	firewall.SetLabels(map[string]string{liqojanitor.RemoteClusterIDLabel: dead.ID})
	const fabricFinalizer = "firewallconfigurations-controller.liqo.io/finalizer"
	firewall.SetFinalizers([]string{fabricFinalizer})
	g.Expect(testEnv.Client.Create(ctx, firewall)).To(Succeed())
	stop, err := testEnv.StartJanitor(janitor.Options{Namespace: janitorNamespace(t)})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = stop() })
	_, _, err = kubectl(t, alice, "", "mark", dead.ForeignCluster.Name, "--reason", "flooded", "--yes")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(testEnv.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: dead.TenantNS}})).To(Succeed())

	held := liqojanitor.LeftObject{Kind: "FirewallConfiguration", Namespace: dead.TenantNS, Name: firewall.GetName(),
		HeldBy: "finalizer " + fabricFinalizer, Releasable: false}
	document := unpeeringDocument(t, dead.ForeignCluster.Name)
	g.Eventually(document).WithTimeout(30*time.Second).Should(And(Not(BeNil()),
		HaveField("Phase", liqojanitor.UnpeeringInProgress),
		HaveField("LiqoVersion", "v1.2.x"),
		HaveField("TenantNamespace", dead.TenantNS),
		HaveField("Left", ContainElement(And(
			HaveField("Kind", held.Kind), HaveField("Namespace", held.Namespace), HaveField("Name", held.Name),
			HaveField("HeldBy", held.HeldBy), HaveField("Releasable", false), HaveField("Next", ContainSubstring("guards firewall rules"))))),
	), "status -o yaml names the FirewallConfiguration that holds the tenant namespace")

	out, _, err := kubectl(t, alice, "", "status", dead.ForeignCluster.Name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("  liqo: v1.2.x (from the CRDs Liqo installed)\n"))
	g.Expect(out).To(ContainSubstring("  unpeering: in progress, "))
	g.Expect(out).To(ContainSubstring("(tenant namespace " + dead.TenantNS + ")\n"))
	g.Expect(out).To(ContainSubstring("    - " + held.Line()))
}

// TestPlanAndStatusSayWhereTheReturnProbeLooks: a marked cluster with no API-server URL anywhere has no
// probe target, and plan and status say so; with one in Liqo's status they name it, unverified without the
// provider's CA; once the janitor kept it for the mark, they say so, and it stays after Liqo clears the
// status (janitor rule 16).
func TestPlanAndStatusSayWhereTheReturnProbeLooks(t *testing.T) {
	testEnv := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	dead, _ := deadAndLive(t)
	name := dead.ForeignCluster.Name
	_, _, err := kubectl(t, alice, "", "mark", name, "--reason", "gone", "--yes")
	g.Expect(err).NotTo(HaveOccurred())
	ns := testEnv.OwnNamespace(t) // the janitor's own namespace, granted as the release namespace is
	status := func() (string, *view.Probe) {
		out, _, err := kubectl(t, alice, "", "status", name, "--janitor-namespace", ns)
		g.Expect(err).NotTo(HaveOccurred())
		js, _, err := kubectl(t, alice, "", "status", name, "-o", "json", "--janitor-namespace", ns)
		g.Expect(err).NotTo(HaveOccurred())
		var report view.StatusReport
		g.Expect(json.Unmarshal([]byte(js), &report)).To(Succeed())
		g.Expect(report.Clusters).To(HaveLen(1))
		return out, report.Clusters[0].Probe
	}
	out, probe := status()
	g.Expect(out).To(ContainSubstring("  return probe: NONE: no API-server URL is known for this provider"))
	g.Expect(probe).To(Equal(&view.Probe{None: true}))
	planOut, _, err := kubectl(t, alice, "", "plan", name, "--janitor-namespace", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(planOut).To(ContainSubstring("\n  return probe: NONE: no API-server URL is known"))

	setURL := func(u string) { // a merge patch: the janitor writes the same ForeignCluster meanwhile
		g.Expect(fixture.SetAPIServerURL(ctx, testEnv.Client, dead.ForeignCluster, u)).To(Succeed())
	}
	const url = "https://198.51.100.7:6443"
	setURL(url)
	out, probe = status()
	g.Expect(out).To(ContainSubstring("  return probe: " + url + "; no CA of the provider is known: any TLS answer counts, unverified; " +
		"from the ForeignCluster's status now"))
	g.Expect(probe.Kept).To(BeFalse())

	stop, err := testEnv.StartJanitor(janitor.Options{Namespace: ns, GracePeriod: time.Hour})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = stop() })
	g.Eventually(func() bool { _, p := status(); return p.Kept }).WithTimeout(30 * time.Second).Should(BeTrue())
	setURL("") // Liqo clears the status once the tenant namespace is gone
	out, probe = status()
	g.Expect(out).To(MatchRegexp(regexp.QuoteMeta("  return probe: "+url+"; no CA of the provider is known: any TLS answer counts, unverified; "+
		"kept by liqo-janitor at ") + `\S+ from the ForeignCluster's status\n`))
	g.Expect(probe.APIServer).To(Equal(url))
}

// TestPlanAndStatusListTheVolumesPinnedToTheDeadCluster (issue 38, item 1): plan and status say how many
// volumes are pinned to the dead cluster, list each with its data on the cluster, and point at
// release-volumes; -o yaml carries them.
func TestPlanAndStatusListTheVolumesPinnedToTheDeadCluster(t *testing.T) {
	testEnv := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	dead, _ := deadAndLive(t)
	g.Expect(fixture.StorageClasses(ctx, testEnv.Client)).To(Succeed())
	ns := testEnv.Namespace(t)
	pvc, pv, err := fixture.Bind(ctx, testEnv.Client, fixture.Claim{Namespace: ns, Name: "data-db-0", Class: fixture.LiqoStorageClass,
		Node: dead.Node.Name, Cluster: dead.ID, Placeholder: true})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = testEnv.Client.Delete(context.Background(), pv) })
	want := liqojanitor.PinnedVolume{Namespace: ns, Name: pvc.Name, UID: string(pvc.UID), PV: pv.Name, ReclaimPolicy: "Delete"}
	line := "1 volume pinned to " + dead.ID + ": their workloads cannot run anywhere until released"

	stop, err := testEnv.StartJanitor(janitor.Options{Namespace: janitorNamespace(t)})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = stop() })
	_, _, err = kubectl(t, alice, "", "mark", dead.ForeignCluster.Name, "--reason", "flooded", "--yes")
	g.Expect(err).NotTo(HaveOccurred())

	out, _, err := kubectl(t, alice, "", "plan", dead.ForeignCluster.Name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("  " + line + "\n    - " + want.Line() + "\n"))
	g.Expect(out).To(ContainSubstring("kubectl liqo-janitor release-volumes shows the plan"))

	document := unpeeringDocument(t, dead.ForeignCluster.Name)
	g.Eventually(document).WithTimeout(30*time.Second).Should(And(Not(BeNil()), HaveField("PinnedVolumes", 1),
		HaveField("Volumes", Equal([]liqojanitor.PinnedVolume{want}))), "status -o yaml carries the janitor's record of the pinned volume")
	out, _, err = kubectl(t, alice, "", "status", dead.ForeignCluster.Name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("  " + line + "\n    - " + want.Line() + "\n"))
}

// unpeeringDocument reads the unpeering record of the ForeignCluster name in `status -o yaml`.
func unpeeringDocument(t *testing.T, name string) func() *liqojanitor.Unpeering {
	t.Helper()
	return func() *liqojanitor.Unpeering {
		g := NewWithT(t)
		out, _, err := kubectl(t, alice, "", "status", name, "-o", "yaml")
		g.Expect(err).NotTo(HaveOccurred())
		var report view.StatusReport
		g.Expect(yaml.Unmarshal([]byte(out), &report)).To(Succeed())
		g.Expect(report.Clusters).To(HaveLen(1))
		return report.Clusters[0].Unpeering
	}
}
