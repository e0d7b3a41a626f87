package monitoring_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/rules"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/e2e/monitoring"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
	"github.com/liqo-janitor/liqo-janitor/test/markdown"
)

// ruleFile renders the chart's PrometheusRule with values and parses it as Prometheus loads a rule file
// (rulefmt: unknown fields, bad expressions and bad templates fail).
func ruleFile(t *testing.T, values map[string]any) *rulefmt.RuleGroups {
	t.Helper()
	g := NewWithT(t)
	file, _, err := monitoring.Rules(t.Context(), values)
	g.Expect(err).NotTo(HaveOccurred())
	groups, errs := rulefmt.Parse(file, false, model.UTF8Validation, monitoring.Parser, nil)
	g.Expect(errs).To(BeEmpty())
	return groups
}

func alertNames(groups *rulefmt.RuleGroups) []string {
	var names []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			names = append(names, r.Alert)
		}
	}
	return names
}

func TestTheChartShipsTheseAlerts(t *testing.T) {
	g := NewWithT(t)
	all := []string{"LiqoJanitorDown", "LiqoJanitorProviderReturned", "LiqoJanitorNoLeader", "LiqoJanitorReleaseFailures", "LiqoJanitorObjectsBlocked",
		"LiqoJanitorCleanupStuck", "LiqoJanitorWebhookErrors", "LiqoJanitorBraked", "LiqoJanitorStorm", "LiqoJanitorDryRun",
		"LiqoJanitorProviderMayFenceUs"}
	g.Expect(alertNames(ruleFile(t, nil))).To(Equal(all))
	without := ruleFile(t, map[string]any{"replicaCount": 1, "leaderElection": map[string]any{"enabled": false}})
	g.Expect(alertNames(without)).To(Equal(slices.DeleteFunc(slices.Clone(all), func(n string) bool { return n == "LiqoJanitorNoLeader" })),
		"no leader alert without leader election: the series never exists")
	g.Expect(alertNames(ruleFile(t, withProviderFence))).To(Equal(append(slices.Clone(all), "LiqoJanitorProviderFenced")),
		"the provider fence's alert with its agent")
	g.Expect(alertNames(ruleFile(t, providerOnly))).To(Equal([]string{"LiqoJanitorProviderFenced"}),
		"a provider-only install: none of the consumer's alerts (LiqoJanitorDown's absent() would fire for ever)")
}

// withProviderFence installs the provider fence agent beside the consumer's side; providerOnly alone.
var (
	withProviderFence = map[string]any{"providerFence": map[string]any{"enabled": true}}
	providerOnly      = map[string]any{"consumer": map[string]any{"enabled": false}, "providerFence": map[string]any{"enabled": true}}
)

// runbooksURL is the runbooks page, docs/runbooks.md, as GitHub shows it; an alert's runbook is its
// section there (runbooksURL#<alert name in lower case>).
const (
	runbooksPage = "docs/runbooks.md"
	runbooksURL  = "https://github.com/liqo-janitor/liqo-janitor/blob/main/" + runbooksPage
)

// TestAlertRunbooksAreSectionsOfTheRunbooksPage: every alert's runbook_url names its own section of
// docs/runbooks.md (GitHub's anchor of one of its headings), the returned-provider alert's, the one that
// asks for a fence, included.
func TestAlertRunbooksAreSectionsOfTheRunbooksPage(t *testing.T) {
	g := NewWithT(t)
	root, err := harness.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	page, err := os.ReadFile(filepath.Join(root, runbooksPage))
	g.Expect(err).NotTo(HaveOccurred())
	anchors := markdown.Anchors(string(page))
	runbooks := map[string]string{}
	for _, group := range ruleFile(t, withProviderFence).Groups {
		for _, r := range group.Rules {
			if url, ok := r.Annotations["runbook_url"]; ok {
				runbooks[r.Alert] = url
			}
		}
	}
	g.Expect(runbooks).To(HaveKeyWithValue("LiqoJanitorProviderReturned", runbooksURL+"#liqojanitorproviderreturned"))
	g.Expect(runbooks).To(HaveKeyWithValue("LiqoJanitorProviderFenced", runbooksURL+"#liqojanitorproviderfenced"))
	g.Expect(slices.Sorted(maps.Keys(runbooks))).To(Equal(slices.Sorted(slices.Values(alertNames(ruleFile(t, withProviderFence))))), "every alert has a runbook")
	for alert, url := range runbooks {
		g.Expect(url).To(Equal(runbooksURL+"#"+strings.ToLower(alert)), "%s: its runbook is its own section of %s", alert, runbooksPage)
		g.Expect(anchors).To(HaveKey(strings.ToLower(alert)), "%s: %s has no section #%s", alert, runbooksPage, strings.ToLower(alert))
	}
}

