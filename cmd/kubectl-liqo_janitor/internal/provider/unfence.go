package provider

import (
	"context"
	"fmt"
	"io"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// UnfenceOptions are what `unfence` is told.
type UnfenceOptions struct {
	// Factory gives the provider's client (the provider's admin's) and the streams.
	Factory *cli.Factory
	// Consumer is the consumer's Liqo cluster ID; Confirm must repeat it.
	Consumer, Confirm string
}

// Validate refuses to run without the typed confirmation.
func (o *UnfenceOptions) Validate() error {
	if o.Confirm != o.Consumer {
		what := "without --confirm"
		if o.Confirm != "" {
			what = fmt.Sprintf("with --confirm=%s, which is not the consumer's cluster ID", output.Printable(o.Confirm))
		}
		return fmt.Errorf("unfence lets consumer %s's pods run on this provider again and re-arms nothing until it renews; refused %s: "+
			"type its cluster ID to confirm: kubectl liqo-janitor unfence %s --confirm=%s",
			output.Printable(o.Consumer), what, output.Printable(o.Consumer), output.Printable(o.Consumer))
	}
	return nil
}

// Run is `unfence` (fence rule 6): the agent's record of the fence cleared first (the fence then stops
// deleting, and the agent re-arms only on a renewal it observes), then the Tenant set Active again if the
// fence cordoned it and its marks removed, then the copy of the record on the consumer's Lease removed.
// Every write is a merge patch at the resourceVersion read: a concurrent change (the agent's next poll)
// fails it, and unfence can simply be run again.
func (o *UnfenceOptions) Run(ctx context.Context) error {
	c, err := o.Factory.Client()
	if err != nil {
		return err
	}
	cons, err := findConsumer(ctx, c, o.Consumer)
	if err != nil {
		return err
	}
	m, err := readMarks(ctx, c, cons)
	if err != nil {
		return err
	}
	if !m.any() {
		fmt.Fprintf(o.Factory.Out, "Consumer %s is not fenced on this provider (no fence in %s/%s, none on its Tenant or Lease): nothing changed.\n",
			output.Printable(cons.id), cons.namespace, liqojanitor.FenceStateLeaseName)
		return nil
	}
	stateLease, state, lease := m.stateLease, m.state, m.lease
	w := o.Factory.Out
	if state.Fence != nil {
		fmt.Fprintf(w, "Consumer %s was %s.\n", output.Printable(cons.id), output.Printable(state.Fence.Describe()))
		if err := clearRecord(ctx, c, stateLease, state); err != nil {
			return err
		}
		fmt.Fprintf(w, "Cleared the agent's record (%s/%s): it fences this consumer again only once armed by a renewal it observes.\n",
			cons.namespace, liqojanitor.FenceStateLeaseName)
	}
	if err := o.uncordon(ctx, c, w, cons); err != nil {
		return err
	}
	if m.leaseMarked {
		patch := client.MergeFromWithOptions(lease.DeepCopy(), client.MergeFromWithOptimisticLock{})
		delete(lease.Annotations, liqojanitor.ProviderFencedAnnotation)
		if err := c.Patch(ctx, lease, patch); err != nil {
			return fmt.Errorf("removing %s from the consumer's Lease %s/%s (run unfence again): %w",
				liqojanitor.ProviderFencedAnnotation, cons.namespace, liqojanitor.FenceLeaseName, err)
		}
		fmt.Fprintf(w, "Removed %s from the consumer's Lease %s/%s.\n", liqojanitor.ProviderFencedAnnotation, cons.namespace, liqojanitor.FenceLeaseName)
	}
	return nil
}

// marks are the fence's marks on a consumer: the agent's record (and its Lease), whether its Tenant carries
// fenced-at or cordoned-by-fence, and the consumer's Lease if it carries the record's copy.
type marks struct {
	stateLease   *coordinationv1.Lease
	state        liqojanitor.FenceState
	lease        *coordinationv1.Lease
	tenantMarked bool
	leaseMarked  bool
}

// any: some mark of a fence is left.
func (m marks) any() bool { return m.state.Fence != nil || m.tenantMarked || m.leaseMarked }

// readMarks reads the fence's marks on cons.
func readMarks(ctx context.Context, c client.Reader, cons *consumer) (marks, error) {
	var m marks
	var err error
	if m.stateLease, m.state, err = readState(ctx, c, cons.namespace); err != nil {
		return m, err
	}
	lease := &coordinationv1.Lease{}
	switch err := c.Get(ctx, client.ObjectKey{Namespace: cons.namespace, Name: liqojanitor.FenceLeaseName}, lease); {
	case err == nil:
		m.lease, m.leaseMarked = lease, lease.Annotations[liqojanitor.ProviderFencedAnnotation] != ""
	case !apierrors.IsNotFound(err):
		return m, fmt.Errorf("reading the consumer's Lease %s/%s: %w", cons.namespace, liqojanitor.FenceLeaseName, err)
	}
	m.tenantMarked = cons.tenant != nil && (cons.tenant.Annotations[liqojanitor.FencedAtAnnotation] != "" ||
		cons.tenant.Annotations[liqojanitor.CordonedByFenceAnnotation] != "")
	return m, nil
}

// readState reads the agent's record (nil Lease and an empty state when there is none).
func readState(ctx context.Context, c client.Reader, ns string) (*coordinationv1.Lease, liqojanitor.FenceState, error) {
	l := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: liqojanitor.FenceStateLeaseName}, l); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, liqojanitor.FenceState{}, nil
		}
		return nil, liqojanitor.FenceState{}, fmt.Errorf("reading the agent's record %s/%s: %w", ns, liqojanitor.FenceStateLeaseName, err)
	}
	state, err := liqojanitor.ParseFenceState(l.Annotations[liqojanitor.FenceStateAnnotation])
	if err != nil {
		return nil, state, fmt.Errorf("the agent's record %s/%s: %w (fix or delete it)", ns, liqojanitor.FenceStateLeaseName, err)
	}
	return l, state, nil
}

