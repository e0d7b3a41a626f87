package main

import (
	"time"

	"github.com/spf13/cobra"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/volumes"
)

// releaseVolumesCommand is `release-volumes`: its flags into volumes.Options, then Validate and Run
// (package volumes).
func (e *env) releaseVolumesCommand() *cobra.Command {
	o := volumes.NewOptions(e.Factory)
	cmd := &cobra.Command{
		Use:   "release-volumes <cluster-id|foreigncluster> [--" + volumes.ConfirmFlag + "=<cluster-id>]",
		Short: "Release the volumes pinned to a dead provider, abandoning their data there",
		Long: `release-volumes lists the PVCs of Liqo's virtual storage class pinned to a provider declared dead (bound
to a placeholder PV whose node affinity names it: their pods are Pending for ever), what releasing each
does, and the exact command; it changes nothing unless --` + volumes.ConfirmFlag + ` is the ForeignCluster's
cluster ID. Their data lives only on that provider (a PVC of the same name in the remote namespace):
releasing a PVC abandons it.

It first checks that the release can be recorded: you hold the break-glass verb mark-unreachable, and the
API server takes the record (a server-side dry run). Then, volume by volume, it re-reads that the provider is still dead (marked, confirmed, no unfenced return
recorded), refuses a volume a pod bound to another node uses, waits (--timeout) for the pods using it on
the provider's virtual nodes to be gone (the janitor deletes them; a pod that does not go is named and the
volume skipped, never forced), deletes the PVC with a precondition on its UID (one re-created since the plan
is left alone), and re-creates a PVC no StatefulSet generates as liqoctl move volume does (same name, labels
and spec, unbound); a StatefulSet's controller creates its own. It removes no finalizer and deletes no PV.
Last it records the released volumes on the ForeignCluster (` + liqojanitor.VolumesReleasedAnnotation + `).`,
		Example: `  # what would be released, and the exact command: nothing is changed
  kubectl liqo-janitor release-volumes provider-a

  # release them, abandoning their data on the dead provider
  kubectl liqo-janitor release-volumes provider-a --confirm-data-loss=0f8a2d7c-provider`,
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
	f.StringVar(&o.ConfirmDataLoss, volumes.ConfirmFlag, "",
		"the ForeignCluster's cluster ID: release the volumes, abandoning their data on the dead provider (without it, only the plan)")
	f.DurationVar(&o.Timeout, "timeout", 2*time.Minute,
		"how long to wait, for each volume, for its pods on the dead provider's virtual nodes and for its old PVC to be gone")
	o.Output = output.AddFlag(cmd)
	cli.AddJanitorNamespaceFlag(cmd, &o.JanitorNamespace)
	return cmd
}