// alertCase is a Prometheus rule unit test: series loaded at one-minute steps (promqltest's load syntax),
// the rules evaluated every minute from 0 to at, and whether the alert fires then.
type alertCase struct {
	alert       string
	values      map[string]any // chart values, nil for the defaults
	series      string
	at          time.Duration
	fires       bool
	labels      map[string]string // labels the firing alert has
	annotations map[string]string // annotations the firing alert has
}

// job selects the series scraped through the install's metrics Service: the Prometheus Operator names the
// job after the Service.
const job = `job="` + liqojanitor.Name + `-metrics"`

// fenceJob selects the provider fence agent's series, scraped through its own metrics Service.
const fenceJob = `job="` + liqojanitor.Name + `-provider-fence-metrics"`

var alertCases = map[string]alertCase{
	"down: every replica's scrape fails": {alert: "LiqoJanitorDown", at: 10 * time.Minute, fires: true,
		series: `up{` + job + `, pod="a"} 0x15
up{` + job + `, pod="b"} 0x15`},
	"down: no replica is scraped at all": {alert: "LiqoJanitorDown", at: 10 * time.Minute, fires: true,
		series: `up{job="something-else"} 1x15`},
	"not down: one replica answers": {alert: "LiqoJanitorDown", at: 10 * time.Minute,
		series: `up{` + job + `, pod="a"} 0x15
up{` + job + `, pod="b"} 1x15`},
	"not down yet: for 5m": {alert: "LiqoJanitorDown", at: 4 * time.Minute,
		series: `up{` + job + `, pod="a"} 0x15`},

	// The gauge counts marked ForeignClusters whose provider answered after the mark and that were not
	// fenced yet; it is set on the leader only (the other replica exports 0).
	"a dead provider answers again": {alert: "LiqoJanitorProviderReturned", at: 5 * time.Minute, fires: true,
		labels:      map[string]string{"severity": "critical"},
		annotations: map[string]string{"runbook_url": runbooksURL + "#liqojanitorproviderreturned"},
		series: `liqo_janitor_returned_clusters{` + job + `, pod="a"} 1x10
liqo_janitor_returned_clusters{` + job + `, pod="b"} 0x10`},
	"a returned provider pages one minute after the gauge rises": {alert: "LiqoJanitorProviderReturned", at: 3 * time.Minute, fires: true,
		series: `liqo_janitor_returned_clusters{` + job + `, pod="a"} 0 0 1x10`},
	"not a minute yet": {alert: "LiqoJanitorProviderReturned", at: 2 * time.Minute,
		series: `liqo_janitor_returned_clusters{` + job + `, pod="a"} 0 0 1x10`},
	"two returned providers, one alert": {alert: "LiqoJanitorProviderReturned", at: 5 * time.Minute, fires: true,
		series: `liqo_janitor_returned_clusters{` + job + `, pod="a"} 2x10`},
	"no provider returned": {alert: "LiqoJanitorProviderReturned", at: 10 * time.Minute,
		series: `liqo_janitor_returned_clusters{` + job + `, pod="a"} 0x15
liqo_janitor_returned_clusters{` + job + `, pod="b"} 0x15`},
	"the returned provider was fenced": {alert: "LiqoJanitorProviderReturned", at: 10 * time.Minute,
		series: `liqo_janitor_returned_clusters{` + job + `, pod="a"} 1x4 0x10`},
	"another job's gauge": {alert: "LiqoJanitorProviderReturned", at: 10 * time.Minute,
		series: `liqo_janitor_returned_clusters{job="something-else"} 1x15`},

	"no leader: replicas up, none leads": {alert: "LiqoJanitorNoLeader", at: 10 * time.Minute, fires: true,
		series: `up{` + job + `, pod="a"} 1x15
leader_election_master_status{` + job + `, pod="a", name="liqo-janitor.liqo-janitor.io"} 0x15`},
	"no leader: replicas up, none has ever led": {alert: "LiqoJanitorNoLeader", at: 10 * time.Minute, fires: true,
		series: `up{` + job + `, pod="a"} 1x15`},
	"a leader": {alert: "LiqoJanitorNoLeader", at: 10 * time.Minute,
		series: `up{` + job + `, pod="a"} 1x15
up{` + job + `, pod="b"} 1x15
leader_election_master_status{` + job + `, pod="a", name="liqo-janitor.liqo-janitor.io"} 1x15
leader_election_master_status{` + job + `, pod="b", name="liqo-janitor.liqo-janitor.io"} 0x15`},

	"release failures for 15m": {alert: "LiqoJanitorReleaseFailures", at: 30 * time.Minute, fires: true,
		series: `liqo_janitor_objects_total{` + job + `, kind="Pod", result="failed"} 0+5x40`},
	"failures that stopped": {alert: "LiqoJanitorReleaseFailures", at: 35 * time.Minute,
		series: `liqo_janitor_objects_total{` + job + `, kind="Pod", result="failed"} 0+5x10 50x30`},
	"releases are no failures": {alert: "LiqoJanitorReleaseFailures", at: 30 * time.Minute,
		series: `liqo_janitor_objects_total{` + job + `, kind="Pod", result="released"} 0+100x40`},

	"blocked for an hour": {alert: "LiqoJanitorObjectsBlocked", at: 70 * time.Minute, fires: true,
		labels: map[string]string{"kind": "ResourceSlice", "severity": "warning"},
		series: `liqo_janitor_blocked_objects{` + job + `, kind="ResourceSlice", pod="a"} 2x80
liqo_janitor_blocked_objects{` + job + `, kind="ResourceSlice", pod="b"} 0x80`},
	"blocked for less than an hour": {alert: "LiqoJanitorObjectsBlocked", at: 50 * time.Minute,
		series: `liqo_janitor_blocked_objects{` + job + `, kind="ResourceSlice"} 2x80`},
	"blocked for 30m with blockedMinutes=20": {alert: "LiqoJanitorObjectsBlocked", at: 30 * time.Minute, fires: true,
		values: map[string]any{"prometheusRule": map[string]any{"blockedMinutes": 20}},
		series: `liqo_janitor_blocked_objects{` + job + `, kind="Pod"} 1x40`},

	"a clean-up waiting for Liqo for 15m": {alert: "LiqoJanitorCleanupStuck", at: 20 * time.Minute, fires: true,
		labels: map[string]string{"kind": "NamespaceOffloading"},
		series: `liqo_janitor_pending_objects{` + job + `, kind="NamespaceOffloading"} 2x30
liqo_janitor_blocked_objects{` + job + `, kind="NamespaceOffloading"} 0x30`},
	"what is left is all blocked (the blocked alert's job)": {alert: "LiqoJanitorCleanupStuck", at: 20 * time.Minute,
		series: `liqo_janitor_pending_objects{` + job + `, kind="Pod"} 2x30
liqo_janitor_blocked_objects{` + job + `, kind="Pod"} 2x30`},
	"pending that clears before 15m": {alert: "LiqoJanitorCleanupStuck", at: 20 * time.Minute,
		series: `liqo_janitor_pending_objects{` + job + `, kind="Pod"} 5x10 0x20
liqo_janitor_blocked_objects{` + job + `, kind="Pod"} 0x30`},

	"webhook errors": {alert: "LiqoJanitorWebhookErrors", at: 20 * time.Minute, fires: true,
		series: `controller_runtime_webhook_requests_total{` + job + `, code="500", webhook="/validate-liqo-io-v1beta1-foreigncluster"} 0+3x30`},
	"webhook answers, denials included, are 200": {alert: "LiqoJanitorWebhookErrors", at: 20 * time.Minute,
		series: `controller_runtime_webhook_requests_total{` + job + `, code="200", webhook="/validate-liqo-io-v1beta1-foreigncluster"} 0+30x30`},

	// A Prometheus shared by many clusters (an external label or a relabeling adds cluster to every
	// series): one cluster's outage fires for that cluster, the others' replicas do not hide it.
	"down: one of two clusters": {alert: "LiqoJanitorDown", at: 10 * time.Minute, fires: true,
		labels: map[string]string{"cluster": "a", "namespace": "liqo-janitor-system", "job": liqojanitor.Name + "-metrics"},
		series: `up{` + job + `, cluster="a", namespace="liqo-janitor-system", pod="a1"} 0x15
up{` + job + `, cluster="a", namespace="liqo-janitor-system", pod="a2"} 0x15
up{` + job + `, cluster="b", namespace="liqo-janitor-system", pod="b1"} 1x15
up{` + job + `, cluster="b", namespace="liqo-janitor-system", pod="b2"} 1x15`},
	"not down: both clusters answer": {alert: "LiqoJanitorDown", at: 10 * time.Minute,
		series: `up{` + job + `, cluster="a", pod="a1"} 0x15
up{` + job + `, cluster="a", pod="a2"} 1x15
up{` + job + `, cluster="b", pod="b1"} 1x15`},
	"down: one of two installs on one cluster": {alert: "LiqoJanitorDown", at: 10 * time.Minute, fires: true,
		labels: map[string]string{"namespace": "team-b"},
		series: `up{` + job + `, namespace="team-a"} 1x15
up{` + job + `, namespace="team-b"} 0x15`},
	"down: a cluster label of another name, configured": {alert: "LiqoJanitorDown", at: 10 * time.Minute, fires: true,
		values: map[string]any{"prometheusRule": map[string]any{"groupBy": []any{"k8s_cluster", "job"}}},
		labels: map[string]string{"k8s_cluster": "a"},
		series: `up{` + job + `, k8s_cluster="a"} 0x15
up{` + job + `, k8s_cluster="b"} 1x15`},
	"summed across clusters when groupBy leaves the cluster out": {alert: "LiqoJanitorDown", at: 10 * time.Minute,
		values: map[string]any{"prometheusRule": map[string]any{"groupBy": []any{"namespace", "job"}}},
		series: `up{` + job + `, cluster="a"} 0x15
up{` + job + `, cluster="b"} 1x15`},
	"no leader in one of two clusters": {alert: "LiqoJanitorNoLeader", at: 10 * time.Minute, fires: true,
		labels: map[string]string{"cluster": "a"},
		series: `up{` + job + `, cluster="a", pod="a1"} 1x15
leader_election_master_status{` + job + `, cluster="a", pod="a1", name="liqo-janitor.liqo-janitor.io"} 0x15
up{` + job + `, cluster="b", pod="b1"} 1x15
leader_election_master_status{` + job + `, cluster="b", pod="b1", name="liqo-janitor.liqo-janitor.io"} 1x15`},
	"no leader ever in one of two clusters": {alert: "LiqoJanitorNoLeader", at: 10 * time.Minute, fires: true,
		labels: map[string]string{"cluster": "a"},
		series: `up{` + job + `, cluster="a", pod="a1"} 1x15
up{` + job + `, cluster="b", pod="b1"} 1x15
leader_election_master_status{` + job + `, cluster="b", pod="b1", name="liqo-janitor.liqo-janitor.io"} 1x15`},
	"a returned provider seen by one of two consumers": {alert: "LiqoJanitorProviderReturned", at: 5 * time.Minute, fires: true,
		labels: map[string]string{"cluster": "b"},
		series: `liqo_janitor_returned_clusters{` + job + `, cluster="a", pod="a1"} 0x10
liqo_janitor_returned_clusters{` + job + `, cluster="b", pod="b1"} 1x10`},
	"blocked objects, per cluster and kind": {alert: "LiqoJanitorObjectsBlocked", at: 70 * time.Minute, fires: true,
		labels: map[string]string{"cluster": "a", "kind": "Pod"},
		series: `liqo_janitor_blocked_objects{` + job + `, cluster="a", kind="Pod"} 3x80
liqo_janitor_blocked_objects{` + job + `, cluster="b", kind="Pod"} 0x80`},

	"a dry run left on for an hour": {alert: "LiqoJanitorDryRun", at: 70 * time.Minute, fires: true,
		labels: map[string]string{"severity": "info"},
		series: `liqo_janitor_dry_run{` + job + `, pod="a"} 1x80`},
	"a brake left on for half an hour": {alert: "LiqoJanitorBraked", at: 35 * time.Minute, fires: true,
		labels: map[string]string{"severity": "warning"},
		series: `liqo_janitor_brake{` + job + `, pod="a"} 1x40`},
	"a brake set for minutes": {alert: "LiqoJanitorBraked", at: 35 * time.Minute,
		series: `liqo_janitor_brake{` + job + `, pod="a"} 0x25 1x15`},
	"a storm lasting ten minutes, seen by the leader": {alert: "LiqoJanitorStorm", at: 10 * time.Minute, fires: true,
		labels: map[string]string{"severity": "warning"},
		series: `liqo_janitor_storm{` + job + `, pod="a"} 0x2 1x10
liqo_janitor_storm{` + job + `, pod="b"} 0x12`},
	"a storm of two minutes": {alert: "LiqoJanitorStorm", at: 10 * time.Minute,
		series: `liqo_janitor_storm{` + job + `, pod="a"} 0x8 1x2 0x2`},
	"no dry run": {alert: "LiqoJanitorDryRun", at: 70 * time.Minute,
		series: `liqo_janitor_dry_run{` + job + `, pod="a"} 0x80`},

	// The renewer's gauges (janitor/fencerenew), set by the janitor's leader only, per provider: the ack's
	// age against half of the provider's fenceAfter.
	"renewals unacknowledged past half of fenceAfter": {alert: "LiqoJanitorProviderMayFenceUs", at: 3 * time.Minute, fires: true,
		labels:      map[string]string{"provider": "provider-a", "severity": "warning"},
		annotations: map[string]string{"runbook_url": runbooksURL + "#liqojanitorprovidermayfenceus"},
		series: `liqo_janitor_fence_last_ack_age_seconds{` + job + `, pod="a", provider="provider-a"} 5 5 70 130
liqo_janitor_fence_after_seconds{` + job + `, pod="a", provider="provider-a"} 120x3
liqo_janitor_fence_last_ack_age_seconds{` + job + `, pod="a", provider="provider-b"} 5x3
liqo_janitor_fence_after_seconds{` + job + `, pod="a", provider="provider-b"} 120x3`},
	"acknowledged within half of fenceAfter": {alert: "LiqoJanitorProviderMayFenceUs", at: 3 * time.Minute,
		series: `liqo_janitor_fence_last_ack_age_seconds{` + job + `, pod="a", provider="provider-a"} 5 5 55 59
liqo_janitor_fence_after_seconds{` + job + `, pod="a", provider="provider-a"} 120x3`},
	"a standby's stale age does not hide the leader's": {alert: "LiqoJanitorProviderMayFenceUs", at: 3 * time.Minute, fires: true,
		series: `liqo_janitor_fence_last_ack_age_seconds{` + job + `, pod="a", provider="provider-a"} 5x3
liqo_janitor_fence_last_ack_age_seconds{` + job + `, pod="b", provider="provider-a"} 5 30 70 90
liqo_janitor_fence_after_seconds{` + job + `, pod="b", provider="provider-a"} 120x3`},
	"another job's gauge is not the renewer's": {alert: "LiqoJanitorProviderMayFenceUs", at: 3 * time.Minute,
		series: `liqo_janitor_fence_last_ack_age_seconds{job="other", pod="a", provider="provider-a"} 90x3
liqo_janitor_fence_after_seconds{job="other", pod="a", provider="provider-a"} 120x3`},

	// The agent's gauge, set by its leader only (the standby has no series), per consumer, latched until
	// kubectl liqo-janitor unfence.
	"the provider fence fenced a consumer": {alert: "LiqoJanitorProviderFenced", values: withProviderFence, at: 3 * time.Minute, fires: true,
		labels:      map[string]string{"consumer": "consumer-a", "severity": "warning"},
		annotations: map[string]string{"runbook_url": runbooksURL + "#liqojanitorproviderfenced"},
		series: `liqo_janitor_provider_fenced{` + fenceJob + `, pod="a", consumer="consumer-a"} 0 0 1x10
liqo_janitor_provider_fenced{` + fenceJob + `, pod="a", consumer="consumer-b"} 0x12`},
	"a fence fires at once": {alert: "LiqoJanitorProviderFenced", values: providerOnly, at: 2 * time.Minute, fires: true,
		series: `liqo_janitor_provider_fenced{` + fenceJob + `, pod="a", consumer="consumer-a"} 0 0 1x10`},
	"armed, not fenced": {alert: "LiqoJanitorProviderFenced", values: withProviderFence, at: 10 * time.Minute,
		series: `liqo_janitor_provider_fenced{` + fenceJob + `, pod="a", consumer="consumer-a"} 0x12
liqo_janitor_provider_fence_armed{` + fenceJob + `, pod="a", consumer="consumer-a"} 1x12`},
	"the provider's admin unfenced": {alert: "LiqoJanitorProviderFenced", values: withProviderFence, at: 10 * time.Minute,
		series: `liqo_janitor_provider_fenced{` + fenceJob + `, pod="a", consumer="consumer-a"} 1x4 0x8`},
	"another job's gauge is not the agent's": {alert: "LiqoJanitorProviderFenced", values: withProviderFence, at: 10 * time.Minute,
		series: `liqo_janitor_provider_fenced{` + job + `, pod="a", consumer="consumer-a"} 1x12`},
	"a consumer fenced, seen by the leader only": {alert: "LiqoJanitorProviderFenced", values: withProviderFence, at: 5 * time.Minute, fires: true,
		labels: map[string]string{"consumer": "consumer-b"},
		series: `liqo_janitor_provider_fenced{` + fenceJob + `, pod="a", consumer="consumer-b"} 1x10
liqo_janitor_provider_fenced{` + fenceJob + `, pod="b", consumer="consumer-b"} 0x10`},
}

