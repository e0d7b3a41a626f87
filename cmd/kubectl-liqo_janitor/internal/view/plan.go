package view

import (
	"context"
	"fmt"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
	"github.com/liqo-janitor/liqo-janitor/janitor"
)

// GateCheck is what the gate would say to a mark now, and whether the user holds the break-glass verb.
type GateCheck struct {
	// MayMark: a SelfSubjectAccessReview for verb mark-unreachable on this ForeignCluster.
	MayMark bool `json:"mayMark"`
	// Accepted: a server-side dry run of the mark `mark` would send passed the API server.
	Accepted bool `json:"accepted"`
	// Answered: the gate answered that dry run (its stamps, naming you, are in the result). Accepted but not
	// Answered means nothing checked the mark: `mark` refuses it unless --without-gate.
	Answered bool `json:"answered"`
	// Refusal is the API server's (the gate's) answer when it would refuse, or why the gate did not answer.
	Refusal string `json:"refusal,omitempty"`
}

// PlanReport is `plan -o json|yaml`, kind PlanReport.
type PlanReport struct {
	metav1.TypeMeta `json:",inline"`
	Plan            *janitor.Plan `json:"plan"`
	// Grace is the janitor's recorded grace window (marked clusters only).
	Grace *GraceWindow `json:"grace,omitempty"`
	// NoReachabilityEvidence: Liqo keeps no APIServerStatus for the ForeignCluster, and marking it needs the
	// cluster ID typed a second time.
	NoReachabilityEvidence bool      `json:"noReachabilityEvidence,omitempty"`
	Gate                   GateCheck `json:"gate"`
	// Probe is where the janitor's return probe looks (or, unmarked, would look) for the provider; unmarked,
	// the gate probes the same before it accepts a mark (gate rule 4).
	Probe *Probe `json:"probe,omitempty"`
	// Evidence is what the verdict "unreachable" rests on for this cluster: Liqo's APIServerStatus and
	// NetworkConnectionStatus, and the storm count now.
	Evidence *Evidence `json:"evidence,omitempty"`
	// Janitor is where the plugin read liqo-janitor's records (its namespace, and nowhere else), and the
	// look-alikes of the same name it ignored in other namespaces.
	Janitor *Janitor `json:"janitor,omitempty"`
	// ProviderFence is the provider's fence of this consumer as the janitor's renewal record says, with the
	// deadline before which the gate refuses a mark (gate rule 31); none: no provider-side fence.
	ProviderFence *ProviderFence `json:"providerFence,omitempty"`
}

// DeepCopyObject makes PlanReport a runtime.Object, for cli-runtime's printers.
func (r *PlanReport) DeepCopyObject() runtime.Object { return output.DeepCopyJSON(r) }

// PlanReportOf is what plan shows of fc, all but the gate's answer (Gate, which a dry run of the mark
// gives): the janitor's plan with its records in its namespace ns (mc is the metadata client it lists
// with), the evidence, the probe, the provider's fence, the grace window of a marked cluster.
func PlanReportOf(ctx context.Context, c client.Client, mc metadata.Interface, fc *liqov1beta1.ForeignCluster,
	ns cli.JanitorNamespace) (*PlanReport, error) {
	plan, err := PlanOf(ctx, c, mc, fc, ns)
	if err != nil {
		return nil, err
	}
	r := &PlanReport{TypeMeta: output.TypeMeta("PlanReport"), Plan: plan, NoReachabilityEvidence: !HasEvidence(fc)}
	fcs, listErr := ListForeignClusters(ctx, c)
	r.Evidence = EvidenceOf(fc, fcs, listErr)
	if plan.Wait != janitor.WaitReturned {
		r.Janitor = ReadJanitor(ctx, c, ns, liqojanitor.RecordsConfigMap, liqojanitor.FenceRenewalsConfigMap)
		r.Probe = probeOf(ctx, c, fc, r.Janitor.records, r.Janitor.Unread)
	} else {
		r.Janitor = ReadJanitor(ctx, c, ns, liqojanitor.FenceRenewalsConfigMap)
	}
	r.ProviderFence = ProviderFenceOf(r.Janitor, fc)
	if liqojanitor.IsMarked(fc.Annotations) {
		g := GraceOf(fc, time.Now()) // the plan's Wait already takes the janitor's recorded window (PlanCluster)
		r.Grace = &g
	}
	return r, nil
}

// PlanOf is the janitor's own selection for fc, as if its grace period had ended, with the returns it kept
// in its namespace ns (a provider that answered again after the mark stops every release).
func PlanOf(ctx context.Context, c client.Client, mc metadata.Interface, fc *liqov1beta1.ForeignCluster, ns cli.JanitorNamespace) (*janitor.Plan, error) {
	plan, err := janitor.PlanCluster(ctx, c, mc, fc.Name, janitor.Options{Namespace: ns.Name})
	if apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("%w (a plan reads what the janitor reads: get and list on ForeignClusters, ResourceSlices, "+
			"NamespaceMaps, Renews, NamespaceOffloadings, VirtualNodes, Nodes, Pods and Namespaces, and get on ConfigMap %s in "+
			"liqo-janitor's namespace %s; the cluster's view role and Liqo's read roles give them)", err, liqojanitor.RecordsConfigMap, ns.Name)
	}
	return plan, err
}
