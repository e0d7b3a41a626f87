package webhook

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// The gate's webhooks, as the +kubebuilder:webhook markers of gate.go name them.
const (
	mutatingWebhook         = "mforeigncluster.liqo-janitor.io"
	validatingWebhook       = "vforeigncluster.liqo-janitor.io"
	validatingDeleteWebhook = "vforeigncluster-delete.liqo-janitor.io"
)

// MatchConditions are the matchConditions of the gate's webhooks, by webhook name, written from the root
// package's key lists into the configurations controller-gen generates from the markers of gate.go
// (`make manifests`: manifests/chart/liqo-janitor/files/webhooks.yaml, TestMatchConditionsFile), so that
// every key is spelled once, in keys.go or liqo.go.
//
// They make the API server call the gate only for requests it could refuse or must stamp: the validating
// webhook when the mark, a key of a mark (MarkingAnnotations), a stamp (GateStampAnnotations) or one of
// the janitor's own keys (JanitorOwnedAnnotations) is created, changed or removed (rules 1, 2, 6, 12, 14,
// 19, 21, 23, 31), when an operator's record (OperatorRecordAnnotations: the fence record, the deletion
// override, the released-volumes record) is set or changed, marked or not (rules 15, 17, 22, 32), when the
// released-volumes record is removed from a marked cluster (rule 32), when a marked cluster is unpaused
// (rule 10), and when Liqo's labels liqo.io/remote-cluster-id and liqo.io/webhook-skip (MarkLockedLabels)
// change on a marked cluster (rule 11); the mutating webhook only when the mark itself changes (it then
// also drops the operator's records) or a record it stamps (StampedRecordAnnotations) is set on a marked
// cluster (it only stamps and unstamps); the deletion webhook (a third one, verbs delete only, so that the
// CREATE and UPDATE expressions never meet DELETE's null object) only when the ForeignCluster deleted
// carries the mark (rules 16, 17). The peering warning's (a fourth, released.go, failurePolicy Ignore: it
// only warns) comes from its marker, on a CREATE or a change of spec.clusterID (rule 32). Every other
// request on a ForeignCluster — Liqo's status (a subresource the gate never sees), Liqo's labels and
// annotations on an unmarked one, pausing, deleting an unmarked one — never waits for the gate, and never
// blocks when its pods are down.
func MatchConditions() map[string][]admissionregistrationv1.MatchCondition {
	guarded := append(append(append([]string{liqojanitor.MarkAnnotation}, liqojanitor.MarkingAnnotations...),
		liqojanitor.GateStampAnnotations...), liqojanitor.JanitorOwnedAnnotations...)
	cel := strings.NewReplacer(
		"{mark}", celString(liqojanitor.MarkAnnotation),
		"{markValue}", celString(liqojanitor.MarkValue),
		"{paused}", celString(liqojanitor.PausedAnnotation),
		"{volumes}", celString(liqojanitor.VolumesReleasedAnnotation),
		"{guarded}", celList(guarded),
		"{records}", celList(liqojanitor.OperatorRecordAnnotations),
		"{stamped}", celList(liqojanitor.StampedRecordAnnotations),
		"{labels}", celList(liqojanitor.MarkLockedLabels),
	)
	anyOf := func(clauses ...string) string { return cel.Replace(strings.Join(clauses, " || ")) }
	return map[string][]admissionregistrationv1.MatchCondition{
		mutatingWebhook: {{Name: "mark-changes", Expression: anyOf(
			// the mark set by a CREATE
			"(request.operation == 'CREATE' && has(object.metadata.annotations) && {mark} in object.metadata.annotations)",
			// the mark set, changed or removed by an UPDATE
			"(request.operation == 'UPDATE' && ((has(object.metadata.annotations) && {mark} in object.metadata.annotations) ? "+
				"!(has(oldObject.metadata.annotations) && {mark} in oldObject.metadata.annotations && "+
				"oldObject.metadata.annotations[{mark}] == object.metadata.annotations[{mark}]) : "+
				"(has(oldObject.metadata.annotations) && {mark} in oldObject.metadata.annotations)))",
			// a record the gate stamps, set or changed on a marked cluster
			"(request.operation == 'UPDATE' && has(object.metadata.annotations) && {mark} in object.metadata.annotations && "+
				"{stamped}.exists(k, k in object.metadata.annotations && !(has(oldObject.metadata.annotations) && "+
				"k in oldObject.metadata.annotations && oldObject.metadata.annotations[k] == object.metadata.annotations[k])))",
		)}},
		validatingWebhook: {{Name: "guarded-changes", Expression: anyOf(
			// the mark, a key of a mark, a stamp or a key of the janitor's, created, changed or removed
			"{guarded}.exists(k, (has(object.metadata.annotations) && k in object.metadata.annotations) != "+
				"(request.operation == 'UPDATE' && has(oldObject.metadata.annotations) && k in oldObject.metadata.annotations) || "+
				"((has(object.metadata.annotations) && k in object.metadata.annotations) && "+
				"(request.operation == 'UPDATE' && has(oldObject.metadata.annotations) && k in oldObject.metadata.annotations) && "+
				"object.metadata.annotations[k] != oldObject.metadata.annotations[k]))",
			// an operator's record set or changed, marked or not
			"{records}.exists(k, has(object.metadata.annotations) && k in object.metadata.annotations && "+
				"!(request.operation == 'UPDATE' && has(oldObject.metadata.annotations) && k in oldObject.metadata.annotations && "+
				"oldObject.metadata.annotations[k] == object.metadata.annotations[k]))",
			// the released-volumes record removed from a marked cluster (rule 32)
			"(request.operation == 'UPDATE' && has(oldObject.metadata.annotations) && {mark} in oldObject.metadata.annotations && "+
				"{volumes} in oldObject.metadata.annotations && !(has(object.metadata.annotations) && {volumes} in object.metadata.annotations))",
			// a marked cluster unpaused (rule 10)
			"(request.operation == 'UPDATE' && has(oldObject.metadata.annotations) && {paused} in oldObject.metadata.annotations && "+
				"oldObject.metadata.annotations[{paused}] == 'true' && has(object.metadata.annotations) && {mark} in object.metadata.annotations && "+
				"!({paused} in object.metadata.annotations && object.metadata.annotations[{paused}] == 'true'))",
			// Liqo's locked labels added, removed or changed on a cluster marked before or after (rule 11)
			"(request.operation == 'UPDATE' && ((has(oldObject.metadata.annotations) && {mark} in oldObject.metadata.annotations) || "+
				"(has(object.metadata.annotations) && {mark} in object.metadata.annotations)) && "+
				"{labels}.exists(k, (has(object.metadata.labels) && k in object.metadata.labels) != "+
				"(has(oldObject.metadata.labels) && k in oldObject.metadata.labels) || "+
				"((has(object.metadata.labels) && k in object.metadata.labels) && (has(oldObject.metadata.labels) && k in oldObject.metadata.labels) && "+
				"object.metadata.labels[k] != oldObject.metadata.labels[k])))",
		)}},
		validatingDeleteWebhook: {{Name: "marked-deletions", Expression: anyOf(
			"request.operation == 'DELETE' && has(oldObject.metadata.annotations) && {mark} in oldObject.metadata.annotations && " +
				"oldObject.metadata.annotations[{mark}] == {markValue}",
		)}},
	}
}

// celString is s as a CEL string literal; the keys hold neither quotes nor backslashes.
func celString(s string) string {
	return "'" + s + "'"
}

// celList is keys as a CEL list literal of strings.
func celList(keys []string) string {
	quoted := make([]string, len(keys))
	for i, k := range keys {
		quoted[i] = celString(k)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}
