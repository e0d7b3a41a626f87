package main

import (
	"time"

	"github.com/spf13/cobra"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/fence"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// fenceCommand is `fence`: its flags into fence.Options, then Validate and Run (package fence).
func (e *env) fenceCommand() *cobra.Command {
	o := fence.NewOptions(e.Factory)
	cmd := &cobra.Command{
		Use:   "fence <cluster-id|foreigncluster> [--provider-kubeconfig <file>]",
		Short: "Stop, on a marked provider that answers again, the workloads this consumer left running there",
		Long: `fence connects to a provider this consumer marked permanently unreachable and that answers again, where
the consumer's offloaded pods still run while the consumer already force-deleted its own copies. It acts only
on the marked provider itself: it reads Liqo's cluster ID on the provider (its cluster-ID ConfigMap in
--provider-liqo-namespace) and refuses, deleting and recording nothing, unless it is the ForeignCluster's
spec.clusterID; and before it reads anything there, in every mode, the server must be the provider's API
server liqo-janitor kept for the mark (its records in liqo-janitor's namespace: the same https host and
port) and its certificate must verify against the CA kept with it. It shows the plan, asks you to type that provider's cluster ID, deletes this consumer's
ShadowPods there (the garbage collector then deletes their pods) and waits until they are gone; with --all,
then the copies of this consumer's ResourceSlices, NamespaceMaps and Renews in its tenant namespace there
(Liqo then deletes the remote namespaces). It removes no finalizer. Done, it records what it stopped on the
ForeignCluster (` + liqojanitor.FencedAnnotation + `), or "` + fence.VerifiedClean + `" when nothing of this consumer was left
there. Without --provider-kubeconfig it tries this consumer's control-plane identity for the provider: the
Secret its ControlPlane Identity in the provider's tenant namespace names (never a Secret found by its
labels), with its inline credentials only: it never runs a credential plugin from a kubeconfig found in the
cluster.`,
		Example: `  # what fence would stop, written nowhere
  kubectl liqo-janitor fence provider-a --provider-kubeconfig provider.kubeconfig --dry-run

  # stop this consumer's pods there, then its replicated copies in its tenant namespace there
  kubectl liqo-janitor fence 0f8a2d7c-provider --provider-kubeconfig provider.kubeconfig --all

  # Liqo runs in namespace liqo-system on the provider (in liqo on this consumer)
  kubectl liqo-janitor fence provider-a --provider-kubeconfig provider.kubeconfig --provider-liqo-namespace liqo-system`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: e.completeClusters(isMarked),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ForeignCluster = args[0]
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.ProviderKubeconfig, "provider-kubeconfig", "",
		"a kubeconfig of an admin of the provider (default: try this consumer's control-plane identity for it)")
	f.BoolVar(&o.All, "all", false, "also delete this consumer's replicated copies in its tenant namespace on the provider")
	f.BoolVar(&o.DryRun, "dry-run", false, "print the plan and write nothing")
	f.BoolVar(&o.Yes, "yes", false, "skip typing the provider's cluster ID (for automation); fence still acts only on a provider whose "+
		"Liqo cluster ID it read there and that matches")
	o.Output = output.AddFlag(cmd)
	f.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "how long to wait for what fence deleted to be gone")
	f.StringVar(&o.LiqoNamespace, "liqo-namespace", liqojanitor.DefaultLiqoNamespace, "the namespace of Liqo's cluster-ID ConfigMap on this cluster (the consumer)")
	f.StringVar(&o.ProviderLiqoNamespace, "provider-liqo-namespace", liqojanitor.DefaultLiqoNamespace,
		"the namespace of Liqo's cluster-ID ConfigMap on the provider")
	cli.AddJanitorNamespaceFlag(cmd, &o.JanitorNamespace)
	return cmd
}
