package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// admissionLabel scopes, for this benchmark only, the gate's webhooks and the policy to their own
// ForeignCluster each, so that the variants can be measured interleaved, request by request.
const admissionLabel = "bench.liqo-janitor.io/admission"

var variants = []string{"webhook", "policy", "none"}

// BenchmarkGateLatency measures what admission adds to a ForeignCluster update the gate must see (setting
// or removing liqo-janitor.io/confirm-cluster-id, so the matchConditions call the validating webhook),
// three ways
// interleaved in one loop so that the machine's drift hits all alike: a ForeignCluster only the gate's
// webhooks see, one only the ValidatingAdmissionPolicy of manifests/policy sees (CEL in the API server),
// and one neither sees. Reported: p50 and p99 of each update's round trip, in ms, per variant, and what the
// webhook adds over the policy at p99 (ms) and as ratios at p50 and p99.
func BenchmarkGateLatency(b *testing.B) {
	env := harness.Require(b)
	ctx := context.Background()
	fcs := map[string]*liqov1beta1.ForeignCluster{}
	for _, v := range variants {
		fc := &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: "latency-" + v,
			Labels: map[string]string{admissionLabel: v}}, Spec: liqov1beta1.ForeignClusterSpec{ClusterID: liqov1beta1.ClusterID("latency-" + v)}}
		if err := env.Client.Create(ctx, fc); err != nil {
			b.Fatal(err)
		}
		fcs[v] = fc
	}
	defer scopeWebhooks(b)()
	defer applyScopedPolicy(b)()
	waitAdmission(b, fcs["webhook"], true)
	waitAdmission(b, fcs["policy"], true)
	waitAdmission(b, fcs["none"], false)

	lat := map[string][]time.Duration{}
	i := 0
	for b.Loop() {
		i++
		for k := range variants {
			v := variants[(i+k)%len(variants)] // rotate which goes first
			// set the confirmation in odd rounds, remove it in even ones: a change the gate must judge
			confirm := "null"
			if i%2 == 1 {
				confirm = fmt.Sprintf("%q", fcs[v].Spec.ClusterID)
			}
			patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%s}}}`, liqojanitor.ConfirmAnnotation, confirm)
			t0 := time.Now()
			if err := env.Client.Patch(ctx, fcs[v].DeepCopy(), client.RawPatch(types.MergePatchType, patch)); err != nil {
				b.Fatal(err)
			}
			lat[v] = append(lat[v], time.Since(t0))
		}
	}
	p50, p99 := map[string]time.Duration{}, map[string]time.Duration{}
	for _, v := range variants {
		slices.Sort(lat[v])
		p50[v], p99[v] = lat[v][len(lat[v])/2], lat[v][len(lat[v])*99/100]
		b.ReportMetric(ms(p50[v]), v+"-p50-ms")
		b.ReportMetric(ms(p99[v]), v+"-p99-ms")
	}
	// the figures of the goal: what the webhook adds over the policy, measured in the same rounds
	b.ReportMetric(ms(p99["webhook"]-p99["policy"]), "webhook-minus-policy-p99-ms")
	b.ReportMetric(float64(p50["webhook"])/float64(p50["policy"]), "webhook-over-policy-p50")
	b.ReportMetric(float64(p99["webhook"])/float64(p99["policy"]), "webhook-over-policy-p99")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// scopeWebhooks restricts the gate's webhooks to ForeignClusters labelled for them, and returns a function
// that restores the configurations.
func scopeWebhooks(b *testing.B) func() {
	b.Helper()
	env := harness.Require(b)
	ctx := context.Background()
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{admissionLabel: "webhook"}}
	var mw admissionregistrationv1.MutatingWebhookConfigurationList
	var vw admissionregistrationv1.ValidatingWebhookConfigurationList
	if err := env.Client.List(ctx, &mw); err != nil {
		b.Fatal(err)
	}
	if err := env.Client.List(ctx, &vw); err != nil {
		b.Fatal(err)
	}
	var restore []client.Object
	for _, cfg := range append(items(mw.Items), items(vw.Items)...) {
		restore = append(restore, cfg.DeepCopyObject().(client.Object))
		harness.ForEachWebhook(cfg, func(_ *admissionregistrationv1.WebhookClientConfig, s **metav1.LabelSelector) { *s = selector })
		if err := env.Client.Update(ctx, cfg); err != nil {
			b.Fatal(err)
		}
	}
	return func() {
		for _, obj := range restore {
			fresh := obj.DeepCopyObject().(client.Object)
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
				b.Error(err)
				continue
			}
			obj.SetResourceVersion(fresh.GetResourceVersion())
			if err := env.Client.Update(ctx, obj); err != nil {
				b.Error(err)
			}
		}
	}
}

// applyScopedPolicy creates manifests/policy's ValidatingAdmissionPolicy, its binding restricted to
// ForeignClusters labelled for it, and returns a function that deletes them.
func applyScopedPolicy(b *testing.B) func() {
	b.Helper()
	env := harness.Require(b)
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join(env.Root, "manifests", "policy", "policy.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	var docs []string // the rendering's objects, without comment-only documents such as its header
	for _, doc := range strings.Split(string(data), "\n---\n") {
		if strings.Contains(doc, "kind:") {
			docs = append(docs, doc)
		}
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if len(docs) < 2 {
		b.Fatalf("manifests/policy/policy.yaml holds %d objects, want a policy and its binding", len(docs))
	}
	if err := yaml.Unmarshal([]byte(docs[0]), policy); err != nil {
		b.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(docs[1]), binding); err != nil {
		b.Fatal(err)
	}
	if policy.Kind != "ValidatingAdmissionPolicy" || binding.Kind != "ValidatingAdmissionPolicyBinding" {
		b.Fatalf("manifests/policy/policy.yaml: got %s and %s, want the policy and its binding", policy.Kind, binding.Kind)
	}
	binding.Spec.MatchResources = &admissionregistrationv1.MatchResources{
		ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{admissionLabel: "policy"}}}
	for _, obj := range []client.Object{policy, binding} {
		if err := env.Client.Create(ctx, obj); err != nil {
			b.Fatal(err)
		}
	}
	return func() {
		_ = env.Client.Delete(ctx, binding)
		_ = env.Client.Delete(ctx, policy)
	}
}

// waitAdmission polls a dry-run unconfirmed mark of fc until it is refused (or, with refused false,
// allowed), i.e. until the API server enforces the configuration just written.
func waitAdmission(b *testing.B, fc *liqov1beta1.ForeignCluster, refused bool) {
	b.Helper()
	env := harness.Require(b)
	mark := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, liqojanitor.MarkAnnotation, liqojanitor.MarkValue))
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true,
		func(ctx context.Context) (bool, error) {
			return (env.Client.Patch(ctx, fc.DeepCopy(), mark, client.DryRunAll) != nil) == refused, nil
		})
	if err != nil {
		b.Fatalf("admission of %s did not become what the benchmark needs", fc.Name)
	}
}

// items returns pointers to the elements of a list's Items, as client objects.
func items[T any, PT interface {
	*T
	client.Object
}](list []T) []client.Object {
	out := make([]client.Object, 0, len(list))
	for i := range list {
		out = append(out, PT(&list[i]))
	}
	return out
}
