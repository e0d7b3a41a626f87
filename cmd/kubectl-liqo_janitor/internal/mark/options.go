package mark

import (
	"context"
	"errors"
	"fmt"
	"strings"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/view"
)

// The values of --dry-run.
const (
	// DryRunNone sends the mark for real.
	DryRunNone = "none"
	// DryRunServer sends the mark through the gate without storing it.
	DryRunServer = "server"
)

// Options are what `mark` is told: the ForeignCluster, and its flags.
type Options struct {
	// Factory gives the consumer's clients, the streams, the operator's typed confirmations and the API
	// server's warnings (the gate's).
	Factory *cli.Factory
	// ForeignCluster names the provider: its ForeignCluster's name or cluster ID.
	ForeignCluster string
	// Reason is --reason: why the provider is gone for good, quoted in the clean-up's events.
	Reason string
	// DryRun is --dry-run: DryRunNone, or DryRunServer to send the mark through the gate without storing it.
	DryRun string
	// NoEvidence is --no-reachability-evidence: the cluster ID again, for a ForeignCluster Liqo keeps no
	// reachability evidence for, instead of typing it.
	NoEvidence string
	// Yes skips typing the cluster ID.
	Yes bool
	// WithoutGate marks even though the gate does not answer.
	WithoutGate bool
	// JanitorNamespace is --janitor-namespace: where the plan reads the janitor's records.
	JanitorNamespace string
	// Acknowledge is --acknowledge-unreachable, 0 when not given (the count is never 0: it counts the
	// cluster being marked).
	Acknowledge int
}

// NewOptions are the Options of a mark run with f.
func NewOptions(f *cli.Factory) *Options {
	return &Options{Factory: f}
}

// Validate refuses options no mark can run with, before anything is read.
func (o *Options) Validate() error {
	if o.DryRun != DryRunNone && o.DryRun != DryRunServer {
		return fmt.Errorf("--dry-run=%s: use --dry-run=server to send the mark through the gate without storing it", o.DryRun)
	}
	if strings.TrimSpace(o.Reason) == "" {
		return errors.New(`--reason is required: say why the provider is gone for good (it is quoted in every event of the clean-up)`)
	}
	return nil
}

// Run is `mark`: the plan, the plugin's own checks, the dry run through the gate, the typed
// confirmations, the mark, its stamps.
func (o *Options) Run(ctx context.Context) error {
	c, fc, err := o.Factory.Resolve(ctx, o.ForeignCluster)
	if err != nil {
		return err
	}
	if liqojanitor.IsMarked(fc.Annotations) {
		return fmt.Errorf("ForeignCluster %s is already marked: kubectl liqo-janitor status %s", fc.Name, fc.Name)
	}
	fcs, err := view.ListForeignClusters(ctx, c)
	if err != nil {
		return err
	}
	ev := view.EvidenceOf(fc, fcs, nil)
	ns, err := cli.FindJanitorNamespace(ctx, c, o.JanitorNamespace)
	if err != nil {
		return err
	}
	if err := o.showPlan(ctx, c, fc, ns, ev); err != nil {
		return err
	}
	if err := checkTunnel(fc); err != nil {
		return err
	}
	if err := o.checkEvidence(fc); err != nil {
		return err
	}
	ack, err := o.checkStorm(fc, ev)
	if err != nil {
		return err
	}
	user, err := cli.WhoAmI(ctx, c)
	if err != nil {
		return err
	}
	patch := Patch(fc, o.Reason, ack.count)
	dry, err := o.preflight(ctx, c, fc, patch, user)
	if err != nil {
		return err
	}
	if o.DryRun == DryRunServer {
		o.reportDryRun(dry, ack)
		return nil
	}
	if err := o.confirmMark(fc); err != nil {
		return err
	}
	if err := o.confirmStorm(ack); err != nil {
		return err
	}
	o.Factory.DropWarnings() // the dry run's: the real request gets its own
	r, err := send(ctx, c, fc, patch, user, false)
	if err != nil {
		return err // the gate's refusal, as it gives it
	}
	o.Factory.PrintWarnings()
	return o.reportMarked(fc, r)
}
