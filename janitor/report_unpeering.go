package janitor

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// The unpeering's report (janitor rule 13): what the survey found (internal/unpeering, Survey, run by the
// pass: controller_reconcile.go survey) is written with the cleanup record, with the notes of what Liqo
// leaks, its events on a change and its gauge.

// unpeeringValue is the unpeering record the pass writes with its cleanup record: what the survey
// found, its Since kept from the record on the ForeignCluster while the phase stays ("" when there was no
// survey, or in a dry run, which writes no record).
func (p *reporter) unpeeringValue(s *scope) string {
	u, ok := s.unpeeringFound()
	if !ok || p.options.DryRun {
		return ""
	}
	if prev, ok := liqojanitor.UnpeeringOf(s.fc.Annotations); ok && prev.Phase == u.Phase {
		u.Since = prev.Since
	}
	if u.Since == "" {
		u.Since = p.clock.Now().UTC().Format(time.RFC3339)
	}
	return u.String()
}

// noteLeaks adds to the unpeering record what Liqo leaks and nobody else says: once liqo-janitor released
// a control-plane identity Secret's crdreplicator.liqo.io/operator, Liqo's crd-replicator never stops that
// cluster's reflector (its Secret controller ignores the Secret's deletion when it no longer carries the
// finalizer: internal/crdReplicator/crdReplicator-operator.go Reconcile, v1.0.3 to v1.2.0), which keeps
// dialling the dead provider until the crd-replicator restarts.
func (p *reporter) noteLeaks(s *scope, next progress) {
	if next.done[secretGVK.Kind] > 0 {
		s.noteUnpeering(reflectorLeak(s.clusterID))
	}
}

// reflectorLeak says that Liqo's crd-replicator keeps a released cluster's reflector, and what to do.
func reflectorLeak(clusterID string) string {
	return fmt.Sprintf("liqo-janitor released the identity Secret of cluster %s: Liqo's crd-replicator keeps its reflector and "+
		"retries the dead endpoint until it restarts (kubectl -n liqo rollout restart deployment liqo-crd-replicator)", clusterID)
}

// unpeered makes the unpeering visible after the pass wrote its record (janitor rule 13): one
// UnpeeringComplete event on the record's transition to complete — once per unpeering, whichever replica
// writes it — and an UnpeeringInProgress event whenever what is left changes; the
// liqo_janitor_unpeering_objects gauge. A dry run writes no record and sends no unpeering event.
func (p *reporter) unpeered(ctx context.Context, s *scope) {
	next, ok := s.unpeeringFound()
	if !ok {
		return
	}
	p.memory.unpeeringLeft(s.fc, next)
	p.publishUnpeering()
	pinnedVolumesGauge.Set(float64(p.memory.pinnedVolumes()))
	if p.options.DryRun {
		return
	}
	prev, _ := liqojanitor.UnpeeringOf(s.fc.Annotations)
	switch {
	case next.Complete() && !prev.Complete():
		ctrl.LoggerFrom(ctx).Info("Unpeering complete", "tenantNamespace", prev.TenantNamespace)
		p.recorder.Eventf(s.fc, nil, "Normal", "UnpeeringComplete", "Unpeer",
			"Unpeering complete: the consumer's side of the peering with cluster %s is gone (%s); the ForeignCluster may now be deleted%s%s",
			s.clusterID, liqojanitor.UnpeeringCompleteWhat, reasonGiven(s.fc), pinnedLine(next))
	case !next.Complete() && leftChanged(prev, next):
		p.recorder.Eventf(s.fc, nil, "Normal", "UnpeeringInProgress", "Unpeer", "%s", truncate(next.Summary(), maxEventMessage))
	}
}

// pinnedLine is the second line of the UnpeeringComplete event: the volumes pinned to the cluster, if any.
func pinnedLine(u liqojanitor.Unpeering) string {
	if line := liqojanitor.PinnedVolumesLine(u.PinnedVolumes, u.ClusterID); line != "" {
		return "\n" + line
	}
	return ""
}

// leftChanged reports whether the objects left, and what holds them, differ between two records.
func leftChanged(prev, next liqojanitor.Unpeering) bool {
	return prev.Phase != next.Phase || prev.More != next.More || prev.PinnedVolumes != next.PinnedVolumes || !slices.Equal(prev.Left, next.Left) || !slices.Equal(prev.Notes, next.Notes)
}

// maxEventMessage bounds an event's message (the API server refuses more than 1 KiB in a note).
const maxEventMessage = 1000

// publishUnpeering sets liqo_janitor_unpeering_objects to the sums, per kind and releasability, over the
// remembered clusters.
func (p *reporter) publishUnpeering() {
	unpeeringObjects.Reset()
	for key, n := range p.memory.unpeeringByKind() {
		unpeeringObjects.WithLabelValues(key.kind, strconv.FormatBool(key.releasable)).Set(float64(n))
	}
}
