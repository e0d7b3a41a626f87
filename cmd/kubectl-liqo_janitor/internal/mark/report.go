package mark

import (
	"context"
	"fmt"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/view"
)

// showPlan prints what the mark would release, the evidence it rests on, and the provider's fence: the
// deadline before which the gate refuses the mark (gate rule 31), or that there is none.
func (o *Options) showPlan(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster, ns cli.JanitorNamespace, ev *view.Evidence) error {
	out := o.Factory.Out
	mc, err := o.Factory.MetadataClient()
	if err != nil {
		return err
	}
	plan, err := view.PlanOf(ctx, c, mc, fc, ns)
	if err != nil {
		return err
	}
	view.PrintPlan(out, plan, nil)
	fmt.Fprintln(out, "\nEvidence for this cluster (what \"unreachable\" rests on):")
	view.PrintEvidence(out, "  ", ev, "", time.Now())
	fmt.Fprintln(out)
	view.PrintProviderFence(out, "", view.ProviderFenceOf(view.ReadJanitor(ctx, c, ns, liqojanitor.FenceRenewalsConfigMap), fc), false, time.Now())
	return nil
}

// reportDryRun reports a --dry-run=server mark.
func (o *Options) reportDryRun(r *request, ack stormAck) {
	out := o.Factory.Out
	o.Factory.PrintWarnings()
	if ack.count != "" {
		fmt.Fprintf(out, "\nThe dry run carried %s=%s, the count mark asks you to type.\n", liqojanitor.AcknowledgeUnreachableAnnotation, ack.count)
	}
	if r.stampsMissing() != "" {
		fmt.Fprintln(out, "\nDry run: the API server accepts this mark without the gate; nothing was stored.")
		return
	}
	fmt.Fprintf(out, "\nDry run: the gate accepts this mark (it would stamp %s); nothing was stored.\n", output.Printable(r.stamps()))
}

// reportMarked reports a stored mark: a success only when the stored ForeignCluster carries the gate's
// stamps (or --without-gate).
func (o *Options) reportMarked(fc *liqov1beta1.ForeignCluster, r *request) error {
	out := o.Factory.Out
	name := output.Printable(fc.Name)
	missing := r.stampsMissing()
	switch {
	case missing != "" && !o.WithoutGate:
		return storedUnstamped(fc, missing)
	case missing != "":
		fmt.Fprintf(out, "\nForeignCluster %s is marked permanently unreachable WITHOUT the gate (%s).\n", name, output.Printable(missing))
	default:
		fmt.Fprintf(out, "\nForeignCluster %s is marked permanently unreachable (stamped by the gate: %s).\n", name, output.Printable(r.stamps()))
	}
	fmt.Fprintf(out, "The janitor waits out its grace period, showing its plan on the ForeignCluster; undo within it with:\n"+
		"  kubectl liqo-janitor unmark %s\nFollow it with: kubectl liqo-janitor status %s --watch\n", name, name)
	return nil
}
