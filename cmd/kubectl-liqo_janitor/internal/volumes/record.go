package volumes

import (
	"context"
	"fmt"
	"slices"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// record writes the released volumes on the ForeignCluster (liqojanitor.VolumesReleasedAnnotation, gate
// rule 32): the volumes of the record already there and those released now, with the time and the user
// the API server takes the plugin to be (the gate's mutating webhook stamps both, and refuses the record
// without the break-glass verb). A merge patch of that one annotation, locked on the resourceVersion read,
// so that a concurrent release's volumes are never dropped; retried on a conflict.
func (o *Options) record(ctx context.Context, s *scope, res *Result) error {
	if len(res.volumes) == 0 {
		return nil
	}
	user, err := cli.WhoAmI(ctx, s.c)
	if err != nil {
		return fmt.Errorf("%w; the release is not recorded on ForeignCluster %s", err, output.Printable(s.fc.Name))
	}
	var value string
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fc := &liqov1beta1.ForeignCluster{}
		if err := s.c.Get(ctx, client.ObjectKeyFromObject(s.fc), fc); err != nil {
			return err
		}
		orig := fc.DeepCopy()
		value = merged(fc.Annotations[liqojanitor.VolumesReleasedAnnotation], res.volumes, user, time.Now()).String()
		if fc.Annotations == nil {
			fc.Annotations = map[string]string{}
		}
		fc.Annotations[liqojanitor.VolumesReleasedAnnotation] = value
		return s.c.Patch(ctx, fc, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	})
	if err != nil {
		return fmt.Errorf("the volumes are released, but recording it on ForeignCluster %s failed: %w; record it with "+
			"kubectl annotate foreigncluster %s %s=%q --overwrite", s.fc.Name, err, s.fc.Name, liqojanitor.VolumesReleasedAnnotation, value)
	}
	o.Factory.PrintWarnings()
	res.Record = output.Printable(value)
	return nil
}

// merged is the record of the volumes in the record old (a VolumesReleasedAnnotation value, "" for none)
// and of released, as of at by user.
func merged(old string, released []liqojanitor.ReleasedVolume, user string, at time.Time) liqojanitor.VolumesReleased {
	prev, _ := liqojanitor.ParseVolumesReleased(old)
	out := liqojanitor.VolumesReleased{At: at.UTC().Format(time.RFC3339), By: user, Volumes: slices.Clone(prev.Volumes)}
	for _, v := range released {
		if !slices.ContainsFunc(out.Volumes, func(r liqojanitor.ReleasedVolume) bool { return r.UID == v.UID }) {
			out.Volumes = append(out.Volumes, v)
		}
	}
	return out
}
