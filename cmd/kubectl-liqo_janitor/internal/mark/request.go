package mark

import (
	"context"
	"fmt"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/view"
)

// stampSkew is how far the gate's marked-at may lie outside the request that set the mark (the gate
// writes whole seconds, and its clock is not this machine's).
const stampSkew = 5 * time.Second

// Patch sets the mark and its confirmation in one request, with the reason if any, the storm's
// acknowledgement if any (gate rule 21) and, for a ForeignCluster Liqo keeps no reachability evidence for,
// the no-reachability-evidence key (gate rule 12).
func Patch(fc *liqov1beta1.ForeignCluster, reason, acknowledge string) client.Patch {
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

// MayMark is a SelfSubjectAccessReview for the break-glass verb on the ForeignCluster named name ("":
// any ForeignCluster).
func MayMark(ctx context.Context, c client.Client, name string) (bool, error) {
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

// request is one request that sets the mark, as user, and what the API server answered.
type request struct {
	user     string
	from, to time.Time
	// result is the object the API server returned: with a dry run, what it would have stored.
	result *liqov1beta1.ForeignCluster
}

// send sends the mark patch for fc, as a server-side dry run if dryRun. The error is the API server's
// (the gate's refusal, as it gives it).
func send(ctx context.Context, c client.Client, fc *liqov1beta1.ForeignCluster, patch client.Patch, user string, dryRun bool) (*request, error) {
	var opts []client.PatchOption
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	r := &request{user: user, from: time.Now(), result: fc.DeepCopy()}
	err := c.Patch(ctx, r.result, patch, opts...)
	r.to = time.Now()
	return r, err
}

// stampsMissing says why the result of r does not carry the gate's stamps for it — marked-by naming the
// requester, marked-at within a few seconds of the request — or "" when it does: the gate answered.
func (r *request) stampsMissing() string {
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
func (r *request) stamps() string {
	a := r.result.Annotations
	return fmt.Sprintf("marked-by=%s, marked-at=%s", a[liqojanitor.MarkedByAnnotation], a[liqojanitor.MarkedAtAnnotation])
}
