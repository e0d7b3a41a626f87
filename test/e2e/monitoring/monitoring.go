// Package monitoring reads what the chart ships for Prometheus and Grafana — the alerting rules of its
// PrometheusRule and the dashboard's queries — for the tests that evaluate the alerts with Prometheus'
// own rule engine and check every query against the metrics the binary exposes.
package monitoring

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"

	"github.com/liqo-janitor/liqo-janitor/manifests"
)

// Parser parses PromQL as Prometheus does by default.
var Parser = parser.NewParser(parser.Options{})

// Rules renders the chart with the PrometheusRule on (values merged over that) and returns its spec as a
// Prometheus rule file, and the PrometheusRule itself (decoded strictly).
func Rules(ctx context.Context, values map[string]any) ([]byte, *monitoringv1.PrometheusRule, error) {
	values = maps.Clone(values) // the caller's maps stay as they were
	if values == nil {
		values = map[string]any{}
	}
	pr, _ := values["prometheusRule"].(map[string]any)
	pr = maps.Clone(pr)
	if pr == nil {
		pr = map[string]any{}
	}
	pr["enabled"] = true
	values["prometheusRule"] = pr
	r, err := manifests.Render(ctx, manifests.ReleaseNamespace, values)
	if err != nil {
		return nil, nil, err
	}
	doc := r.Template("templates/prometheusrule.yaml")
	rule := &monitoringv1.PrometheusRule{}
	if err := yaml.UnmarshalStrict([]byte(doc[len("---\n"):]), rule); err != nil {
		return nil, nil, fmt.Errorf("decoding the PrometheusRule: %w", err)
	}
	file, err := yaml.Marshal(map[string]any{"groups": rule.Spec.Groups})
	return file, rule, err
}

// Dashboard is the part of the Grafana dashboard the tests read.
type Dashboard struct {
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name       string     `json:"name"`
			Type       string     `json:"type"`
			Datasource Datasource `json:"datasource"`
			Definition string     `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		Title      string     `json:"title"`
		Datasource Datasource `json:"datasource"`
		Targets    []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// Datasource is a panel's or a variable's data source.
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// ReadDashboard reads the chart's dashboard (files/dashboard.json) from the repository at root.
func ReadDashboard(root string) (*Dashboard, error) {
	data, err := os.ReadFile(filepath.Join(root, manifests.ChartDir, "files", "dashboard.json"))
	if err != nil {
		return nil, err
	}
	d := &Dashboard{}
	return d, json.Unmarshal(data, d)
}

// Expressions returns every PromQL expression the chart ships: the alerts' and the dashboard's, keyed by
// where they come from ("alert LiqoJanitorDown", "panel Objects pending").
func Expressions(ctx context.Context, root string) (map[string]string, error) {
	_, rule, err := Rules(ctx, nil)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			out["alert "+r.Alert] = r.Expr.String()
		}
	}
	d, err := ReadDashboard(root)
	if err != nil {
		return nil, err
	}
	for _, p := range d.Panels {
		for i, t := range p.Targets {
			out[fmt.Sprintf("panel %s #%d", p.Title, i)] = t.Expr
		}
	}
	return out, nil
}

// MetricNames returns the metric names an expression selects.
func MetricNames(expr string) ([]string, error) {
	e, err := Parser.ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
		if vs, ok := node.(*parser.VectorSelector); ok {
			names = append(names, vs.Name)
		}
		return nil
	})
	return names, nil
}
