package volumes

import (
	"context"
	"fmt"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/janitor"
)

// scope is what one release knows: the consumer, the dead ForeignCluster as first read, the janitor's
// namespace, the dead cluster's virtual nodes and the volumes pinned to it.
type scope struct {
	c         client.Client
	fc        *liqov1beta1.ForeignCluster
	clusterID string
	janitorNS cli.JanitorNamespace
	// nodes are the names of the dead cluster's virtual nodes: its VirtualNodes (spec.clusterID) and
	// those the janitor kept at its first sight of the mark (the unpeering deletes them) — the pod
	// rule's tie of a Node to a cluster (janitor.PlanVolumes), read once for the plan and the waits.
	nodes   map[string]bool
	volumes []liqojanitor.PinnedVolume
}

// newScope resolves the ForeignCluster, refuses unless it is dead (deadness, dead.go), and lists the
// volumes pinned to it with the janitor's own rule (janitor.PlanVolumes).
func (o *Options) newScope(ctx context.Context) (*scope, error) {
	c, fc, err := o.Factory.Resolve(ctx, o.ForeignCluster)
	if err != nil {
		return nil, err
	}
	ns, err := cli.FindJanitorNamespace(ctx, c, o.JanitorNamespace)
	if err != nil {
		return nil, fmt.Errorf("%w; release-volumes reads the janitor's records there: nothing was changed", err)
	}
	s := &scope{c: c, fc: fc, clusterID: string(fc.Spec.ClusterID), janitorNS: ns}
	kept, err := s.deadness(ctx, fc)
	if err != nil {
		return nil, err
	}
	plan, err := janitor.PlanVolumes(ctx, c, s.clusterID, kept)
	if err != nil {
		return nil, err
	}
	s.nodes, s.volumes = plan.Nodes, plan.Volumes
	return s, nil
}
