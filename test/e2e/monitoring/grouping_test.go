package monitoring_test

import (
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/liqo-janitor/liqo-janitor/test/e2e/monitoring"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// TestEveryAlertAggregatesByGroupBy: every aggregation of every alert keeps prometheusRule.groupBy's
// labels apart (by, never without or across them), and every on() matching matches on them, so that no
// alert sums one cluster's or one install's series with another's.
func TestEveryAlertAggregatesByGroupBy(t *testing.T) {
	for name, groupBy := range map[string][]string{
		"the default":                      {"cluster", "namespace", "job"},
		"another cluster label and no job": {"k8s_cluster", "namespace"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			values := map[string]any{"providerFence": map[string]any{"enabled": true}} // its alert too
			if name != "the default" {
				var list []any
				for _, l := range groupBy {
					list = append(list, l)
				}
				values["prometheusRule"] = map[string]any{"groupBy": list}
			}
			for _, group := range ruleFile(t, values).Groups {
				for _, r := range group.Rules {
					expr, err := monitoring.Parser.ParseExpr(r.Expr)
					g.Expect(err).NotTo(HaveOccurred())
					aggregations := 0
					parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
						switch n := node.(type) {
						case *parser.AggregateExpr:
							aggregations++
							g.Expect(n.Without).To(BeFalse(), "%s: %s", r.Alert, n)
							g.Expect(n.Grouping).To(ContainElements(groupBy), "%s: %s", r.Alert, n)
						case *parser.BinaryExpr:
							if n.VectorMatching != nil && n.VectorMatching.On {
								g.Expect(n.VectorMatching.MatchingLabels).To(ContainElements(groupBy), "%s: %s", r.Alert, n)
							}
						}
						return nil
					})
					g.Expect(aggregations).To(BeNumerically(">", 0), "%s aggregates", r.Alert)
				}
			}
		})
	}
}

// TestDashboardHasDatasourceClusterAndNamespaceVariables: the dashboard asks for its Prometheus, the
// cluster and the namespace, and every query reads from that data source and selects by both.
func TestDashboardHasDatasourceClusterAndNamespaceVariables(t *testing.T) {
	g := NewWithT(t)
	root, err := harness.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	d, err := monitoring.ReadDashboard(root)
	g.Expect(err).NotTo(HaveOccurred())
	variables := map[string]string{}
	for _, v := range d.Templating.List {
		variables[v.Name] = v.Type
		if v.Type == "query" {
			g.Expect(v.Datasource.UID).To(Equal("${datasource}"), "variable %s", v.Name)
		}
	}
	g.Expect(variables).To(Equal(map[string]string{"datasource": "datasource", "cluster": "query", "namespace": "query"}))
	g.Expect(d.Panels).NotTo(BeEmpty())
	for _, p := range d.Panels {
		g.Expect(p.Datasource).To(Equal(monitoring.Datasource{Type: "prometheus", UID: "${datasource}"}), "panel %s", p.Title)
		g.Expect(p.Targets).NotTo(BeEmpty(), "panel %s", p.Title)
		for _, target := range p.Targets {
			expr, err := monitoring.Parser.ParseExpr(target.Expr)
			g.Expect(err).NotTo(HaveOccurred(), "panel %s", p.Title)
			parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
				if vs, ok := node.(*parser.VectorSelector); ok {
					matchers := map[string]string{}
					for _, m := range vs.LabelMatchers {
						if m.Type == labels.MatchRegexp {
							matchers[m.Name] = m.Value
						}
					}
					g.Expect(matchers).To(HaveKeyWithValue("cluster", "$cluster"), "panel %s: %s", p.Title, vs)
					g.Expect(matchers).To(HaveKeyWithValue("namespace", "$namespace"), "panel %s: %s", p.Title, vs)
				}
				return nil
			})
		}
	}
}
