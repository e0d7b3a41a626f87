package main

import (
	"fmt"

	"github.com/spf13/cobra"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/webhook"
)

// pauseCommand is `pause` (pause=true) or `resume`.
func (e *env) pauseCommand(pause bool) *cobra.Command {
	use, short := "resume", "Let the janitor go on (on a marked cluster this is break-glass: it needs verb mark-unreachable)"
	if pause {
		use, short = "pause", "Stop the janitor on this cluster (anyone with update on ForeignClusters may)"
	}
	return &cobra.Command{
		Use: use + " <cluster-id|foreigncluster>", Short: short, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, fc, err := e.resolve(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			patch := annotationsPatch(nil, []string{liqojanitor.PausedAnnotation})
			if pause {
				patch = annotationsPatch(map[string]string{liqojanitor.PausedAnnotation: "true"}, nil)
			}
			if err := c.Patch(cmd.Context(), fc, patch); err != nil {
				return err
			}
			e.printWarnings()
			name := printable(fc.Name)
			if pause {
				fmt.Fprintf(e.Out, "ForeignCluster %s is paused: the janitor writes nothing for it until kubectl liqo-janitor resume %s\n", name, name)
			} else {
				fmt.Fprintf(e.Out, "ForeignCluster %s is no longer paused.\n", name)
			}
			return nil
		},
	}
}

func (e *env) unmarkCommand() *cobra.Command {
	return &cobra.Command{
		Use: "unmark <cluster-id|foreigncluster>", Short: "Remove the mark (what was already released is not restored)",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, fc, err := e.resolve(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if !liqojanitor.IsMarked(fc.Annotations) {
				return fmt.Errorf("ForeignCluster %s is not marked: nothing to remove", fc.Name)
			}
			if err := c.Patch(cmd.Context(), fc, annotationsPatch(nil, []string{liqojanitor.MarkAnnotation})); err != nil {
				return err
			}
			e.printWarnings() // the gate's: what was released is not restored
			fmt.Fprintf(e.Out, "The mark is removed from ForeignCluster %s; the gate dropped its stamps and confirmation.\n", printable(fc.Name))
			return nil
		},
	}
}

func (e *env) canICommand() *cobra.Command {
	return &cobra.Command{
		Use:   "can-i [<cluster-id|foreigncluster>]",
		Short: "Say whether you hold the break-glass verb mark-unreachable (exit status 1 if not)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client()
			if err != nil {
				return err
			}
			name := ""
			if len(args) == 1 {
				fc, err := foreignCluster(cmd.Context(), c, args[0])
				if err != nil {
					return err
				}
				name = fc.Name
			}
			ok, err := mayMark(cmd.Context(), c, name)
			if err != nil {
				return err
			}
			if ok {
				fmt.Fprintln(e.Out, "yes")
				return nil
			}
			fmt.Fprintln(e.Out, "no")
			return fmt.Errorf("you may not set, remove or unpause the mark: a cluster admin can grant it with "+
				"kubectl create clusterrolebinding mark-unreachable-<you> --clusterrole=%s --user=<you>", webhook.MarkRoleName)
		},
	}
}

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use: "version", Short: "Print the plugin's version", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "kubectl-liqo_janitor %s\n", version)
			return err
		},
	}
}
