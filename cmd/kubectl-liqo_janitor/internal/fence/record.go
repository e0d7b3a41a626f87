package fence

import (
	"context"
	"fmt"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
)

// VerifiedClean starts the counts of the fenced record of a fence that found nothing of this consumer on
// the identified provider: "verified clean (shadowpods 0, pods 0)". Like any fence record it ends the
// returned-provider alarm.
const VerifiedClean = "verified clean"

// record writes the fenced record on the ForeignCluster: a merge patch of that one annotation, the
// user the consumer's API server takes the plugin's requests to come from.
func (o *Options) record(ctx context.Context, s *scope, res *Result) error {
	user, err := cli.WhoAmI(ctx, s.consumer)
	if err != nil {
		return fmt.Errorf("the provider is fenced (%s), but %w; nothing was recorded on the ForeignCluster", res.Counts, err)
	}
	value := liqojanitor.FenceRecord{At: time.Now(), By: user, Counts: res.Counts}.String()
	target := &liqov1beta1.ForeignCluster{}
	target.Name = s.fc.Name
	if err := s.consumer.Patch(ctx, target, cli.AnnotationsPatch(map[string]string{liqojanitor.FencedAnnotation: value}, nil)); err != nil {
		return fmt.Errorf("the provider is fenced (%s), but recording it on ForeignCluster %s failed: %w; record it with "+
			"kubectl annotate foreigncluster %s %s=%q", res.Counts, s.fc.Name, err, s.fc.Name, liqojanitor.FencedAnnotation, value)
	}
	o.Factory.PrintWarnings()
	res.Record = value
	return nil
}
