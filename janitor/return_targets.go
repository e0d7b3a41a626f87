package janitor

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

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

// recordsConfigMap holds the janitor's records that live in its own namespace.
const recordsConfigMap = "liqo-janitor-records"

// targetsRecord is what the janitor keeps of a marked ForeignCluster's provider.
type targetsRecord struct {
	// Mark is the marked-at stamp of the mark the record belongs to ("" without the gate's stamp).
	Mark    string              `json:"mark"`
	Targets liqojanitor.Targets `json:"targets"`
	From    string              `json:"from,omitempty"`
	At      metav1.Time         `json:"at"`
	// Return is the provider's return seen for this mark (janitor rule 17), nil until then.
	Return *keptReturn `json:"return,omitempty"`
}

// hasTargets reports whether the record holds somewhere to probe.
func (r targetsRecord) hasTargets() bool { return r.Targets.APIServer != "" || r.Targets.Proxy != "" }

// keptReturn is a return as the janitor keeps it in its namespace: when (to the millisecond, as its record
// on the ForeignCluster says it) and what showed it.
type keptReturn struct {
	At  string `json:"at"`
	How string `json:"how"`
}

// targetStore reads and writes the records in the janitor's namespace (nothing when it has none).
type targetStore struct {
	client    client.Client
	reader    client.Reader
	namespace string
}

// all reads every record, by ForeignCluster UID.
func (s targetStore) all(ctx context.Context) (map[types.UID]targetsRecord, error) {
	out := map[types.UID]targetsRecord{}
	if s.namespace == "" {
		return out, nil
	}
	cm := &corev1.ConfigMap{}
	switch err := s.reader.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: recordsConfigMap}, cm); {
	case apierrors.IsNotFound(err):
		return out, nil
	case err != nil:
		return nil, fmt.Errorf("reading the janitor's records (ConfigMap %s/%s): %w", s.namespace, recordsConfigMap, err)
	}
	for key, value := range cm.Data {
		var rec targetsRecord
		if json.Unmarshal([]byte(value), &rec) == nil {
			out[types.UID(key)] = rec
		}
	}
	return out, nil
}

// of is the record of fc's current mark, if the janitor keeps one.
func (s targetStore) of(ctx context.Context, fc *liqov1beta1.ForeignCluster) (targetsRecord, bool, error) {
	recs, err := s.all(ctx)
	if err != nil {
		return targetsRecord{}, false, err
	}
	rec, ok := recs[fc.UID]
	return rec, ok && rec.ofMark(fc), nil
}

// ofMark reports whether the record belongs to fc's current mark.
func (r targetsRecord) ofMark(fc *liqov1beta1.ForeignCluster) bool {
	return r.Mark == fc.Annotations[liqojanitor.MarkedAtAnnotation]
}

// keep writes rec for fc (creating the ConfigMap the first time); a dry run keeps nothing.
func (s targetStore) keep(ctx context.Context, fc *liqov1beta1.ForeignCluster, rec targetsRecord) error {
	value, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: recordsConfigMap,
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
	if s.namespace == "" {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{"data": map[string]any{string(uid): nil}})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: recordsConfigMap}}
	return client.IgnoreNotFound(s.client.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch)))
}

// KeptTargets reads, from one of the janitor's records ConfigMaps (RecordsConfigMap), the probe targets it
// kept for fc's current mark (janitor rule 16): where they came from, and when it kept them.
func KeptTargets(cm *corev1.ConfigMap, fc *liqov1beta1.ForeignCluster) (t liqojanitor.Targets, from string, at time.Time, ok bool) {
	var rec targetsRecord
	if json.Unmarshal([]byte(cm.Data[string(fc.UID)]), &rec) != nil || !rec.ofMark(fc) || !rec.hasTargets() {
		return liqojanitor.Targets{}, "", time.Time{}, false
	}
	return rec.Targets, rec.From, rec.At.Time, true
}

// RecordsConfigMap is the name of the ConfigMap in the janitor's namespace that holds its probe targets and
// kept returns (janitor rules 16, 17).
const RecordsConfigMap = recordsConfigMap
