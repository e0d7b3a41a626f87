package liqojanitor

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The janitor's records in its own namespace (janitor rules 16 and 17): the ConfigMap RecordsConfigMap (keys.go),
// one key per ForeignCluster UID, each a KeptRecord as JSON. No ForeignCluster writer (nor another
// admission webhook on ForeignClusters) can change them; the janitor writes them, and the gate and the
// plugin read them there — in the janitor's namespace only, never a look-alike elsewhere.

// KeptRecord is what the janitor keeps of one marked ForeignCluster's provider, for one mark.
type KeptRecord struct {
	// Mark is the marked-at stamp of the mark the record belongs to ("" without the gate's stamp).
	Mark    string      `json:"mark"`
	Targets Targets     `json:"targets"`
	From    string      `json:"from,omitempty"`
	At      metav1.Time `json:"at"`
	// VirtualNodes are the names of the cluster's VirtualNodes (spec.clusterID) at the janitor's first
	// sight of the mark: the pod rule's tie of a Node to the cluster, kept for after the unpeering deleted
	// them (a volume pinned to the cluster names one of them as its selected node, PinnedVolume).
	VirtualNodes []string `json:"virtualNodes,omitempty"`
	// RemoteNamespaces maps each namespace offloaded to the cluster to its namespace there, at the janitor's
	// first sight of the mark (the NamespaceMap and NamespaceOffloading go with the unpeering): where a
	// pinned volume's data is (PinnedVolume.RemoteNamespace).
	RemoteNamespaces map[string]string `json:"remoteNamespaces,omitempty"`
	// Return is the provider's return seen for this mark (janitor rule 17), nil until then.
	Return *KeptReturn `json:"return,omitempty"`
}

// KeptReturn is a return as the janitor keeps it: when (to the millisecond, as its record on the
// ForeignCluster says it), what showed it, and whether its ProviderReturned event was sent for this mark.
type KeptReturn struct {
	At  string `json:"at"`
	How string `json:"how"`
	// Told says the janitor sent ProviderReturned for this return (janitor rule 17): a kept return not yet
	// told is told by the next pass, whichever leader runs it, so that exactly one event is sent.
	Told bool `json:"told,omitempty"`
	// Fenced says the janitor saw the operator's stamped fence of this return on the ForeignCluster: the
	// return no longer counts among the returned clusters, even once the ForeignCluster is gone.
	Fenced bool `json:"fenced,omitempty"`
}

// String is the record as the records ConfigMap holds it (JSON; KeptRecords and KeptRecordOf read it).
func (r KeptRecord) String() string {
	b, _ := json.Marshal(r) // strings, a time and maps of strings: it always marshals
	return string(b)
}

// HasTargets reports whether the record holds somewhere to probe.
func (r KeptRecord) HasTargets() bool { return r.Targets.APIServer != "" || r.Targets.Proxy != "" }

// OfMark reports whether the record belongs to the current mark of a ForeignCluster with these annotations.
func (r KeptRecord) OfMark(annotations map[string]string) bool {
	return r.Mark == annotations[MarkedAtAnnotation]
}

// KeptRecords reads every record of the janitor's records ConfigMap, by ForeignCluster UID; a value that
// does not parse is left out.
func KeptRecords(cm *corev1.ConfigMap) map[types.UID]KeptRecord {
	out := map[types.UID]KeptRecord{}
	for key, value := range cm.Data {
		var rec KeptRecord
		if json.Unmarshal([]byte(value), &rec) == nil {
			out[types.UID(key)] = rec
		}
	}
	return out
}

// KeptRecordOf is the record the janitor keeps in cm for the current mark of the ForeignCluster with uid
// and annotations, if any.
func KeptRecordOf(cm *corev1.ConfigMap, uid types.UID, annotations map[string]string) (KeptRecord, bool) {
	var rec KeptRecord
	if json.Unmarshal([]byte(cm.Data[string(uid)]), &rec) != nil || !rec.OfMark(annotations) {
		return KeptRecord{}, false
	}
	return rec, true
}

// The janitor's copy of the records (gate rule 32, janitor rule 23): ConfigMap ReleasedVolumesConfigMap in
// its namespace, one key per cluster ID, each a VolumesReleased as JSON listing every volume released under
// any mark of that cluster (the janitor merges and never deletes an entry). The janitor writes it; the gate
// reads it to warn when the cluster is peered again — in the janitor's namespace only.

// ReleasedVolumesOf is the record cm keeps for clusterID, if one parses.
func ReleasedVolumesOf(cm *corev1.ConfigMap, clusterID string) (VolumesReleased, bool) {
	return ParseVolumesReleased(cm.Data[clusterID])
}

// ReleasedVolumesRecords reads every record of the ConfigMap, by cluster ID; a value that does not parse is
// left out.
func ReleasedVolumesRecords(cm *corev1.ConfigMap) map[string]VolumesReleased {
	out := map[string]VolumesReleased{}
	for id, value := range cm.Data {
		if r, ok := ParseVolumesReleased(value); ok {
			out[id] = r
		}
	}
	return out
}
