package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// displayName is how the operator runs the plugin, through kubectl.
const displayName = "kubectl liqo-janitor"

// namespaceIgnored is why the plugin has no -n: kubectl's kubeconfig flags bring one, and a flag shown but
// ignored would let `-n other` look as if it scoped anything.
const namespaceIgnored = "-n/--namespace does not apply: the plugin acts on ForeignClusters, which are cluster-scoped, " +
	"and finds the namespaces it reads itself (the janitor's events in default, the janitor's Deployment by its " +
	"app.kubernetes.io/name label, the janitor's brake and records by --janitor-namespace or the gate's webhook configuration, " +
	"Liqo's cluster-ID ConfigMaps by --liqo-namespace and --provider-liqo-namespace on fence)"

func newRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	flags.Namespace = nil // not registered: see namespaceIgnored
	e := &env{cli.NewFactory(streams, flags)}
	var namespace string
	root := &cobra.Command{
		Use:         "kubectl-liqo_janitor",
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: displayName},
		Short:       "Plan, mark and follow the clean-up of a Liqo provider that is gone for good",
		Long: `kubectl liqo-janitor shows what declaring a Liqo provider dead would release, marks it through
liqo-janitor's gate with the typed confirmation, and follows the clean-up.

  kubectl liqo-janitor plan <cluster-id>        what a mark would release, and whether the gate would take it
  kubectl liqo-janitor mark <cluster-id> --reason "…"
  kubectl liqo-janitor status [<cluster-id>] [--watch]
  kubectl liqo-janitor fence <cluster-id> --provider-kubeconfig <file>   stop, on a marked provider that answers
                                                 again, what this consumer left running there
  kubectl liqo-janitor release-volumes <cluster-id> [--confirm-data-loss=<cluster-id>]   release the volumes
                                                 pinned to a dead provider, abandoning their data there

On a provider, with its admin's kubeconfig (the provider fence, docs/provider-fence.md):

  kubectl liqo-janitor fence-credential <consumer-id> [--revoke]   the consumer's credential for its fence Lease
  kubectl liqo-janitor unfence <consumer-id> --confirm=<consumer-id>   clear a latched fence`,
		Example: `  # what declaring the provider with cluster ID 0f8a… dead would release
  kubectl liqo-janitor plan 0f8a2d7c-provider

  # complete ForeignCluster names and cluster IDs with <TAB> (see kubectl_complete-liqo_janitor)
  kubectl liqo-janitor status <TAB>`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if namespace != "" {
				return errors.New(namespaceIgnored)
			}
			return nil
		},
	}
	flags.AddFlags(root.PersistentFlags())
	root.PersistentFlags().StringVarP(&namespace, "namespace", "n", "", "not used: "+namespaceIgnored)
	_ = root.PersistentFlags().MarkHidden("namespace")
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.AddCommand(e.planCommand(), e.markCommand(), e.statusCommand(), e.pauseCommand(), e.resumeCommand(),
		e.unmarkCommand(), e.canICommand(), e.fenceCommand(), e.releaseVolumesCommand(), e.fenceCredentialCommand(), e.unfenceCommand(),
		e.versionCommand())
	for _, cmd := range root.Commands() {
		cmd.RunE = commandErrors(cmd.RunE)
	}
	return root
}

// commandError is an error a command returned from its RunE: anything else run gets from cobra is a usage
// error (an unknown command or flag, a missing argument), which it prints with the usage line.
type commandError struct{ err error }

func (c commandError) Error() string { return c.err.Error() }
func (c commandError) Unwrap() error { return c.err }

func commandErrors(runE func(*cobra.Command, []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := runE(cmd, args); err != nil {
			return commandError{err}
		}
		return nil
	}
}

// run executes the command line and prints its error once, escaped (output.PrintError): a command's own, the
// API server's (the gate's refusals already say what to do next), and cobra's usage errors alike, these
// with the command's usage line and where its help is.
func run(ctx context.Context, root *cobra.Command) error {
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return nil
	}
	var ran commandError
	if errors.As(err, &ran) {
		output.PrintError(root.ErrOrStderr(), ran.err)
		return err
	}
	output.PrintError(root.ErrOrStderr(), usageError(cmd, err))
	return err
}

// usageError is cobra's error err about cmd's command line, with the usage line (of a command that runs)
// and where the help is. Cobra's suggestions come on lines of their own ("Did you mean this?").
func usageError(cmd *cobra.Command, err error) output.Lines {
	var l output.Lines
	for line := range strings.SplitSeq(strings.TrimSpace(err.Error()), "\n") {
		if line = strings.ReplaceAll(line, "\t", "  "); line != "" {
			l = append(l, line)
		}
	}
	if cmd.Runnable() {
		l = append(l, "Usage: "+cmd.UseLine())
	}
	return append(l, fmt.Sprintf("Run '%s --help' for more information.", cmd.CommandPath()))
}
