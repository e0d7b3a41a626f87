package main

import (
	"fmt"

	"github.com/spf13/cobra"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/mark"
)

func (e *env) canICommand() *cobra.Command {
	return &cobra.Command{
		Use:   "can-i [<cluster-id|foreigncluster>]",
		Short: "Say whether you hold the break-glass verb mark-unreachable (exit status 1 if not)",
		Example: `  # may I mark, unmark or resume any ForeignCluster?
  kubectl liqo-janitor can-i

  # this one (a ClusterRole may grant the verb on named ForeignClusters only)
  kubectl liqo-janitor can-i provider-a`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: e.completeClusters(nil),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.Client()
			if err != nil {
				return err
			}
			name := ""
			if len(args) == 1 {
				fc, err := cli.ForeignCluster(cmd.Context(), c, args[0])
				if err != nil {
					return err
				}
				name = fc.Name
			}
			ok, err := mark.MayMark(cmd.Context(), c, name)
			if err != nil {
				return err
			}
			if ok {
				fmt.Fprintln(e.Out, "yes")
				return nil
			}
			fmt.Fprintln(e.Out, "no")
			return fmt.Errorf("you may not set, remove or unpause the mark: a cluster admin can grant it with "+
				"kubectl create clusterrolebinding mark-unreachable-<you> --clusterrole=%s --user=<you>", liqojanitor.MarkRoleName)
		},
	}
}
