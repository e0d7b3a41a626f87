package fence

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// reportKind is the kind of fence's -o documents.
const reportKind = "FenceReport"

// Report is `fence -o json|yaml`, kind FenceReport (apiVersion output.APIVersion): the plan first, and
// after the confirmation a second document, the result.
type Report struct {
	metav1.TypeMeta `json:",inline"`
	Plan            *Plan   `json:"plan,omitempty"`
	Result          *Result `json:"result,omitempty"`
}

// DeepCopyObject makes Report a runtime.Object, for cli-runtime's printers.
func (r *Report) DeepCopyObject() runtime.Object { return output.DeepCopyJSON(r) }

// Result is what fence did, and what is left.
type Result struct {
	Steps []*Step `json:"steps"`
	// Counts is what the fence stopped, as recorded: "shadowpods 12, pods 12".
	Counts string `json:"counts"`
	// Record is the value of the fenced annotation written on the ForeignCluster.
	Record string `json:"record,omitempty"`
	// Left is what was still on the provider when --timeout expired, and why.
	Left []string `json:"left,omitempty"`
}

// show prints r: the document -o asks for, or the plan's tables and the result's last lines.
func (o *Options) show(r *Report) error {
	out := o.Factory.Out
	if o.Output.Document() {
		return o.Output.Print(out, r)
	}
	if r.Plan != nil {
		printPlan(out, r.Plan)
	}
	if r.Result != nil && r.Result.Record != "" && strings.HasPrefix(r.Result.Counts, VerifiedClean) {
		fmt.Fprintf(out, "\nVerified clean: nothing of this consumer is on the provider.\nRecorded on the ForeignCluster: %s=%s\n",
			liqojanitor.FencedAnnotation, output.Printable(r.Result.Record))
	} else if r.Result != nil && r.Result.Record != "" {
		fmt.Fprintf(out, "\nFenced: nothing this consumer left is running on the provider any more (%s).\n"+
			"Recorded on the ForeignCluster: %s=%s\n", r.Result.Counts, liqojanitor.FencedAnnotation, output.Printable(r.Result.Record))
	}
	return nil
}

// escaped is p with the text that comes from the clusters passed through output.Printable.
func (p *Plan) escaped() *Plan {
	out := *p
	out.ForeignCluster, out.ProviderClusterID, out.LocalClusterID = output.Printable(p.ForeignCluster), output.Printable(p.ProviderClusterID), output.Printable(p.LocalClusterID)
	out.ProviderLiqoClusterID, out.Via, out.Provider = output.Printable(p.ProviderLiqoClusterID), output.Printable(p.Via), output.Printable(p.Provider)
	out.ProviderLiqoClusterIDFrom = output.Printable(p.ProviderLiqoClusterIDFrom)
	return &out
}

// printPlan prints the plan: counts per kind and namespace.
func printPlan(out io.Writer, p *Plan) {
	fmt.Fprintf(out, "Fence: ForeignCluster %s (cluster ID %s) answers again at %s (%s).\n",
		output.Printable(p.ForeignCluster), output.Printable(p.ProviderClusterID), output.Printable(p.Provider), output.Printable(p.Via))
	if k := p.Kept; k != nil {
		fmt.Fprintf(out, "Verified: its certificate verifies against the CA liqo-janitor kept for this mark with %s (kept at %s from %s, ConfigMap %s).\n",
			k.APIServer, k.KeptAt.UTC().Format(time.RFC3339), k.From, k.ConfigMap)
		for _, lookAlike := range k.Ignored {
			fmt.Fprintln(out, cli.IgnoredLine(lookAlike, strings.SplitN(k.ConfigMap, "/", 2)[0]))
		}
	}
	fmt.Fprintf(out, "Its Liqo cluster ID there: %s (%s there). This consumer: cluster ID %s.\n\n",
		output.Printable(p.ProviderLiqoClusterID), output.Printable(p.ProviderLiqoClusterIDFrom), output.Printable(p.LocalClusterID))
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAMESPACE\tSHADOWPODS\tPODS (deleted by the garbage collector)")
	for _, ns := range p.Namespaces {
		fmt.Fprintf(w, "%s\t%d\t%d\n", ns.Namespace, ns.ShadowPods, ns.Pods)
	}
	if len(p.Namespaces) == 0 {
		fmt.Fprintln(w, "(no ShadowPod of this consumer)\t\t")
	}
	_ = w.Flush()
	if !p.All {
		fmt.Fprintln(out, "\nWith --all, also this consumer's replicated copies in its tenant namespace there.")
	} else {
		printTenants(out, p.TenantNamespaces)
	}
	if p.empty() {
		fmt.Fprintf(out, "\nNothing of this consumer is left on the provider: fence deletes nothing there and records it %s.\n", VerifiedClean)
	}
}

func printTenants(out io.Writer, ts []PlannedTenant) {
	if len(ts) == 0 {
		fmt.Fprintln(out, "\n--all: no tenant namespace of this consumer on the provider.")
		return
	}
	for _, t := range ts {
		fmt.Fprintf(out, "\n--all, tenant namespace %s (kept), in Liqo's order:\n", t.Namespace)
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "KIND\tCOUNT")
		fmt.Fprintf(w, "ResourceSlice\t%d\n", t.ResourceSlices)
		fmt.Fprintf(w, "NamespaceMap\t%d\n", t.NamespaceMaps)
		fmt.Fprintf(w, "Renew\t%d\n", t.Renews)
		_ = w.Flush()
		if len(t.RemoteNamespaces) > 0 {
			fmt.Fprintf(out, "Liqo's namespacemap controller then deletes the NamespaceMap's remote namespaces: %s\n",
				strings.Join(t.RemoteNamespaces, ", "))
		}
	}
}
