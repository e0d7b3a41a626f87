package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/mark"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/view"
)

// planCommand is `plan`: what view shows of the ForeignCluster, with the gate's answer to a dry run of
// the mark.
func (e *env) planCommand() *cobra.Command {
	var format *output.Flag
	var janitorNS string
	cmd := &cobra.Command{
		Use:   "plan <cluster-id|foreigncluster>",
		Short: "Show what marking the provider dead would release, and whether the gate would accept the mark now",
		Long: `plan writes nothing. It runs the janitor's own selection for the ForeignCluster as if its grace period
had ended, and asks the gate, with a server-side dry run, whether it would accept the mark now. For a marked
ForeignCluster it shows the grace window the janitor recorded.`,
		Example: `  # by cluster ID or by ForeignCluster name
  kubectl liqo-janitor plan 0f8a2d7c-provider
  kubectl liqo-janitor plan provider-a

  # the same, for a script
  kubectl liqo-janitor plan provider-a -o json | jq '.plan.kinds'`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: e.completeClusters(nil),
		RunE: func(cmd *cobra.Command, args []string) error {
			report, err := e.planReport(cmd.Context(), args[0], janitorNS)
			if err != nil {
				return err
			}
			return view.PrintPlanReport(e.Out, format, report)
		},
	}
	format = output.AddFlag(cmd)
	cli.AddJanitorNamespaceFlag(cmd, &janitorNS)
	return cmd
}

// planReport is view's report of the ForeignCluster arg names, with the gate's answer.
func (e *env) planReport(ctx context.Context, arg, janitorNS string) (*view.PlanReport, error) {
	c, fc, err := e.Resolve(ctx, arg)
	if err != nil {
		return nil, err
	}
	ns, err := cli.FindJanitorNamespace(ctx, c, janitorNS)
	if err != nil {
		return nil, err
	}
	mc, err := e.MetadataClient()
	if err != nil {
		return nil, err
	}
	r, err := view.PlanReportOf(ctx, c, mc, fc, ns)
	if err != nil {
		return nil, err
	}
	r.Gate, err = mark.CheckGate(ctx, c, fc)
	return r, err
}
