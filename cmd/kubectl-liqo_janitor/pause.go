package main

import (
	"fmt"

	"github.com/spf13/cobra"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

func (e *env) pauseCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "pause <cluster-id|foreigncluster>",
		Short: "Stop the janitor on this cluster (anyone with update on ForeignClusters may)",
		Example: `  # hold the clean-up of a marked cluster while you look into it
  kubectl liqo-janitor pause provider-a`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: e.completeClusters(nil),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.setPaused(cmd, args[0], true)
		},
	}
}

// setPaused sets (pause) or removes the paused annotation on the ForeignCluster arg names.
func (e *env) setPaused(cmd *cobra.Command, arg string, pause bool) error {
	c, fc, err := e.Resolve(cmd.Context(), arg)
	if err != nil {
		return err
	}
	patch := cli.AnnotationsPatch(nil, []string{liqojanitor.PausedAnnotation})
	if pause {
		patch = cli.AnnotationsPatch(map[string]string{liqojanitor.PausedAnnotation: "true"}, nil)
	}
	if err := c.Patch(cmd.Context(), fc, patch); err != nil {
		return err
	}
	e.PrintWarnings()
	name := output.Printable(fc.Name)
	if pause {
		fmt.Fprintf(e.Out, "ForeignCluster %s is paused: the janitor writes nothing for it until kubectl liqo-janitor resume %s\n", name, name)
	} else {
		fmt.Fprintf(e.Out, "ForeignCluster %s is no longer paused.\n", name)
	}
	return nil
}
