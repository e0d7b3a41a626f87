package janitor

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor/internal/podwatch"
	"github.com/liqo-janitor/liqo-janitor/janitor/internal/unpeering"
)

// Plan is what the janitor would release for a marked ForeignCluster if its grace period ended now —
// computed by the same targets and selection as a clean-up (janitor rule 9), writing nothing. It is the
// "plan" of the plugin's `plan -o json|yaml` document (kind PlanReport, apiVersion
// plugin.liqo-janitor.io/v1alpha1): its JSON names are that document's schema, changed only with its
// version. One word per meaning: Wait is why the janitor leaves the cluster alone (a WaitReason);
// Kinds[].ForLiqo counts the objects kept until Liqo has done its part; Offloadings are the
// NamespaceOffloadings so kept, and why.
type Plan struct {
	// ForeignCluster and ClusterID name the cluster.
	ForeignCluster string `json:"foreignCluster"`
	ClusterID      string `json:"clusterID"`
	// Wait is why the janitor leaves the cluster alone now: NotWaiting when it would release at once,
	// WaitGracePeriod while the grace period runs, WaitFenceDeadline while the provider may not have fenced
	// itself yet and WaitFenceUnreadable while the janitor cannot read its record of that (janitor rule 22:
	// the plan is what it would release after those holds), or a reason that holds beyond them
	// (unconfirmed, reachable, paused, a duplicate), for which nothing would be released when they end.
	Wait WaitReason `json:"wait,omitempty"`
	// GraceLeft is what remains of the grace period, while it runs (with WaitGracePeriod, or with a fence
	// wait that ends later).
	GraceLeft time.Duration `json:"graceLeft,omitempty"`
	// FenceDeadline is when the provider has surely fenced this consumer — its last renewal that may have
	// landed plus the contract's SafeAfter, on this consumer's clock (liqojanitor.FenceRenewal.Deadline) — past
	// or ahead; the janitor releases nothing of the cluster before it (janitor rule 22). Zero without a
	// provider-side fence: no record, no contract, or no renewal that may have landed (the provider's copies
	// may then still run).
	FenceDeadline time.Time `json:"fenceDeadline,omitzero"`
	// FenceContract is the provider's contract FenceDeadline was computed from, as the provider published it
	// (liqojanitor.FenceContract's JSON: liqojanitor.ParseFenceContract reads it); "" without one.
	FenceContract string `json:"fenceContract,omitempty"`
	// FenceLeft is how long until FenceDeadline (WaitFenceDeadline only).
	FenceLeft time.Duration `json:"fenceLeft,omitempty"`
	// FenceUnreadable is why the janitor's record of the provider's fence cannot be read (WaitFenceUnreadable
	// only): it releases nothing until it can.
	FenceUnreadable string `json:"fenceUnreadable,omitempty"`
	// Kinds are the targets with objects, in table order.
	Kinds []PlannedKind `json:"kinds"`
	// Offloadings are the NamespaceOffloadings that would be kept until Liqo has done its part, and why.
	Offloadings []KeptOffloading `json:"offloadings,omitempty"`
	// PinnedVolumes counts the PVCs of Liqo's virtual storage class pinned to the cluster (its workloads
	// cannot run anywhere until they are released; the janitor never releases them), and Volumes names the
	// first liqojanitor.MaxPinnedVolumes of them.
	PinnedVolumes int                        `json:"pinnedVolumes,omitempty"`
	Volumes       []liqojanitor.PinnedVolume `json:"volumes,omitempty"`
	// VolumesNotListed says why the volumes could not be listed (the reader may not list them), "" when
	// they were.
	VolumesNotListed string `json:"volumesNotListed,omitempty"`
	// Summary is the plan in the words of the cleanup annotation ("would release pods 4, …; blocked 1";
	// while the provider's fence holds the cluster, led by "waiting for the provider's fence until …, then
	// it").
	Summary string `json:"summary"`
}

// PlannedKind is what the plan does with one kind.
type PlannedKind struct {
	Kind string `json:"kind"`
	// Release is how many objects would be released; Blocked how many stay because of finalizers the
	// janitor does not own (released ones among them); ForLiqo how many are kept until Liqo has done its
	// part.
	Release int `json:"release"`
	Blocked int `json:"blocked"`
	ForLiqo int `json:"forLiqo"`
}

// KeptOffloading is one NamespaceOffloading that would be kept until Liqo has done its part.
type KeptOffloading struct {
	Namespace string `json:"namespace"`
	Why       string `json:"why"`
}

