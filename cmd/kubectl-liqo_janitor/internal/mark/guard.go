package mark

import (
	"fmt"
	"strconv"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/view"
)

// The plugin's own checks of gate rules 12 (no reachability evidence), 20 (the data plane's veto) and 21
// (the storm guard), made before anything is sent. They refuse only what the gate refuses whatever its
// flags, and ask for the keys the gate wants typed; what depends on the gate's flags (how long ago the
// tunnel left Established, against --min-unreachable, as for gate rule 4; the storm's thresholds) the gate
// decides, on the server-side dry run, and its refusal is shown as it gives it.

// checkTunnel refuses a mark on a provider whose data plane Liqo shows up (NetworkConnectionStatus
// Established): its API server may be down, its pods are not, and they keep serving and reaching this
// cluster. No networking condition at all is no evidence either way, and passes.
func checkTunnel(fc *liqov1beta1.ForeignCluster) error {
	if !liqojanitor.TunnelUp(fc) {
		return nil
	}
	name := output.Printable(fc.Name)
	return output.Lines{
		fmt.Sprintf("ForeignCluster %s: Liqo's data plane to the provider is up (NetworkConnectionStatus %s): its pods still run "+
			"and reach this cluster, so it is not dead, whatever its API server shows (an upgrade, an expired certificate, a "+
			"crashed control plane).", name, view.ConditionOf(liqojanitor.TunnelStatus(fc)).Describe(time.Now())),
		"Nothing was written; the gate refuses such a mark too (rule 20). Find out why its API server does not answer; " +
			"mark it only once the tunnel is down too:",
		"  kubectl get foreigncluster " + name + " -o jsonpath='{.status.modules.networking.conditions}'",
	}
}

// checkEvidence explains, for a ForeignCluster without reachability evidence, why the mark needs its
// cluster ID a second time, and checks --no-reachability-evidence against it.
func (o *Options) checkEvidence(fc *liqov1beta1.ForeignCluster) error {
	id := string(fc.Spec.ClusterID)
	switch {
	case view.HasEvidence(fc) && o.NoEvidence != "":
		return fmt.Errorf("--no-reachability-evidence: Liqo keeps reachability evidence (APIServerStatus) for ForeignCluster %s: leave the flag out", fc.Name)
	case view.HasEvidence(fc):
		return nil
	case o.NoEvidence != "" && o.NoEvidence != id:
		return fmt.Errorf("--no-reachability-evidence=%s is not the cluster ID %s: nothing was written", o.NoEvidence, id)
	case o.NoEvidence == "" && o.Yes && o.DryRun != DryRunServer:
		return fmt.Errorf("ForeignCluster %s has no reachability evidence (no APIServerStatus condition): with --yes, "+
			"add --no-reachability-evidence=%s to say you know; nothing was written", fc.Name, id)
	}
	fmt.Fprintf(o.Factory.Out, "\nNo reachability evidence: %s\n", view.NoEvidenceWhy)
	return nil
}

// stormAck is the storm's acknowledgement a mark carries (liqojanitor.AcknowledgeUnreachableAnnotation),
// and whether the operator still has to type it.
type stormAck struct {
	// count is the number of providers unreachable at once; "" when the mark carries no acknowledgement.
	count string
	// ask: the operator types the count before the mark is sent (no --acknowledge-unreachable).
	ask bool
}

// checkStorm checks the storm count by the default guard: outside a storm the mark carries no
// acknowledgement (unless --acknowledge-unreachable gives one, for a gate with other flags); during one it
// explains it and carries the count, typed by the operator or given with --acknowledge-unreachable. A
// count that is not the one Liqo's evidence shows is refused.
func (o *Options) checkStorm(fc *liqov1beta1.ForeignCluster, ev *view.Evidence) (stormAck, error) {
	storm := ev.Storm.Count()
	n := len(storm.Unreachable)
	count := strconv.Itoa(n)
	switch {
	case o.Acknowledge != 0 && o.Acknowledge != n:
		return stormAck{}, output.Lines{
			fmt.Sprintf("--acknowledge-unreachable=%d is not the count: %s, counting ForeignCluster %s.", o.Acknowledge, storm,
				output.Printable(fc.Name)),
			fmt.Sprintf("Nothing was written. Check this cluster's own uplink, gateway and DNS first; then give --acknowledge-unreachable=%d.", n),
		}
	case !ev.Storm.InStorm && o.Acknowledge != 0:
		fmt.Fprintf(o.Factory.Out, "\nNo storm %s: --acknowledge-unreachable=%s is sent for the gate to judge.\n", view.GuardNote, count)
		return stormAck{count: count}, nil
	case !ev.Storm.InStorm:
		return stormAck{}, nil
	}
	fmt.Fprint(o.Factory.Out, stormExplained(storm))
	ack := stormAck{count: count, ask: o.Acknowledge == 0}
	if ack.ask && o.Yes && o.DryRun != DryRunServer {
		return stormAck{}, output.Lines{
			fmt.Sprintf("ForeignCluster %s: a mark during a storm needs the count acknowledged: %s.", output.Printable(fc.Name), storm),
			fmt.Sprintf("Nothing was written. Check this cluster's own uplink, gateway and DNS first; then, with --yes, add "+
				"--acknowledge-unreachable=%d.", n),
		}
	}
	return ack, nil
}

// stormExplained says what a storm is, and what to check before marking in one.
func stormExplained(storm liqojanitor.Storm) string {
	return fmt.Sprintf(`
STORM: %s, this one counted:
a storm %s.
When this cluster itself is cut off (its uplink, its gateway, its DNS), every provider looks dead at once,
and the gate's probe runs from the same side of the cut: marking them would release this cluster's copies
of workloads that still run on the providers. Check this cluster's own uplink, gateway and DNS first.
A mark now needs the count acknowledged (%s, gate rule 21);
the janitor holds a mark made during a storm without it.
`, storm, view.GuardNote, liqojanitor.AcknowledgeUnreachableAnnotation)
}
