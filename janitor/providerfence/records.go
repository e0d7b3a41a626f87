package providerfence

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// The agent's writes to the Leases it keeps (fence rule 2): the consumer's Lease, which it creates and
// annotates, and its own record beside it. Its writes to the consumer's workloads and Tenant are
// fence.go's. No other file of the package writes (.golangci.yml).

// read reads the consumer's Lease (creating it, with the contract, if it does not exist) and the agent's
// record, both live.
func (a *Agent) read(ctx context.Context, cons *consumer, contract liqojanitor.FenceContract) (
	lease, stateLease *coordinationv1.Lease, state liqojanitor.FenceState, err error) {
	lease = &coordinationv1.Lease{}
	err = a.c.Get(ctx, client.ObjectKey{Namespace: cons.namespace, Name: liqojanitor.FenceLeaseName}, lease)
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{}
		lease.Namespace, lease.Name = cons.namespace, liqojanitor.FenceLeaseName
		lease.Annotations = map[string]string{liqojanitor.FenceContractAnnotation: contract.String(),
			liqojanitor.FenceStatusAnnotation: "waiting for the consumer's first renewal"}
		err = a.c.Create(ctx, lease)
	}
	if err != nil {
		return nil, nil, state, fmt.Errorf("reading the consumer's Lease: %w", err)
	}
	stateLease = &coordinationv1.Lease{}
	err = a.c.Get(ctx, client.ObjectKey{Namespace: cons.namespace, Name: liqojanitor.FenceStateLeaseName}, stateLease)
	if apierrors.IsNotFound(err) {
		return lease, nil, state, nil
	}
	if err != nil {
		return nil, nil, state, fmt.Errorf("reading the agent's record: %w", err)
	}
	state, err = liqojanitor.ParseFenceState(stateLease.Annotations[liqojanitor.FenceStateAnnotation])
	if err != nil {
		// Only the agent and the provider's admin write it: a broken record is an admin's to mend, and the
		// agent does not fence on what it cannot read.
		return nil, nil, state, fmt.Errorf("the agent's record %s/%s: %w (fix or delete it)", cons.namespace, liqojanitor.FenceStateLeaseName, err)
	}
	return lease, stateLease, state, nil
}

// record writes the agent's record when it changed: created, or patched with the resourceVersion it was
// read at, so that two leaders never both write what they decided on different readings.
func (a *Agent) record(ctx context.Context, cons *consumer, stateLease *coordinationv1.Lease, before, after liqojanitor.FenceState) (
	*coordinationv1.Lease, error) {
	if stateLease != nil && before.String() == after.String() {
		return stateLease, nil
	}
	if stateLease == nil {
		l := &coordinationv1.Lease{}
		l.Namespace, l.Name = cons.namespace, liqojanitor.FenceStateLeaseName
		l.Annotations = map[string]string{liqojanitor.FenceStateAnnotation: after.String()}
		if err := a.c.Create(ctx, l); err != nil {
			return nil, fmt.Errorf("recording the observation: %w", err)
		}
		return l, nil
	}
	patch := client.MergeFromWithOptions(stateLease.DeepCopy(), client.MergeFromWithOptimisticLock{})
	stateLease.Annotations = withAnnotation(stateLease.Annotations, liqojanitor.FenceStateAnnotation, after.String())
	if err := a.c.Patch(ctx, stateLease, patch); err != nil {
		return nil, fmt.Errorf("recording the observation: %w", err)
	}
	return stateLease, nil
}

// publish writes on the consumer's Lease what the agent shows the consumer (fence rule 2): its contract,
// armed-at, seen-rv, its status and a copy of its fence record, patched at the resourceVersion it read
// (a renewal since wins; the next poll publishes again).
func (a *Agent) publish(ctx context.Context, lease *coordinationv1.Lease, contract liqojanitor.FenceContract, v verdict) error {
	want := map[string]string{liqojanitor.FenceContractAnnotation: contract.String(), liqojanitor.SeenRVAnnotation: v.state.SeenRV}
	want[liqojanitor.ArmedAtAnnotation] = ""
	if v.state.ArmedAt != nil {
		want[liqojanitor.ArmedAtAnnotation] = v.state.ArmedAt.UTC().Format(time.RFC3339Nano)
	}
	switch {
	case v.state.Fence != nil:
		want[liqojanitor.FenceStatusAnnotation] = "fenced: renewals change nothing until the provider's admin runs kubectl liqo-janitor unfence"
		want[liqojanitor.ProviderFencedAnnotation] = v.state.Fence.String()
	case v.refused != nil:
		want[liqojanitor.FenceStatusAnnotation] = "not armed: " + v.refused.Error()
	case v.state.ArmedAt == nil:
		want[liqojanitor.FenceStatusAnnotation] = "waiting for the consumer's first renewal"
	default:
		want[liqojanitor.FenceStatusAnnotation] = ""
	}
	patch := client.MergeFromWithOptions(lease.DeepCopy(), client.MergeFromWithOptimisticLock{})
	changed := false
	for k, val := range want {
		if cur, ok := lease.Annotations[k]; (val == "" && ok) || (val != "" && cur != val) {
			changed = true
			lease.Annotations = withAnnotation(lease.Annotations, k, val)
		}
	}
	if !changed {
		return nil
	}
	return a.c.Patch(ctx, lease, patch)
}

// withAnnotation sets key to value in annotations ("" removes it), returning the map.
func withAnnotation(annotations map[string]string, key, value string) map[string]string {
	if value == "" {
		delete(annotations, key)
		return annotations
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[key] = value
	return annotations
}
