package janitor

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
