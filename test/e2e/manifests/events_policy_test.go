package manifests_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// eventsPolicy is the always-installed ValidatingAdmissionPolicy on Events written in the janitor's name.
const eventsPolicy = appName + "-events"

// reportingController is the name the janitor's event recorder reports as.
const reportingController = janitor.ReportingController

// TestEventsPolicyLetsOnlyTheJanitorReportAsTheJanitor: the plugin trusts Events whose reporter is
// liqo-janitor as the janitor's own; the default install makes that true: only the janitor's
// ServiceAccount may create or update them, in either Events API, and nobody else may rewrite one.
func TestEventsPolicyLetsOnlyTheJanitorReportAsTheJanitor(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	applyTemplate(t, nil, "templates/events-policy.yaml")

	const mallory = "mallory"
	grantRole(t, "event-writer", []rbacv1.PolicyRule{{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"},
		Verbs: []string{"get", "list", "create", "update", "patch"}}}, mallory, janitorUser)
	forger, janitor := impersonate(t, mallory), impersonate(t, janitorUser)
	ns := env.Namespace(t)

	regarding := corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "anything"}
	event := func(name, controller string) *eventsv1.Event {
		return &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			EventTime: metav1.NewMicroTime(time.Now()), ReportingController: controller, ReportingInstance: controller + "-0",
			Action: "Release", Reason: "CleanupDone", Type: corev1.EventTypeNormal, Regarding: regarding,
			Note: "released 120 pods of provider-a"}
	}
	coreEvent := func(name, component, source string) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, InvolvedObject: regarding,
			Reason: "CleanupDone", Message: "released 120 pods of provider-a", Type: corev1.EventTypeNormal,
			ReportingController: component, Source: corev1.EventSource{Component: source},
			FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1}
	}

	// wait until the new policy is enforced (dry-run, so an early success changes nothing)
	g.Eventually(func(g Gomega) {
		expectRefusedByPolicy(g, forger.Create(ctx, event("probe", reportingController), client.DryRunAll), eventsPolicy, http.StatusForbidden)
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

	forgeries := map[string]client.Object{
		"an events.k8s.io Event reported by liqo-janitor":        event("forged-v1", reportingController),
		"a core Event with reportingComponent liqo-janitor":      coreEvent("forged-core", reportingController, ""),
		"a core Event from source component liqo-janitor":        coreEvent("forged-source", "", reportingController),
		"a core Event from both, as client-go's recorder writes": coreEvent("forged-both", reportingController, reportingController),
	}
	for name, obj := range forgeries {
		t.Run(name, func(t *testing.T) {
			expectRefusedByPolicy(NewWithT(t), forger.Create(t.Context(), obj), eventsPolicy, http.StatusForbidden,
				`user "mallory" may not create Event `+ns+"/"+obj.GetName()+" reported by liqo-janitor", janitorUser)
		})
	}

	// Anyone may report as themselves; the janitor reports as the janitor, in either API.
	g.Expect(forger.Create(ctx, event("mallorys-own", "example.com/mallory"))).To(Succeed())
	own := event("janitors-own", reportingController)
	g.Expect(janitor.Create(ctx, own)).To(Succeed())
	g.Expect(janitor.Create(ctx, coreEvent("janitors-core", reportingController, reportingController))).To(Succeed())
	// … and updates its own (the series of an aggregated event), which nobody else may rewrite.
	series := func(count int) client.Patch {
		return client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"series":{"count":%d,"lastObservedTime":%q}}`,
			count, time.Now().UTC().Format("2006-01-02T15:04:05.000000Z"))))
	}
	g.Expect(janitor.Patch(ctx, own.DeepCopy(), series(2))).To(Succeed())
	expectRefusedByPolicy(g, forger.Patch(ctx, own.DeepCopy(), series(1000)),
		eventsPolicy, http.StatusForbidden, `user "mallory" may not update Event `+ns+"/janitors-own")
	// A core/v1 Event's reporter may change on update: rewriting one of the janitor's and taking its name
	// off in the same request is refused too (the old Event is judged as well).
	expectRefusedByPolicy(g, forger.Patch(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "janitors-core", Namespace: ns}},
		client.RawPatch(types.MergePatchType, []byte(`{"message":"released nothing","reportingComponent":"mallory","source":{"component":"mallory"}}`))),
		eventsPolicy, http.StatusForbidden, `user "mallory" may not update Event `+ns+"/janitors-core")

	// The world afterwards: every event reported by liqo-janitor is one the janitor wrote, as it wrote it.
	list := &eventsv1.EventList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	byName := map[string]eventsv1.Event{}
	for _, e := range list.Items {
		byName[e.Name] = e
	}
	g.Expect(byName).To(HaveLen(3))
	g.Expect(byName).To(HaveKey("mallorys-own"))
	g.Expect(byName["janitors-own"].Note).To(Equal(own.Note))
	g.Expect(byName["janitors-own"].Series).To(HaveField("Count", BeEquivalentTo(2)))
	g.Expect(byName["janitors-core"].Note).To(Equal("released 120 pods of provider-a"))
	g.Expect(byName["janitors-core"].ReportingController).To(Equal(reportingController))
	g.Expect(byName["janitors-core"].DeprecatedSource.Component).To(Equal(reportingController))
}
