package main

import (
	"github.com/spf13/cobra"

	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/mark"
)

// markCommand is `mark`: its flags into mark.Options, then Validate and Run (package mark).
func (e *env) markCommand() *cobra.Command {
	o := mark.NewOptions(e.Factory)
	cmd := &cobra.Command{
		Use:   "mark <cluster-id|foreigncluster> --reason \"…\"",
		Short: "Declare the provider permanently unreachable: shows the plan, then asks you to type the cluster ID",
		Long: `mark shows the plan, sends the mark to the gate as a server-side dry run, asks you to type the cluster ID,
and then sends it for real. It refuses when the gate does not answer (its marked-by and marked-at stamps are
missing from the dry run), unless --without-gate; and it reports success only once the stored ForeignCluster
carries the gate's stamps.`,
		Example: `  # shows the plan, then asks you to type the cluster ID
  kubectl liqo-janitor mark 0f8a2d7c-provider --reason "data centre flooded, provider decommissioned"

  # check with the gate first: nothing is stored
  kubectl liqo-janitor mark provider-a --reason "decommissioned" --dry-run=server

  # for automation: no typing (a ForeignCluster without reachability evidence also needs
  # --no-reachability-evidence=<cluster-id>; a mark during a storm --acknowledge-unreachable=<count>)
  kubectl liqo-janitor mark provider-a --reason "decommissioned" --yes`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: e.completeClusters(isUnmarked),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ForeignCluster = args[0]
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Reason, "reason", "", "why the provider is gone for good (quoted in the clean-up's events)")
	f.BoolVar(&o.Yes, "yes", false, "skip typing the cluster ID (for automation)")
	f.StringVar(&o.DryRun, "dry-run", mark.DryRunNone, `"server" sends the mark through the gate without storing it`)
	_ = cmd.RegisterFlagCompletionFunc("dry-run", cobra.FixedCompletions([]string{mark.DryRunNone, mark.DryRunServer}, cobra.ShellCompDirectiveNoFileComp))
	f.StringVar(&o.NoEvidence, "no-reachability-evidence", "",
		"the cluster ID again, for a ForeignCluster Liqo keeps no reachability evidence for (instead of typing it)")
	f.BoolVar(&o.WithoutGate, "without-gate", false,
		"mark even though the gate does not answer: Liqo >= v1.1 then acts on the bare mark at once")
	f.IntVar(&o.Acknowledge, "acknowledge-unreachable", 0,
		"during a storm (many providers unreachable at once), the number of them, instead of typing it")
	cli.AddJanitorNamespaceFlag(cmd, &o.JanitorNamespace)
	return cmd
}
