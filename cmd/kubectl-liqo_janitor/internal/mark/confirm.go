package mark

import (
	"fmt"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/view"
)

// confirmMark asks the operator to type the cluster ID (unless --yes) and, for a ForeignCluster without
// reachability evidence, to type it again for the no-reachability-evidence key (unless given as a flag).
func (o *Options) confirmMark(fc *liqov1beta1.ForeignCluster) error {
	id := string(fc.Spec.ClusterID)
	if !o.Yes {
		if err := o.typed(fmt.Sprintf("\nThis cannot be undone once the grace period ends: what is released is not restored.\n"+
			"Type the cluster ID (%s) to confirm: ", output.Printable(id)), id); err != nil {
			return err
		}
	}
	if view.HasEvidence(fc) || o.NoEvidence != "" {
		return nil
	}
	return o.typed(fmt.Sprintf("Nothing shows the provider is gone. Type the cluster ID (%s) again, for %s: ",
		output.Printable(id), liqojanitor.NoEvidenceAnnotation), id)
}

// typed prompts and reads one line, which must be want.
func (o *Options) typed(prompt, want string) error {
	fmt.Fprint(o.Factory.Out, prompt)
	got, err := o.Factory.ReadLine()
	if err != nil {
		return fmt.Errorf("reading the confirmation: %w", err)
	}
	if got != want {
		return fmt.Errorf("you typed %q, not the cluster ID %q: nothing was written", got, want)
	}
	return nil
}

// confirmStorm asks the operator to type the storm's count, where the mark needs it typed.
func (o *Options) confirmStorm(ack stormAck) error {
	if !ack.ask {
		return nil
	}
	fmt.Fprintf(o.Factory.Out, "Type the number of providers unreachable at once (%s) to acknowledge the storm: ", ack.count)
	got, err := o.Factory.ReadLine()
	if err != nil {
		return fmt.Errorf("reading the acknowledgement: %w", err)
	}
	if got != ack.count {
		return fmt.Errorf("you typed %q, not the number of providers unreachable at once (%s): nothing was written", got, ack.count)
	}
	return nil
}
