package records

import (
	"context"
	"encoding/json"
	"fmt"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// Store reads and writes the janitor's records in its namespace (Namespace): the ConfigMap
// liqojanitor.RecordsConfigMap, one key per ForeignCluster UID (probe targets, returns: janitor rules 16 and
// 17), and its copy of the released volumes (janitor rule 23). Client writes, Reader reads (live).
type Store struct {
	Client    client.Client
	Reader    client.Reader
	Namespace string
}

// All reads every record, by ForeignCluster UID.
func (s Store) All(ctx context.Context) (map[types.UID]liqojanitor.KeptRecord, error) {
	cm := &corev1.ConfigMap{}
	switch err := s.Reader.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: liqojanitor.RecordsConfigMap}, cm); {
	case apierrors.IsNotFound(err):
		return map[types.UID]liqojanitor.KeptRecord{}, nil
	case err != nil:
		return nil, fmt.Errorf("reading the janitor's records (ConfigMap %s/%s): %w", s.Namespace, liqojanitor.RecordsConfigMap, err)
	}
	return liqojanitor.KeptRecords(cm), nil
}

// Of is the record of fc's current mark, if the janitor keeps one.
func (s Store) Of(ctx context.Context, fc *liqov1beta1.ForeignCluster) (liqojanitor.KeptRecord, bool, error) {
	recs, err := s.All(ctx)
	if err != nil {
		return liqojanitor.KeptRecord{}, false, err
	}
	rec, ok := recs[fc.UID]
	return rec, ok && rec.OfMark(fc.Annotations), nil
}

// Keep writes rec for fc (creating the ConfigMap the first time); a dry run keeps nothing.
func (s Store) Keep(ctx context.Context, fc *liqov1beta1.ForeignCluster, rec liqojanitor.KeptRecord) error {
	value := rec.String()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: liqojanitor.RecordsConfigMap,
		Labels: map[string]string{"app.kubernetes.io/name": liqojanitor.Name}}, Data: map[string]string{string(fc.UID): value}}
	err := s.Client.Create(ctx, cm)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	patch, _ := json.Marshal(map[string]any{"data": map[string]string{string(fc.UID): value}})
	return s.Client.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch))
}

// Drop drops fc's record (its mark went, or it is gone).
func (s Store) Drop(ctx context.Context, uid types.UID) error {
	patch, _ := json.Marshal(map[string]any{"data": map[string]any{string(uid): nil}})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: liqojanitor.RecordsConfigMap}}
	return client.IgnoreNotFound(s.Client.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch)))
}

// MergeReleased merges rec into the copy of clusterID's released volumes (creating the ConfigMap the first
// time), read live and patched under the optimistic lock: a concurrent write is a conflict, retried by the
// next pass, never a lost volume. A record that adds no volume writes nothing.
func (s Store) MergeReleased(ctx context.Context, clusterID string, rec liqojanitor.VolumesReleased) error {
	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: s.Namespace, Name: liqojanitor.ReleasedVolumesConfigMap}
	switch err := s.Reader.Get(ctx, key, cm); {
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: liqojanitor.ReleasedVolumesConfigMap,
			Labels: map[string]string{"app.kubernetes.io/name": liqojanitor.Name}}, Data: map[string]string{clusterID: rec.String()}}
		return s.Client.Create(ctx, cm)
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
	return s.Client.Patch(ctx, cm, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}
