package janitor

import (
	"context"
	"fmt"
	"sync"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor/internal/records"
)

// A return is seen whatever Liqo forgot (janitor rule 16). After `liqoctl force unpeer` deletes the tenant
// namespace, Liqo's foreigncluster controller rebuilds the status without apiServerUrl and foreignProxyUrl
// (foreigncluster-controller/status.go clearStatusExceptConditions, and handleAuthenticationModuleStatus
// fills them only from the Identity, which went with the namespace; v1.0.3 to v1.2.0), and its API-server
// checker then deletes APIServerStatus (apiserverchecker.go handleAPIServerChecker, needCondition). So the
// janitor keeps, at its first sight of a confirmed mark, where the provider's API server is and how Liqo
// reaches it — the status' URLs, and the control-plane Identity's spec.authParams (apiServer, proxyURL,
// ca: what Liqo's identity kubeconfig is made of, pkg/utils/kubeconfig GenerateKubeconfig) — in its own
// namespace (the ConfigMap liqo-janitor-records, one key per ForeignCluster UID), where no ForeignCluster
// writer can change them, and probes those for as long as the mark stays. The record belongs to its mark
// (its marked-at); a new mark takes new targets.

//
// A return is never forgotten (janitor rule 17). The janitor records a return on the ForeignCluster
// (returnSummary), but another admission webhook may refuse that write: Liqo's fc.mutate.liqo.io, with
// failurePolicy Fail, while Liqo's webhook pod is down (deployments/liqo/templates/webhooks, v1.0.3 to
// v1.2.0). So the return is kept first in the same ConfigMap, which no ForeignCluster webhook guards, and
// every leader reads the ConfigMap before its first verdict: a restart or a failover never forgets a
// return, and never releases again after it.

// targetStore reads and writes the records in the janitor's namespace (janitor/internal/records: every write
// of the janitor to what it owns is there).
type targetStore = records.Store

// The volumes released from a cluster are never forgotten (janitor rule 23). `kubectl liqo-janitor
// release-volumes` records on the ForeignCluster which remote PVCs' data it abandoned, and the gate stamps
// the record (gate rule 32); but unmarking drops it, and the ForeignCluster may be deleted. So the janitor
// merges every stamped record it sees on a marked ForeignCluster into ConfigMap
// liqojanitor.ReleasedVolumesConfigMap in its namespace, under the cluster ID, never dropping a volume, and
// the gate warns from there when that cluster ID is peered again.

// releasedCopy keeps the janitor's copy of the released-volumes records, remembering the record it last
// merged for each cluster ID so that a pass writes only a new one.
type releasedCopy struct {
	store  targetStore
	dryRun bool
	mu     sync.Mutex
	merged map[string]string
}

func newReleasedCopy(store targetStore, o Options) *releasedCopy {
	return &releasedCopy{store: store, dryRun: o.DryRun, merged: map[string]string{}}
}

// keep merges fc's released-volumes record into the janitor's copy, when fc is marked and the record is
// the gate's (it parses and carries its stamp); a dry run keeps nothing.
func (c *releasedCopy) keep(ctx context.Context, fc *liqov1beta1.ForeignCluster) error {
	value := fc.Annotations[liqojanitor.VolumesReleasedAnnotation]
	rec, ok := liqojanitor.ParseVolumesReleased(value)
	if _, stamped := rec.StampedAt(); c.dryRun || !ok || !stamped || !liqojanitor.IsMarked(fc.Annotations) {
		return nil
	}
	id := string(fc.Spec.ClusterID)
	c.mu.Lock()
	done := c.merged[id] == value
	c.mu.Unlock()
	if done {
		return nil
	}
	if err := c.store.MergeReleased(ctx, id, rec); err != nil {
		return fmt.Errorf("keeping the volumes released from %s: %w", id, err)
	}
	c.mu.Lock()
	c.merged[id] = value
	c.mu.Unlock()
	return nil
}