func TestAlerts(t *testing.T) {
	for name, tc := range alertCases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			rule := alertingRule(t, tc.values, tc.alert)
			firing := evaluate(t, rule, tc.series, tc.at)
			if !tc.fires {
				g.Expect(firing).To(BeEmpty(), "%s fires", tc.alert)
				return
			}
			g.Expect(firing).To(HaveLen(1), "%s fires once", tc.alert)
			for k, v := range tc.labels {
				g.Expect(firing[0].Labels.Get(k)).To(Equal(v), "label %s", k)
			}
			for k, v := range tc.annotations {
				g.Expect(firing[0].Annotations.Get(k)).To(Equal(v), "annotation %s", k)
			}
			if tc.alert == "LiqoJanitorProviderFenced" {
				// the consumer, and the provider's admin's next step once it is back
				consumer := firing[0].Labels.Get("consumer")
				g.Expect(firing[0].Annotations.Get("summary")).To(ContainSubstring(consumer))
				g.Expect(firing[0].Annotations.Get("description")).To(ContainSubstring(
					"kubectl liqo-janitor unfence " + consumer + " --confirm=" + consumer))
			}
			g.Expect(firing[0].Annotations.Get("summary")).NotTo(BeEmpty())
			g.Expect(firing[0].Annotations.Get("summary")).NotTo(ContainSubstring("MINUTES"), "placeholders filled in")
		})
	}
}

