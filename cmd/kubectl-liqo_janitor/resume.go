package main

import (
	"github.com/spf13/cobra"
)

func (e *env) resumeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "resume <cluster-id|foreigncluster>",
		Short: "Let the janitor go on (on a marked cluster this is break-glass: it needs verb mark-unreachable)",
		Example: `  # let the janitor go on with a paused cluster
  kubectl liqo-janitor resume provider-a`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: e.completeClusters(isPaused),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.setPaused(cmd, args[0], false)
		},
	}
}