// PlanCluster computes the Plan for the ForeignCluster named name, reading live through c and mc (pods
// are listed per virtual node by field selector; no informers are started). Every write is replaced by
// its outcome, and c is wrapped in a dry-run client besides. The grace window is the running janitor's:
// its grace-ends-at record of the current mark, and without one the cluster is in its grace period, the
// time left unknown (recordedWindow) — o.GracePeriod is not the janitor's --grace-period, so it is not used
// for that. o.Namespace is the janitor's namespace, whose kept returns count (a kept return is a plan of
// nothing); it is required.
func PlanCluster(ctx context.Context, c client.Client, mc metadata.Interface, name string, o Options) (*Plan, error) {
	if o.Namespace == "" {
		return nil, errors.New("planning needs the janitor's namespace (Options.Namespace): the returns it keeps there decide the plan")
	}
	r := newReconciler(client.NewDryRunClient(c), c, podwatch.NewLive(mc), &events.FakeRecorder{}, clock.RealClock{}, o)
	fc, l, v, err := r.assessLive(ctx, name)
	switch {
	case err != nil:
		return nil, err
	case fc == nil:
		return nil, fmt.Errorf("ForeignCluster %s not found: list them with kubectl get foreignclusters", name)
	}
	l = recordedWindow(fc, l, time.Now())
	s := r.newScope(ctx, fc, v)
	end := r.releaser.rehearse(ctx, s)
	if end.err != nil {
		return nil, fmt.Errorf("planning the clean-up of %s: %w", name, end.err)
	}
	t := end.tally
	p := &Plan{ForeignCluster: fc.Name, ClusterID: s.clusterID, Wait: l.Wait, GraceLeft: l.GraceLeft,
		Summary: shownPlan(l, t.planSummary(s.waitingNamespaces()))}
	p.fence(v.fences.holdFor(fc), l)
	for _, kind := range t.kinds {
		k := t.byKind[kind]
		if k.released+k.blocked+k.waiting > 0 {
			p.Kinds = append(p.Kinds, PlannedKind{Kind: kind, Release: k.released, Blocked: k.blocked, ForLiqo: k.waiting})
		}
	}
	for _, w := range s.offloadingWaits() {
		p.Offloadings = append(p.Offloadings, KeptOffloading{Namespace: w.namespace, Why: w.why})
	}
	kept, _, err := r.probe.store.Of(ctx, fc)
	if err != nil {
		return nil, err
	}
	vols, err := unpeering.PinnedVolumes(ctx, c, s.clusterID, kept)
	switch {
	case apierrors.IsForbidden(err): // the plan's reader may lack the storage read rights; the plan stands
		p.VolumesNotListed = fmt.Sprintf("%v (listing pinned volumes needs list on PersistentVolumeClaims, PersistentVolumes, "+
			"StorageClasses and StatefulSets)", err)
	case err != nil:
		return nil, fmt.Errorf("listing the volumes pinned to %s: %w", name, err)
	}
	p.PinnedVolumes, p.Volumes = len(vols), vols[:min(len(vols), liqojanitor.MaxPinnedVolumes)]
	return p, nil
}

// fence adds the provider's fence of the cluster (janitor rule 22) to the plan: its deadline and contract
// whether or not it still holds, and what is left of it or why its record is unreadable while it holds.
func (p *Plan) fence(f fenceHold, l liveness) {
	if !f.deadline.IsZero() {
		p.FenceDeadline, p.FenceContract = f.deadline.UTC(), f.contract.String()
	}
	switch l.Wait {
	case WaitFenceDeadline:
		p.FenceLeft = l.FenceLeft
	case WaitFenceUnreadable:
		p.FenceUnreadable = f.unreadable
	}
}

// VolumePlan is the plan of a release of the volumes pinned to a dead cluster (`kubectl liqo-janitor
// release-volumes`): the cluster's virtual nodes by the pod rule's tie (janitor rule 3: its VirtualNodes now,
// and those kept at first sight of the mark, which the unpeering deletes) and the PVCs pinned to it, listed
// live by the rule of janitor/internal/unpeering/volumes.go.
type VolumePlan struct {
	Nodes   map[string]bool
	Volumes []liqojanitor.PinnedVolume
}

// PlanVolumes reads, live through r, the VolumePlan of clusterID whose first-sight record is kept (the
// janitor's, for the current mark).
func PlanVolumes(ctx context.Context, r client.Reader, clusterID string, kept liqojanitor.KeptRecord) (VolumePlan, error) {
	nodes, err := unpeering.ClusterNodes(ctx, r, clusterID, kept)
	if err != nil {
		return VolumePlan{}, err
	}
	volumes, err := unpeering.PinnedVolumesOn(ctx, r, clusterID, nodes, kept)
	if err != nil {
		return VolumePlan{}, fmt.Errorf("listing the volumes pinned to %s: %w", clusterID, err)
	}
	return VolumePlan{Nodes: nodes, Volumes: volumes}, nil
}
