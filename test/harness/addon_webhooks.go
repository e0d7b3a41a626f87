package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// GeneratedWebhooksFile holds the webhook configurations `make manifests` generates from the gate's markers
// (into the chart, which names them and points them at its Service), relative to the repository root: the
// one place the harness, the tests and the demo take it from (Options.GeneratedWebhooks registers it).
const GeneratedWebhooksFile = "manifests/chart/liqo-janitor/files/webhooks.yaml"

// GeneratedWebhooks reads the generated Mutating- and ValidatingWebhookConfiguration of the repository at
// root (strictly: an unknown field fails), as they are before the chart.
func GeneratedWebhooks(root string) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	data, err := os.ReadFile(filepath.Join(root, GeneratedWebhooksFile))
	if err != nil {
		return nil, nil, err
	}
	mut := &admissionregistrationv1.MutatingWebhookConfiguration{}
	val := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var into any
		switch {
		case strings.Contains(doc, "kind: MutatingWebhookConfiguration"):
			into = mut
		case strings.Contains(doc, "kind: ValidatingWebhookConfiguration"):
			into = val
		default:
			continue
		}
		if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", GeneratedWebhooksFile, err)
		}
	}
	if len(mut.Webhooks) == 0 || len(val.Webhooks) == 0 {
		return nil, nil, fmt.Errorf("%s lacks a mutating or a validating webhook", GeneratedWebhooksFile)
	}
	return mut, val, nil
}

// GeneratedWebhooks reads the generated webhook configurations of the Env's repository (GeneratedWebhooks).
func (e *Env) GeneratedWebhooks() (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	return GeneratedWebhooks(e.Root)
}

// EditGateWebhooks applies edit to the matchConditions of every webhook of the gate's installed
// configurations (the generated ones, as the Env registered them).
func (e *Env) EditGateWebhooks(ctx context.Context, edit func([]admissionregistrationv1.MatchCondition) []admissionregistrationv1.MatchCondition) error {
	mut, val, err := e.GeneratedWebhooks()
	if err != nil {
		return err
	}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(mut), mut); err != nil {
		return fmt.Errorf("reading %s: %w", mut.Name, err)
	}
	for i := range mut.Webhooks {
		mut.Webhooks[i].MatchConditions = edit(mut.Webhooks[i].MatchConditions)
	}
	if err := e.Client.Update(ctx, mut); err != nil {
		return fmt.Errorf("updating %s: %w", mut.Name, err)
	}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(val), val); err != nil {
		return fmt.Errorf("reading %s: %w", val.Name, err)
	}
	for i := range val.Webhooks {
		val.Webhooks[i].MatchConditions = edit(val.Webhooks[i].MatchConditions)
	}
	if err := e.Client.Update(ctx, val); err != nil {
		return fmt.Errorf("updating %s: %w", val.Name, err)
	}
	return nil
}

// ForEachWebhook calls f with the client config and the object selector of every webhook of a Mutating-
// or ValidatingWebhookConfiguration, for f to change them.
func ForEachWebhook(cfg client.Object, f func(*admissionregistrationv1.WebhookClientConfig, **metav1.LabelSelector)) {
	switch c := cfg.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for i := range c.Webhooks {
			f(&c.Webhooks[i].ClientConfig, &c.Webhooks[i].ObjectSelector)
		}
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for i := range c.Webhooks {
			f(&c.Webhooks[i].ClientConfig, &c.Webhooks[i].ObjectSelector)
		}
	}
}

// gateAbsentLabel on a ForeignCluster keeps the API server from calling the gate about it while
// WithoutGate runs, as if the gate were not installed: how a key gets onto a ForeignCluster anyway.
const gateAbsentLabel = "test.liqo-janitor.io/gate-absent"

// gateAbsentCondition is the matchCondition WithoutGate adds to every webhook of the gate (a DELETE's
// object is null).
var gateAbsentCondition = admissionregistrationv1.MatchCondition{
	Name: "test-gate-absent",
	Expression: fmt.Sprintf(`object == null || !has(object.metadata.labels) || !(%q in object.metadata.labels)`,
		gateAbsentLabel),
}

// GateProbe is how WithoutGate knows the gate is called again: a request setting the annotation Key to
// Value on the unmarked ForeignCluster, labelled, that the gate refuses with a message containing Refusal.
type GateProbe struct{ Key, Value, Refusal string }

// WithoutGate runs write, a change to the unmarked ForeignCluster name, as if the gate were not installed:
// the API server does not call the gate about name while it carries gateAbsentLabel. It returns with
// write done, the label removed (a request the gate sees and lets through: it changes none of its keys)
// and the gate back: back, dry run on name labelled again, refused. It fails tb if any step fails.
func (e *Env) WithoutGate(tb testing.TB, name string, write func(context.Context) error, back GateProbe) {
	tb.Helper()
	g := gomega.NewWithT(tb)
	ctx := tb.Context()
	labelled := func(v string) client.Patch {
		return client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"labels":{%q:%s}}}`, gateAbsentLabel, v))
	}
	target := &liqov1beta1.ForeignCluster{}
	target.Name = name
	g.Expect(e.Client.Patch(ctx, target, labelled(`"true"`))).To(gomega.Succeed())
	g.Expect(e.EditGateWebhooks(ctx, func(conds []admissionregistrationv1.MatchCondition) []admissionregistrationv1.MatchCondition {
		return append(conds, gateAbsentCondition)
	})).To(gomega.Succeed())
	// the API server loads webhook configurations asynchronously: write until it no longer asks the gate
	g.Eventually(func() error { return write(ctx) }).Should(gomega.Succeed(), "written without the gate")
	g.Expect(e.Client.Patch(ctx, target, labelled("null"))).To(gomega.Succeed())
	g.Expect(e.EditGateWebhooks(context.Background(), func(conds []admissionregistrationv1.MatchCondition) []admissionregistrationv1.MatchCondition {
		return slices.DeleteFunc(conds, func(c admissionregistrationv1.MatchCondition) bool { return c.Name == gateAbsentCondition.Name })
	})).To(gomega.Succeed())
	probe := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"labels":{%q:"true"},"annotations":{%q:%q}}}`,
		gateAbsentLabel, back.Key, back.Value))
	g.Eventually(func() error { return e.Client.Patch(ctx, target.DeepCopy(), probe, client.DryRunAll) }).
		Should(gomega.MatchError(gomega.ContainSubstring(back.Refusal)), "the gate is called again")
}
