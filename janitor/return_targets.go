package janitor

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
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

// targetStore reads and writes the records in the janitor's namespace.
type targetStore struct {
	client    client.Client
	reader    client.Reader
	namespace string
}

// all reads every record, by ForeignCluster UID.
func (s targetStore) all(ctx context.Context) (map[types.UID]liqojanitor.KeptRecord, error) {
	cm := &corev1.ConfigMap{}
	switch err := s.reader.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: liqojanitor.RecordsConfigMap}, cm); {
	case apierrors.IsNotFound(err):
		return map[types.UID]liqojanitor.KeptRecord{}, nil
	case err != nil:
		return nil, fmt.Errorf("reading the janitor's records (ConfigMap %s/%s): %w", s.namespace, liqojanitor.RecordsConfigMap, err)
	}
	return liqojanitor.KeptRecords(cm), nil
}

// of is the record of fc's current mark, if the janitor keeps one.
func (s targetStore) of(ctx context.Context, fc *liqov1beta1.ForeignCluster) (liqojanitor.KeptRecord, bool, error) {
	recs, err := s.all(ctx)
	if err != nil {
		return liqojanitor.KeptRecord{}, false, err
	}
	rec, ok := recs[fc.UID]
	return rec, ok && rec.OfMark(fc.Annotations), nil
}

// keep writes rec for fc (creating the ConfigMap the first time); a dry run keeps nothing.
func (s targetStore) keep(ctx context.Context, fc *liqov1beta1.ForeignCluster, rec liqojanitor.KeptRecord) error {
	value, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: liqojanitor.RecordsConfigMap,
		Labels: map[string]string{"app.kubernetes.io/name": liqojanitor.Name}}, Data: map[string]string{string(fc.UID): string(value)}}
	err = s.client.Create(ctx, cm)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	patch, _ := json.Marshal(map[string]any{"data": map[string]string{string(fc.UID): string(value)}})
	return s.client.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch))
}

// drop drops fc's record (its mark went, or it is gone).
func (s targetStore) drop(ctx context.Context, uid types.UID) error {
	patch, _ := json.Marshal(map[string]any{"data": map[string]any{string(uid): nil}})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: liqojanitor.RecordsConfigMap}}
	return client.IgnoreNotFound(s.client.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch)))
}

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
	if err := c.store.mergeReleased(ctx, id, rec); err != nil {
		return fmt.Errorf("keeping the volumes released from %s: %w", id, err)
	}
	c.mu.Lock()
	c.merged[id] = value
	c.mu.Unlock()
	return nil
}

// mergeReleased merges rec into the copy of clusterID's released volumes (creating the ConfigMap the first
// time), read live and patched under the optimistic lock: a concurrent write is a conflict, retried by the
// next pass, never a lost volume. A record that adds no volume writes nothing.
func (s targetStore) mergeReleased(ctx context.Context, clusterID string, rec liqojanitor.VolumesReleased) error {
	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: s.namespace, Name: liqojanitor.ReleasedVolumesConfigMap}
	switch err := s.reader.Get(ctx, key, cm); {
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: liqojanitor.ReleasedVolumesConfigMap,
			Labels: map[string]string{"app.kubernetes.io/name": liqojanitor.Name}}, Data: map[string]string{clusterID: rec.String()}}
		return s.client.Create(ctx, cm)
	case err != nil:
		return fmt.Errorf("reading ConfigMap %s: %w", key, err)
	}
	kept, _ := liqojanitor.ReleasedVolumesOf(cm, clusterID)
	merged, added := kept.Merge(rec)
	if !added {
		return nil
	}
	orig := cm.DeepCopy()
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[clusterID] = merged.String()
	return s.client.Patch(ctx, cm, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}
