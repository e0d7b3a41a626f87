package mark

import (
	"context"
	"fmt"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/view"
)

// preflight sends the mark as a server-side dry run: the API server's refusal (the gate's) is returned as
// it is; a mark that passes without the gate's stamps is refused, unless --without-gate, which says what
// the bare mark does.
func (o *Options) preflight(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster, patch client.Patch,
	user string) (*request, error) {
	r, err := send(ctx, c, fc, patch, user, true)
	if err != nil {
		return nil, err
	}
	if missing := r.stampsMissing(); missing != "" {
		if !o.WithoutGate {
			return nil, gateSilent(fc, missing)
		}
		fmt.Fprint(o.Factory.Out, withoutGateWarning)
	}
	return r, nil
}

// CheckGate asks the API server whether the user may mark fc, and the gate, with a server-side dry run of
// the mark `mark` would send, whether it would take it: the gate's answer `plan` shows.
func CheckGate(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster) (view.GateCheck, error) {
	var g view.GateCheck
	g.MayMark, _ = MayMark(ctx, c, fc.Name)
	if liqojanitor.IsMarked(fc.Annotations) {
		g.Refusal = "already marked permanently unreachable (kubectl liqo-janitor status " + fc.Name + ")"
		return g, nil
	}
	user, err := cli.WhoAmI(ctx, c)
	if err != nil {
		return g, err
	}
	r, err := send(ctx, c, fc, Patch(fc, "", ""), user, true)
	if err != nil {
		g.Refusal = err.Error() // the gate's refusal is the answer plan shows, not a failure of plan
		return g, nil           //nolint:nilerr // see above
	}
	g.Accepted = true
	if missing := r.stampsMissing(); missing != "" {
		g.Refusal = "the dry run passed with " + missing + ": the gate did not answer"
		return g, nil
	}
	g.Answered = true
	return g, nil
}

// gateSilent is the refusal of a mark whose dry run passed without the gate's stamps.
func gateSilent(fc *liqov1beta1.ForeignCluster, missing string) error {
	return output.Lines{
		fmt.Sprintf("the gate did not answer: the server-side dry run of the mark on ForeignCluster %s passed with %s.",
			output.Printable(fc.Name), output.Printable(missing)),
		"liqo-janitor's webhooks are not installed, or the API server does not call them for this request; nothing checks this mark.",
		"Nothing was written. Check the gate with",
		"  " + view.CheckGateCommand,
		"and its pods (kubectl get pods -A -l app.kubernetes.io/name=liqo-janitor). To mark without the gate anyway, add --without-gate.",
	}
}

// storedUnstamped is the failure of a mark the API server stored without the gate's stamps.
func storedUnstamped(fc *liqov1beta1.ForeignCluster, missing string) error {
	name := output.Printable(fc.Name)
	return output.Lines{
		fmt.Sprintf("the mark IS stored on ForeignCluster %s, but without the gate's stamps (%s): the gate did not answer this request.",
			name, output.Printable(missing)),
		"Liqo >= v1.1 acts on the bare mark at once. If that is not what you want, remove it now:",
		"  kubectl liqo-janitor unmark " + name,
		"and check the gate with",
		"  " + view.CheckGateCommand,
	}
}

// withoutGateWarning says what a mark the gate did not answer does, once stored.
const withoutGateWarning = `
WARNING: --without-gate: liqo-janitor's gate did not answer, and the bare mark is stored anyway.
Liqo >= v1.1 acts on it at once: its crdReplicator releases this cluster's replicated objects that are
being deleted, and its VirtualNode drain force-deletes the pods on the cluster's virtual nodes. That
happens with no grace period, no check that the cluster ID is the right one or that the provider is
really gone, and no marked-by/marked-at stamps to say who did it or when.
`
