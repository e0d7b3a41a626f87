package main

import (
	"context"
	"fmt"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/view"
)

// stampSkew is how far the gate's marked-at may lie outside the request that set the mark (the gate
// writes whole seconds, and its clock is not this machine's).
const stampSkew = 5 * time.Second

// markPatch sets the mark and its confirmation in one request, with the reason if any, the storm's
// acknowledgement if any (gate rule 21) and, for a ForeignCluster Liqo keeps no reachability evidence for,
// the no-reachability-evidence key (gate rule 12).
func markPatch(fc *liqov1beta1.ForeignCluster, reason, acknowledge string) client.Patch {
	id := string(fc.Spec.ClusterID)
	annotations := map[string]string{liqojanitor.MarkAnnotation: liqojanitor.MarkValue, liqojanitor.ConfirmAnnotation: id}
	if reason != "" {
		annotations[liqojanitor.ReasonAnnotation] = reason
	}
	if acknowledge != "" {
		annotations[liqojanitor.AcknowledgeUnreachableAnnotation] = acknowledge
	}
	if !view.HasEvidence(fc) {
		annotations[liqojanitor.NoEvidenceAnnotation] = id
	}
	return cli.AnnotationsPatch(annotations, nil)
}

// mayMark is a SelfSubjectAccessReview for the break-glass verb on the ForeignCluster named name.
func mayMark(ctx context.Context, c client.Client, name string) (bool, error) {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: liqojanitor.MarkVerb, Group: liqov1beta1.GroupVersion.Group, Resource: "foreignclusters", Name: name,
		},
	}}
	if err := c.Create(ctx, review); err != nil {
		return false, fmt.Errorf("asking the API server whether you may mark it: %w", err)
	}
	return review.Status.Allowed, nil
}

// markRequest is one request that sets the mark, as user, and what the API server answered.
type markRequest struct {
	user     string
	from, to time.Time
	// result is the object the API server returned: with a dry run, what it would have stored.
	result *liqov1beta1.ForeignCluster
}

// sendMark sends the mark patch for fc, as a server-side dry run if dryRun. The error is the API server's
// (the gate's refusal, as it gives it).
func sendMark(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster, patch client.Patch, user string, dryRun bool) (*markRequest, error) {
	var opts []client.PatchOption
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	r := &markRequest{user: user, from: time.Now(), result: fc.DeepCopy()}
	err := c.Patch(ctx, r.result, patch, opts...)
	r.to = time.Now()
	return r, err
}

// stampsMissing says why the result of r does not carry the gate's stamps for it — marked-by naming the
// requester, marked-at within a few seconds of the request — or "" when it does: the gate answered.
func (r *markRequest) stampsMissing() string {
	a := r.result.Annotations
	by, at := a[liqojanitor.MarkedByAnnotation], a[liqojanitor.MarkedAtAnnotation]
	if by == "" && at == "" {
		return "no " + liqojanitor.MarkedByAnnotation + " or marked-at stamp"
	}
	if by != r.user {
		return fmt.Sprintf("%s is %q, not you (%q)", liqojanitor.MarkedByAnnotation, by, r.user)
	}
	t, ok := liqojanitor.MarkedAt(r.result)
	switch {
	case !ok:
		return fmt.Sprintf("%s %q is not an RFC 3339 time", liqojanitor.MarkedAtAnnotation, at)
	case t.Before(r.from.Truncate(time.Second).Add(-stampSkew)) || t.After(r.to.Add(stampSkew)):
		return fmt.Sprintf("%s is %s, not the time of this request (%s by this machine's clock)",
			liqojanitor.MarkedAtAnnotation, at, r.from.UTC().Format(time.RFC3339))
	}
	return ""
}

// stamps describes the gate's stamps on the result of r.
func (r *markRequest) stamps() string {
	a := r.result.Annotations
	return fmt.Sprintf("marked-by=%s, marked-at=%s", a[liqojanitor.MarkedByAnnotation], a[liqojanitor.MarkedAtAnnotation])
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

// checkGate asks the API server whether the user may mark fc, and the gate, with a server-side dry run of
// the mark `mark` would send, whether it would take it.
func (e *env) checkGate(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster) (view.GateCheck, error) {
	var g view.GateCheck
	g.MayMark, _ = mayMark(ctx, c, fc.Name)
	if liqojanitor.IsMarked(fc.Annotations) {
		g.Refusal = "already marked permanently unreachable (kubectl liqo-janitor status " + fc.Name + ")"
		return g, nil
	}
	user, err := cli.WhoAmI(ctx, c)
	if err != nil {
		return g, err
	}
	r, err := sendMark(ctx, c, fc, markPatch(fc, "", ""), user, true)
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
