package volumes

import (
	"strings"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// Plan is what release-volumes would do: the volumes pinned to the dead cluster, what happens to each,
// and the exact command that does it.
type Plan struct {
	ForeignCluster string `json:"foreignCluster"`
	ClusterID      string `json:"clusterID"`
	// Volumes are the PVCs janitor.PlanVolumes lists for the cluster, each with what a release does.
	Volumes []PlannedVolume `json:"volumes"`
	// Command is the exact command that releases them ("" when there is none to release).
	Command string `json:"command,omitempty"`
}

// PlannedVolume is one pinned volume and what releasing it does.
type PlannedVolume struct {
	liqojanitor.PinnedVolume `json:",inline"`
	// Action is what happens to the PVC: deleted and re-created, or deleted and left to its StatefulSet.
	Action string `json:"action"`
	// DataOn says where its data stays, abandoned: on the dead cluster, in the remote PVC of the same name.
	DataOn string `json:"dataOn"`
}

// plan is what releasing s's volumes would do, escaped for printing.
func (s *scope) plan() *Plan {
	p := &Plan{ForeignCluster: output.Printable(s.fc.Name), ClusterID: output.Printable(s.clusterID)}
	for _, v := range s.volumes {
		p.Volumes = append(p.Volumes, PlannedVolume{PinnedVolume: printable(v), Action: output.Printable(action(v)),
			DataOn: output.Printable(v.DataOn(s.clusterID))})
	}
	if len(p.Volumes) > 0 {
		p.Command = s.command()
	}
	return p
}

// action is what releasing v does to its PVC.
func action(v liqojanitor.PinnedVolume) string {
	if v.StatefulSet != "" {
		return "deleted and left to StatefulSet " + v.StatefulSet + " (its controller creates a new PVC for its Pending pod)"
	}
	return "deleted and re-created (same name, labels and spec, unbound), as liqoctl move volume does"
}

// command is the exact command that releases s's volumes: the ForeignCluster's name (or the cluster ID
// when it is not a word a shell keeps as is) and the typed data-loss confirmation.
func (s *scope) command() string {
	parts := []string{"kubectl liqo-janitor release-volumes", shellWord(s.fc.Name), "--" + ConfirmFlag + "=" + shellWord(s.clusterID)}
	if s.janitorNS.From == "--"+cli.JanitorNamespaceFlag {
		parts = append(parts, "--"+cli.JanitorNamespaceFlag+"="+shellWord(s.janitorNS.Name))
	}
	return strings.Join(parts, " ")
}

// shellWord is s as one shell word: as it is when it holds only characters a shell leaves alone, in
// single quotes otherwise, and escaped (output.Printable) for the terminal.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._:/=@") == "" {
		return s
	}
	return output.Printable("'" + strings.ReplaceAll(s, "'", `'\''`) + "'")
}

// printable is v with its text from the cluster escaped.
func printable(v liqojanitor.PinnedVolume) liqojanitor.PinnedVolume {
	out := v
	out.Namespace, out.Name, out.UID, out.PV = output.Printable(v.Namespace), output.Printable(v.Name), output.Printable(v.UID), output.Printable(v.PV)
	out.StatefulSet, out.RemoteNamespace = output.Printable(v.StatefulSet), output.Printable(v.RemoteNamespace)
	out.Pods = make([]string, 0, len(v.Pods))
	for _, p := range v.Pods {
		out.Pods = append(out.Pods, output.Printable(p))
	}
	return out
}
