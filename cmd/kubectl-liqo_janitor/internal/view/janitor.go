package view

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// Janitor is where `status` and `plan` read the janitor's ConfigMaps (its brake, its records and its
// renewals of providers' fence Leases): in
// its namespace only (cli.FindJanitorNamespace), and the look-alikes they ignored elsewhere.
type Janitor struct {
	// Namespace is liqo-janitor's namespace, From how the plugin learned it.
	Namespace string `json:"namespace"`
	From      string `json:"from"`
	// Ignored are ConfigMaps named as the janitor's brake or records in other namespaces ("namespace/name"):
	// anyone who may create a ConfigMap there could have made them; they are not read.
	Ignored []string `json:"ignored,omitempty"`
	// Unread says why a ConfigMap of the janitor's could not be read there.
	Unread string `json:"unread,omitempty"`

	brake, records, renewals *corev1.ConfigMap
	// renewalsUnread says why the renewals ConfigMap could not be read ("" when it was, or was not asked).
	renewalsUnread string
}

// ReadJanitor reads, in the janitor's namespace ns, the ConfigMaps called names (of the janitor's:
// liqojanitor.BrakeConfigMap, liqojanitor.RecordsConfigMap, liqojanitor.FenceRenewalsConfigMap).
func ReadJanitor(ctx context.Context, c client.Client, ns cli.JanitorNamespace, names ...string) *Janitor {
	v := &Janitor{Namespace: output.Printable(ns.Name), From: output.Printable(ns.From)}
	for _, name := range names {
		read, err := cli.ReadJanitorConfigMap(ctx, c, ns.Name, name)
		if err != nil {
			v.Unread = output.Printable(err.Error())
			if name == liqojanitor.FenceRenewalsConfigMap {
				v.renewalsUnread = v.Unread
			}
		}
		v.Ignored = append(v.Ignored, read.Ignored...)
		switch name {
		case liqojanitor.BrakeConfigMap:
			v.brake = read.ConfigMap
		case liqojanitor.RecordsConfigMap:
			v.records = read.ConfigMap
		case liqojanitor.FenceRenewalsConfigMap:
			v.renewals = read.ConfigMap
		}
	}
	return v
}

// brakes is the janitor-wide brake when it is set (janitor rule 14): none, or the one in its namespace.
func (v *Janitor) brakes() []Brake {
	if v.brake == nil {
		return nil
	}
	return []Brake{{Namespace: v.Namespace, Reason: output.Printable(v.brake.Data[liqojanitor.BrakeReasonKey])}}
}

// PrintIgnored names the look-alikes, one line each.
func (v *Janitor) PrintIgnored(out io.Writer) {
	if v == nil {
		return
	}
	for _, lookAlike := range v.Ignored {
		fmt.Fprintln(out, cli.IgnoredLine(lookAlike, v.Namespace))
	}
	if v.Unread != "" {
		fmt.Fprintf(out, "liqo-janitor's ConfigMaps in its namespace %s could not all be read: %s\n", v.Namespace, v.Unread)
	}
}
