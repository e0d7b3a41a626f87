package main

import (
	"github.com/spf13/cobra"

	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/install"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// versionCommand is `version`: the plugin's version and, unless --client, liqo-janitor's installs on the
// cluster (package install).
func (e *env) versionCommand() *cobra.Command {
	var clientOnly bool
	var format *output.Flag
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version and that of liqo-janitor on the cluster",
		Example: `  kubectl liqo-janitor version

  # without asking the cluster
  kubectl liqo-janitor version --client`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r := install.NewReport(version)
			if !clientOnly {
				r.Servers, r.ServerUnknown = install.Servers(cmd.Context(), e.Factory)
			}
			if format.Document() {
				return format.Print(e.Out, r.Escaped())
			}
			install.Print(e.Out, r.Escaped(), clientOnly)
			return nil
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "print the plugin's version only, without asking the cluster")
	format = output.AddFlag(cmd)
	return cmd
}
