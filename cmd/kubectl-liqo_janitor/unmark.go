package main

import (
	"fmt"

	"github.com/spf13/cobra"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

func (e *env) unmarkCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "unmark <cluster-id|foreigncluster>",
		Short: "Remove the mark (what was already released is not restored)",
		Example: `  # undo a mark within the grace period
  kubectl liqo-janitor unmark provider-a`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: e.completeClusters(isMarked),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, fc, err := e.Resolve(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if !liqojanitor.IsMarked(fc.Annotations) {
				return fmt.Errorf("ForeignCluster %s is not marked: nothing to remove", fc.Name)
			}
			if err := c.Patch(cmd.Context(), fc, cli.AnnotationsPatch(nil, []string{liqojanitor.MarkAnnotation})); err != nil {
				return err
			}
			e.PrintWarnings() // the gate's: what was released is not restored
			fmt.Fprintf(e.Out, "The mark is removed from ForeignCluster %s; the gate dropped its stamps and confirmation.\n", output.Printable(fc.Name))
			return nil
		},
	}
}
