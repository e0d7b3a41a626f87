package janitor

import (
	"context"
	"fmt"
	"strings"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor/internal/records"
)

// The janitor's records belong to one mark (janitor rule 15). The gate removes the records of a mark
// with it (gate rule 7: first-seen-at, grace-ends-at, a grace-window plan, the unpeering record), and the
// janitor reads a time record older than marked-at as an earlier mark's (markRecord, recordedReturn). An
// unmark made while the gate was down leaves them, and without the gate's stamps a record cannot be told
// from the next mark's: the next mark would have no grace window at all, or, when the earlier mark had seen
// its provider answer, never be acted on. So when the janitor sees a ForeignCluster without the mark that
// still carries them, it ends them itself: it removes what the gate would have removed, and an earlier
// mark's return record stays as history under liqojanitor.EndedMarkPrefix, which no reader takes for a
// current return.

// staleRecords is the patch that ends, on an unmarked ForeignCluster, the janitor's records of the mark it
// had (nil when there is nothing to end): the keys the gate removes with a mark set to null, and a return
// record kept as history.
func staleRecords(fc *liqov1beta1.ForeignCluster) map[string]any {
	out := map[string]any{}
	for _, key := range []string{liqojanitor.FirstSeenAnnotation, liqojanitor.GraceEndsAnnotation, liqojanitor.UnpeeringAnnotation} {
		if _, ok := fc.Annotations[key]; ok {
			out[key] = nil
		}
	}
	switch cleanup := fc.Annotations[liqojanitor.CleanupAnnotation]; {
	case strings.HasPrefix(cleanup, liqojanitor.GracePlanPrefix):
		out[liqojanitor.CleanupAnnotation] = nil
	case strings.HasPrefix(cleanup, liqojanitor.ReturnedPrefix):
		out[liqojanitor.CleanupAnnotation] = liqojanitor.EndedMarkPrefix + cleanup
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// endStaleRecords ends the records of a removed mark on fc (staleRecords), onto the version read: a
// conflict or a refusal by another admission webhook is an error, retried with the controller's backoff.
// A dry run writes nothing.
func (r *reconciler) endStaleRecords(ctx context.Context, fc *liqov1beta1.ForeignCluster) error {
	stale := staleRecords(fc)
	if stale == nil || r.options.DryRun {
		return nil
	}
	if err := records.PatchAnnotations(ctx, r.client, fc.Name, fc.ResourceVersion, stale); err != nil {
		return fmt.Errorf("ending the records of the removed mark: %w", err)
	}
	return nil
}
