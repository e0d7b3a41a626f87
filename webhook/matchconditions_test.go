package webhook_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
	"github.com/liqo-janitor/liqo-janitor/webhook"
)

// update makes TestMatchConditionsFile write the gate's matchConditions into the generated webhook
// configurations (`make manifests` runs go test ./webhook -run '^TestMatchConditionsFile$' -args -update
// after controller-gen).
var update = flag.Bool("update", false, "write the gate's matchConditions into "+harness.GeneratedWebhooksFile)

// TestMatchConditionsFile: the webhook configurations controller-gen generates from the markers carry
// webhook.MatchConditions, built from the root package's key lists, and nothing else changes them. `make
// verify` (and this test in the fast lane) fails when the file is stale.
func TestMatchConditionsFile(t *testing.T) {
	g := NewWithT(t)
	root, err := harness.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(root, harness.GeneratedWebhooksFile)
	data, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	mut, val, err := harness.GeneratedWebhooks(root)
	g.Expect(err).NotTo(HaveOccurred())
	out, err := withMatchConditions(mut, val, webhook.MatchConditions())
	g.Expect(err).NotTo(HaveOccurred())
	if *update {
		g.Expect(os.WriteFile(path, out, 0o644)).To(Succeed())
		return
	}
	g.Expect(string(data)).To(Equal(string(out)), "%s is stale: run make manifests", harness.GeneratedWebhooksFile)
}

// TestMatchConditionsQuoteTheKeys: the keys the matchConditions name are plain CEL string literals.
func TestMatchConditionsQuoteTheKeys(t *testing.T) {
	g := NewWithT(t)
	keys := append(append(append(append([]string{liqojanitor.MarkAnnotation, liqojanitor.MarkValue, liqojanitor.PausedAnnotation},
		liqojanitor.MarkingAnnotations...), liqojanitor.GateStampAnnotations...), liqojanitor.JanitorOwnedAnnotations...),
		liqojanitor.OperatorRecordAnnotations...)
	for _, k := range append(keys, liqojanitor.MarkLockedLabels...) {
		g.Expect(strings.ContainsAny(k, `'\`)).To(BeFalse(), "%q: a key the matchConditions quote", k)
	}
}

// withMatchConditions writes the generated configurations as controller-gen does (each after a "---"
// line), with the matchConditions of every webhook conds names replaced by conds'; every webhook conds
// names must be there.
func withMatchConditions(mut *admissionregistrationv1.MutatingWebhookConfiguration, val *admissionregistrationv1.ValidatingWebhookConfiguration,
	conds map[string][]admissionregistrationv1.MatchCondition) ([]byte, error) {
	set := func(name string, mc *[]admissionregistrationv1.MatchCondition) {
		if c, ok := conds[name]; ok {
			*mc = c
			delete(conds, name)
		}
	}
	for i := range mut.Webhooks {
		set(mut.Webhooks[i].Name, &mut.Webhooks[i].MatchConditions)
	}
	for i := range val.Webhooks {
		set(val.Webhooks[i].Name, &val.Webhooks[i].MatchConditions)
	}
	if len(conds) > 0 {
		var missing []string
		for name := range conds {
			missing = append(missing, name)
		}
		return nil, fmt.Errorf("no webhook %s in %s", strings.Join(missing, ", "), harness.GeneratedWebhooksFile)
	}
	var b strings.Builder
	for _, cfg := range []any{mut, val} {
		doc, err := yaml.Marshal(cfg)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(doc)
	}
	return []byte(b.String()), nil
}
