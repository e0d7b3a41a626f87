package volumes

import (
	"context"
	"fmt"
	"io"
	"time"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// ConfirmFlag is the flag that carries the operator's typed data-loss confirmation: the dead cluster's ID.
const ConfirmFlag = "confirm-data-loss"

// Options are what `release-volumes` is told: the ForeignCluster, and its flags.
type Options struct {
	// Factory gives the consumer's client and the streams.
	Factory *cli.Factory
	// ForeignCluster names the dead provider: its ForeignCluster's name or cluster ID.
	ForeignCluster string
	// ConfirmDataLoss is --confirm-data-loss: the ForeignCluster's spec.clusterID, or nothing is changed.
	ConfirmDataLoss string
	// JanitorNamespace is --janitor-namespace: where liqo-janitor keeps its records; empty, the namespace
	// of the gate's webhook Service (cli.FindJanitorNamespace).
	JanitorNamespace string
	// Output is -o: the plan and the result as documents rather than lines.
	Output *output.Flag
	// Timeout bounds each wait: for the pods using a volume on the dead cluster's nodes to be gone, and
	// for a deleted PVC to be gone before it is re-created.
	Timeout time.Duration
	// Poll is how often a wait looks again; 0 is half a second.
	Poll time.Duration
	// BeforeDelete, when set, is called for each volume once its checks passed, just before its delete: a
	// seam for tests, which re-create a PVC between the plan and the act there.
	BeforeDelete func(ctx context.Context, v liqojanitor.PinnedVolume)
}

// NewOptions are the Options of a release run with f.
func NewOptions(f *cli.Factory) *Options {
	return &Options{Factory: f}
}

// Validate refuses options no release can run with, before anything is read.
func (o *Options) Validate() error {
	if o.Timeout <= 0 {
		return fmt.Errorf("--timeout=%s: give a positive duration, e.g. --timeout=2m", o.Timeout)
	}
	return nil
}

// Run is `release-volumes`: the scope and its checks, the plan and the exact command; with the right
// --confirm-data-loss, the check that the release can be recorded, each volume released in turn, the
// release recorded on the ForeignCluster, the summary.
func (o *Options) Run(ctx context.Context) error {
	s, err := o.newScope(ctx)
	if err != nil {
		return err
	}
	plan := s.plan()
	if err := o.show(&Report{TypeMeta: output.TypeMeta(reportKind), Plan: plan}); err != nil {
		return err
	}
	if err := o.confirmed(s, plan); err != nil || len(plan.Volumes) == 0 || o.ConfirmDataLoss == "" {
		return err
	}
	user, err := o.preflight(ctx, s)
	if err != nil {
		return err
	}
	res := o.releaseAll(ctx, s)
	recordErr := o.record(ctx, s, res, user)
	if err := o.show(&Report{TypeMeta: output.TypeMeta(reportKind), Result: res}); err != nil {
		return err
	}
	if recordErr != nil {
		return recordErr
	}
	return res.err()
}

// confirmed says, without --confirm-data-loss, that nothing was changed and the command that acts; with
// a value that is not the cluster's ID, refuses with that command.
func (o *Options) confirmed(s *scope, plan *Plan) error {
	switch {
	case len(plan.Volumes) == 0:
		fmt.Fprintln(o.progress(), "\nNothing to release: no volume is pinned to "+output.Printable(s.clusterID)+".")
		return nil
	case o.ConfirmDataLoss == "":
		fmt.Fprintf(o.progress(), "\nNothing was changed. To release them, abandoning their data on %s, run:\n  %s\n",
			output.Printable(s.clusterID), plan.Command)
		return nil
	case o.ConfirmDataLoss != s.clusterID:
		return output.Lines{
			fmt.Sprintf("--%s=%s is not the cluster ID of ForeignCluster %s: nothing was changed", ConfirmFlag,
				output.Printable(o.ConfirmDataLoss), output.Printable(s.fc.Name)),
			"To release the volumes above, abandoning their data there, run:",
			"  " + plan.Command,
		}
	}
	return nil
}

// progress is where release-volumes writes what is not the document: stdout, or stderr with -o.
func (o *Options) progress() io.Writer {
	return o.Output.Progress(o.Factory.IOStreams)
}

// poll is how often a wait looks again.
func (o *Options) poll() time.Duration {
	if o.Poll > 0 {
		return o.Poll
	}
	return 500 * time.Millisecond
}
