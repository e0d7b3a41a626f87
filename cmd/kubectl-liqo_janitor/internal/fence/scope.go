package fence

import (
	"context"
	"fmt"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// scope is what one fence knows: the consumer, the marked ForeignCluster, both cluster IDs and the
// provider's API server. A scope exists only for a provider fence identified: providerRead is the Liqo
// cluster ID read on it, which is providerID.
type scope struct {
	consumer            client.Client
	fc                  *liqov1beta1.ForeignCluster
	localID, providerID string
	provider            *providerConn
	providerRead        clusterIDRead
	all                 bool
	// kept is the janitor's record of the provider for this mark, which provider was verified against;
	// ignored the look-alikes of the records elsewhere.
	kept    *kept
	ignored []string
}

// newScope resolves the ForeignCluster (it must be marked), reads this cluster's ID and the janitor's
// record of the provider for the mark, reaches the provider only once its server verified as the one kept
// (kept.go), and checks that it is the provider, not this cluster or another one.
func (o *Options) newScope(ctx context.Context) (*scope, error) {
	c, fc, err := o.Factory.Resolve(ctx, o.ForeignCluster)
	if err != nil {
		return nil, err
	}
	if !liqojanitor.IsMarked(fc.Annotations) {
		return nil, notMarked(fc)
	}
	local, err := readClusterID(ctx, c, o.LiqoNamespace)
	if err != nil {
		return nil, fmt.Errorf("reading this cluster's Liqo cluster ID (--liqo-namespace %s): %w; nothing was read on the provider", o.LiqoNamespace, err)
	}
	s := &scope{consumer: c, fc: fc, localID: local.id, providerID: string(fc.Spec.ClusterID), all: o.All}
	ns, err := cli.FindJanitorNamespace(ctx, c, o.JanitorNamespace)
	if err != nil {
		return nil, fmt.Errorf("%w; fence verifies the provider against what liqo-janitor kept there: nothing was read on the provider or written", err)
	}
	if s.kept, s.ignored, err = readKept(ctx, c, fc, ns); err != nil {
		return nil, err
	}
	if s.provider, err = connectProvider(ctx, c, fc, o.ProviderKubeconfig, s.kept); err != nil {
		return nil, err
	}
	if s.provider.identity {
		if err := checkIdentity(ctx, o.progress(), s.provider, o.All); err != nil {
			return nil, err
		}
	}
	if err := checkNotConsumer(ctx, c, s.provider); err != nil {
		return nil, err
	}
	if s.providerRead, err = checkProviderID(ctx, s.provider, o.ProviderLiqoNamespace, fc, s.localID); err != nil {
		return nil, err
	}
	return s, nil
}

func notMarked(fc *liqov1beta1.ForeignCluster) error {
	name := output.Printable(fc.Name)
	return output.Lines{
		fmt.Sprintf("ForeignCluster %s is not marked permanently unreachable: fence is for a provider this consumer declared dead "+
			"that answers again. Nothing was read on the provider or written.", name),
		"A live provider is unpeered with liqoctl unpeer. To declare this one dead first:",
		"  kubectl liqo-janitor mark " + name + ` --reason "…"`,
	}
}
