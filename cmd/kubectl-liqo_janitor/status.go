package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/view"
)

// statusCommand is `status`: its flags, then view's reader printed once, as a document, or watched.
func (e *env) statusCommand() *cobra.Command {
	var watch bool
	var interval time.Duration
	var format *output.Flag
	var janitorNS string
	cmd := &cobra.Command{
		Use:   "status [<cluster-id|foreigncluster>]",
		Short: "Show marked ForeignClusters: stamps, the grace window, the plan or the clean-up's progress, the janitor's last events",
		Example: `  # every marked ForeignCluster
  kubectl liqo-janitor status

  # one, refreshed every 2s until interrupted
  kubectl liqo-janitor status provider-a --watch

  # for a script: the marked clusters whose provider answered again
  kubectl liqo-janitor status -o json | jq -r '.clusters[] | select(.returned) | .foreignCluster'`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: e.completeClusters(isMarked),
		RunE: func(cmd *cobra.Command, args []string) error {
			if watch && interval <= 0 {
				return fmt.Errorf("--interval=%s: give a positive duration, e.g. --interval=2s", interval)
			}
			if watch && format.Document() {
				return errors.New("--watch prints tables: leave out -o, or --watch to print one document")
			}
			c, err := e.Client()
			if err != nil {
				return err
			}
			ns, err := cli.FindJanitorNamespace(cmd.Context(), c, janitorNS)
			if err != nil {
				return err
			}
			read := view.StatusReader{Client: c, Janitor: ns, Args: args}
			switch {
			case format.Document():
				r, err := read.Read(cmd.Context(), time.Now())
				if err != nil {
					return err
				}
				return format.Print(e.Out, r)
			case watch:
				return read.Watch(cmd.Context(), e.Out, interval)
			}
			return read.Print(cmd.Context(), e.Out)
		},
	}
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "refresh until interrupted (in place on a terminal, plain lines otherwise)")
	cmd.Flags().DurationVar(&interval, "interval", 2*time.Second, "how often --watch refreshes")
	format = output.AddFlag(cmd)
	cli.AddJanitorNamespaceFlag(cmd, &janitorNS)
	return cmd
}
