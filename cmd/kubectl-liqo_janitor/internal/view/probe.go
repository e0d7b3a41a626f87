package view

import (
	"context"
	"fmt"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// Probe is where liqo-janitor's return probe looks for a marked cluster's provider (janitor rules 10
// and 16): an answer there is a return, which stops every release for the mark and raises the alarm.
type Probe struct {
	// APIServer and Proxy are the provider's API server and the proxy Liqo reaches it through.
	APIServer string `json:"apiServer,omitempty"`
	Proxy     string `json:"proxy,omitempty"`
	// CAKnown: an answer counts only with a certificate of the provider's CA; without it, any TLS answer
	// counts, unverified.
	CAKnown bool `json:"caKnown"`
	// Kept: the janitor kept them for this mark, at KeptAt, from From; otherwise they are what Liqo knows now
	// (From), which the janitor keeps at its first sight of the confirmed mark.
	Kept   bool         `json:"kept"`
	KeptAt *metav1.Time `json:"keptAt,omitempty"`
	From   string       `json:"from,omitempty"`
	// None: no target at all — a return can show only in Liqo's APIServerStatus.
	None bool `json:"none,omitempty"`
	// Unread says why the janitor's kept targets could not be read (then the rest is Liqo's view now).
	Unread string `json:"unread,omitempty"`
}

// probeOf is where the janitor probes fc's provider: the targets it kept for the mark (in its records,
// liqojanitor.RecordsConfigMap in its namespace: records, nil when there is none), else where Liqo says
// the provider is now. unread says why the records could not be read, if they could not.
func probeOf(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster, records *corev1.ConfigMap, unread string) *Probe {
	if records != nil {
		if rec, ok := liqojanitor.KeptRecordOf(records, fc.UID, fc.Annotations); ok && rec.HasTargets() {
			t := rec.Targets
			return &Probe{APIServer: output.Printable(t.APIServer), Proxy: output.Printable(t.Proxy), CAKnown: len(t.CA) > 0,
				Kept: true, KeptAt: &metav1.Time{Time: rec.At.UTC()}, From: output.Printable(rec.From)}
		}
	}
	p := &Probe{Unread: output.Printable(unread)}
	t, from := liqojanitor.ProviderTargets(ctx, c, fc)
	if t.APIServer == "" && t.Proxy == "" {
		p.None = true
		return p
	}
	p.APIServer, p.Proxy, p.CAKnown, p.From = output.Printable(t.APIServer), output.Printable(t.Proxy), len(t.CA) > 0, output.Printable(from)
	return p
}

// String says it for a person.
func (p *Probe) String() string {
	s := ""
	switch {
	case p.None:
		s = "NONE: no API-server URL is known for this provider (Liqo cleared it, and liqo-janitor kept none for this " +
			"mark): a return shows only if Liqo's APIServerStatus turns Established again. Check yourself that the " +
			"provider is gone for good before you rely on this mark"
	default:
		s = p.APIServer
		if p.Proxy != "" {
			s += " through proxy " + p.Proxy
		}
		if p.CAKnown {
			s += "; an answer counts only with a certificate of the provider's CA"
		} else {
			s += "; no CA of the provider is known: any TLS answer counts, unverified"
		}
		if p.Kept {
			s += fmt.Sprintf("; kept by liqo-janitor at %s from %s", p.KeptAt.UTC().Format(time.RFC3339), p.From)
		} else {
			s += "; from " + p.From + " now (liqo-janitor keeps it at its first sight of the confirmed mark)"
		}
	}
	if p.Unread != "" {
		s += " (liqo-janitor's kept targets could not be read: " + p.Unread + ")"
	}
	return s
}

// line is String, or "" for no probe status at all.
func (p *Probe) line() string {
	if p == nil {
		return ""
	}
	return p.String()
}