// alertingRule builds the chart's alert named name as Prometheus' rule manager does.
func alertingRule(t *testing.T, values map[string]any, name string) *rules.AlertingRule {
	t.Helper()
	for _, group := range ruleFile(t, values).Groups {
		for _, r := range group.Rules {
			if r.Alert != name {
				continue
			}
			expr, err := monitoring.Parser.ParseExpr(r.Expr)
			NewWithT(t).Expect(err).NotTo(HaveOccurred())
			return rules.NewAlertingRule(r.Alert, expr, time.Duration(r.For), time.Duration(r.KeepFiringFor),
				labels.FromMap(r.Labels), labels.FromMap(r.Annotations), labels.EmptyLabels(), "", true, nil)
		}
	}
	t.Fatalf("no alert %s", name)
	return nil
}

// evaluate loads series, evaluates rule every minute up to at, and returns the alerts firing then.
func evaluate(t *testing.T, rule *rules.AlertingRule, series string, at time.Duration) []*rules.Alert {
	t.Helper()
	storage := promqltest.LoadedStorage(t, "load 1m\n"+series)
	engine := promqltest.NewTestEngine(t, false, 5*time.Minute, promqltest.DefaultMaxSamplesPerQuery)
	query := rules.EngineQueryFunc(engine, storage)
	for ts := time.Duration(0); ts <= at; ts += time.Minute {
		_, err := rule.Eval(context.Background(), 0, time.Unix(0, 0).Add(ts), query, nil, 0)
		NewWithT(t).Expect(err).NotTo(HaveOccurred(), fmt.Sprintf("evaluating %s at %s", rule.Name(), ts))
	}
	var firing []*rules.Alert
	for _, a := range rule.ActiveAlerts() {
		if a.State == rules.StateFiring {
			firing = append(firing, a)
		}
	}
	return firing
}
