package fence

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// Options are what `fence` is told: the ForeignCluster, and its flags.
type Options struct {
	// Factory gives the consumer's client, the streams and the operator's typed confirmation.
	Factory *cli.Factory
	// ForeignCluster names the marked provider: its ForeignCluster's name or cluster ID.
	ForeignCluster string
	// ProviderKubeconfig is a kubeconfig of an admin of the provider; empty, fence tries this consumer's
	// control-plane identity for it, with inline credentials only.
	ProviderKubeconfig string
	// JanitorNamespace is --janitor-namespace: where liqo-janitor keeps its records; empty, the namespace
	// of the gate's webhook Service (cli.FindJanitorNamespace).
	JanitorNamespace string
	// LiqoNamespace and ProviderLiqoNamespace hold Liqo's cluster-ID ConfigMap on the consumer and on
	// the provider.
	LiqoNamespace, ProviderLiqoNamespace string
	// Output is -o: the plan and the result as documents rather than tables.
	Output *output.Flag
	// All also deletes this consumer's replicated copies in its tenant namespace on the provider.
	All bool
	// DryRun prints the plan and writes nothing.
	DryRun bool
	// Yes skips typing the provider's cluster ID.
	Yes bool
	// Timeout bounds the wait for what fence deleted to be gone.
	Timeout time.Duration
}

// NewOptions are the Options of a fence run with f.
func NewOptions(f *cli.Factory) *Options {
	return &Options{Factory: f}
}

// Validate refuses options no fence can run with, before anything is read.
func (o *Options) Validate() error {
	if o.Timeout <= 0 {
		return fmt.Errorf("--timeout=%s: give a positive duration, e.g. --timeout=5m", o.Timeout)
	}
	return nil
}

// Run is `fence`: the scope and its checks, the plan, the typed confirmation, the deletes and waits,
// the record.
func (o *Options) Run(ctx context.Context) error {
	s, err := o.newScope(ctx)
	if err != nil {
		return err
	}
	plan, err := computePlan(ctx, s)
	if err != nil {
		return err
	}
	if err := o.show(&Report{TypeMeta: output.TypeMeta(reportKind), Plan: plan.escaped()}); err != nil {
		return err
	}
	if o.DryRun {
		fmt.Fprintln(o.progress(), "\nDry run: nothing was deleted on the provider, nothing was written on this cluster.")
		return nil
	}
	if err := o.confirm(s, plan); err != nil {
		return err
	}
	res, err := deleteAndWait(ctx, o.progress(), s, plan, o.Timeout)
	if err == nil {
		err = o.record(ctx, s, res)
	}
	if err != nil {
		if o.Output.Document() {
			_ = o.show(&Report{TypeMeta: output.TypeMeta(reportKind), Result: res})
		}
		return err
	}
	return o.show(&Report{TypeMeta: output.TypeMeta(reportKind), Result: res})
}

// progress is where fence writes what is not the document: stdout, or stderr with -o.
func (o *Options) progress() io.Writer {
	return o.Output.Progress(o.Factory.IOStreams)
}