// clearRecord removes the fence and the arming from the agent's record, keeping its last observation.
func clearRecord(ctx context.Context, c client.Client, l *coordinationv1.Lease, state liqojanitor.FenceState) error {
	patch := client.MergeFromWithOptions(l.DeepCopy(), client.MergeFromWithOptimisticLock{})
	state.Fence, state.ArmedAt = nil, nil
	l.Annotations[liqojanitor.FenceStateAnnotation] = state.String()
	if err := c.Patch(ctx, l, patch); err != nil {
		return fmt.Errorf("clearing the agent's record %s/%s (run unfence again): %w", l.Namespace, l.Name, err)
	}
	return nil
}

// uncordon sets the Tenant Active again only if it is Cordoned and the fence cordoned it, and removes the
// fence's marks from it; any other condition it leaves, saying why.
func (o *UnfenceOptions) uncordon(ctx context.Context, c client.Client, w io.Writer, cons *consumer) error {
	t := cons.tenant
	if t == nil {
		fmt.Fprintf(w, "No Tenant of consumer %s in %s: nothing to set Active.\n", output.Printable(cons.id), cons.namespace)
		return nil
	}
	patch := client.MergeFromWithOptions(t.DeepCopy(), client.MergeFromWithOptimisticLock{})
	byFence := t.Annotations[liqojanitor.CordonedByFenceAnnotation] != ""
	switch cond := t.Spec.TenantCondition; {
	case cond == authv1beta1.TenantConditionCordoned && byFence:
		t.Spec.TenantCondition = authv1beta1.TenantConditionActive
		fmt.Fprintf(w, "Set Tenant %s/%s Active again (the fence had cordoned it): Liqo accepts its new ShadowPods.\n", t.Namespace, t.Name)
	case byFence:
		fmt.Fprintf(w, "Left Tenant %s/%s %s: the fence cordoned it, but someone changed it since; unfence sets Active only a Tenant the fence left Cordoned.\n",
			t.Namespace, t.Name, cond)
	default:
		fmt.Fprintf(w, "Left Tenant %s/%s %s: the fence did not cordon it (it cordons only an Active Tenant); change it yourself if it should be Active.\n",
			t.Namespace, t.Name, cond)
	}
	if t.Annotations[liqojanitor.FencedAtAnnotation] == "" && !byFence {
		return nil // nothing of the fence's on it, and its condition left
	}
	delete(t.Annotations, liqojanitor.FencedAtAnnotation)
	delete(t.Annotations, liqojanitor.CordonedByFenceAnnotation)
	if err := c.Patch(ctx, t, patch); err != nil {
		return fmt.Errorf("updating Tenant %s/%s (run unfence again): %w", t.Namespace, t.Name, err)
	}
	return nil
}
