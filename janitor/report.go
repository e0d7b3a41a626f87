package janitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// reporter makes the janitor's passes visible on the ForeignCluster (janitor rule 8): the Waiting event
// of a marked cluster that is not dead, and for a pass over a dead one the phase events (started,
// progress, blocked, waiting for Liqo, done — with counts and the operator's reason), the cleanup
// annotation and the metrics. It returns only its own write errors.
type reporter struct {
	// client writes the cleanup annotation.
	client   client.Client
	recorder events.EventRecorder
	clock    clock.PassiveClock
	memory   *memory
	options  Options
}

// wait records why a marked cluster is left alone (an event when the reason changes), and comes back when
// its grace period ends.
func (p *reporter) wait(ctx context.Context, fc *liqov1beta1.ForeignCluster, l Liveness) ctrl.Result {
	waitsTotal.WithLabelValues(string(l.Wait)).Inc()
	if p.memory.waitChanged(fc, l.Wait) {
		ctrl.LoggerFrom(ctx).Info("Leaving marked ForeignCluster alone", "reason", l.Wait)
		p.recorder.Eventf(fc, nil, "Normal", "Waiting", "Wait", "%s", waitMessage(fc, l))
	}
	if l.Wait == WaitGracePeriod {
		return ctrl.Result{RequeueAfter: l.GraceLeft + 100*time.Millisecond}
	}
	return ctrl.Result{}
}

// planned shows what a cluster in its grace period would release (janitor rule 9): the cleanup
// annotation, e.g. "grace 22s left: would release pods 400, resourceslices 3; blocked 1", and one Waiting
// event with the same numbers, each written when the plan is first made and again only when its numbers
// change (the seconds left are as of that write). It comes back when the grace period ends.
func (p *reporter) planned(ctx context.Context, s *scope, l Liveness, t *tally) (ctrl.Result, error) {
	waitsTotal.WithLabelValues(string(l.Wait)).Inc()
	p.memory.waitChanged(s.fc, l.Wait)
	result := ctrl.Result{RequeueAfter: l.GraceLeft + 100*time.Millisecond}
	plan := t.plan(s.waitingNamespaces())
	if !p.memory.planChanged(s.fc, plan) {
		return result, nil
	}
	ctrl.LoggerFrom(ctx).Info("Grace period: planned the clean-up", "graceLeft", l.GraceLeft.Round(time.Second), "plan", plan)
	p.recorder.Eventf(s.fc, nil, "Normal", "Waiting", "Wait", "%s; then it %s", waitMessage(s.fc, l), plan)
	// Only onto the ForeignCluster the plan was made for: if it changed since (unmarked, paused), the patch
	// fails, writes nothing, and the change's own event decides what comes next.
	err := p.writeSummary(ctx, s, fmt.Sprintf("%s%s left: %s", liqojanitor.GracePlanPrefix, l.GraceLeft.Round(time.Second), plan),
		s.fc.ResourceVersion)
	if apierrors.IsConflict(err) {
		p.memory.planChanged(s.fc, "") // not shown: show it again on the next pass
		return result, nil
	}
	return result, err
}

func waitMessage(fc *liqov1beta1.ForeignCluster, l Liveness) string {
	switch l.Wait {
	case WaitUnconfirmed:
		return fmt.Sprintf("Marked permanently unreachable but not confirmed: nothing is released until %s=%s",
			liqojanitor.ConfirmAnnotation, fc.Spec.ClusterID)
	case WaitReachable:
		return "Marked permanently unreachable, but Liqo sees its API server answering (APIServerStatus Established): nothing is released"
	case WaitPaused:
		return fmt.Sprintf("Paused (%s=true): nothing is released", liqojanitor.PausedAnnotation)
	case WaitDuplicate:
		return fmt.Sprintf("Marked permanently unreachable, but ForeignCluster %s has the same cluster ID %s and is not dead "+
			"(unmarked, unconfirmed, reachable, paused or in its grace period): nothing is released while one ForeignCluster "+
			"of a cluster ID says it is alive; find the stray one with: kubectl get foreignclusters", l.Duplicate, fc.Spec.ClusterID)
	case WaitGracePeriod:
		return fmt.Sprintf("Marked permanently unreachable at %s: releasing starts in %s unless the mark is removed",
			l.MarkedAt.UTC().Format(time.RFC3339), l.GraceLeft.Round(time.Second))
	}
	return "Not marked permanently unreachable: nothing is released"
}

// report makes a pass over a dead cluster visible: phase events, the cleanup annotation (at most one
// write per pass, only when it changes, never in a dry run or once the cluster stopped being dead), and
// metrics. It returns the error of its own write, nothing else: the pass's errors are the caller's.
func (p *reporter) report(ctx context.Context, s *scope, l Liveness, t *tally, passErr error) error {
	if errors.Is(passErr, errStopped) {
		ctrl.LoggerFrom(ctx).Info("Stopped releasing: the cluster is no longer dead")
		p.recorder.Eventf(s.fc, nil, "Warning", "CleanupStopped", "Release",
			"Stopped releasing: the mark was removed or changed, the cluster was paused, or Liqo sees it answering again")
		return nil
	}
	seen := p.memory.pass(s.fc, t, s.waitingNamespaces(), p.options.DryRun)
	p.publishBlocked()
	switch seen.phase {
	case phaseStarted:
		p.recorder.Eventf(s.fc, nil, "Normal", "CleanupStarted", "Release", "Releasing what the dead cluster left stuck%s: %s",
			reasonGiven(s.fc), seen.summary)
	case phaseDone:
		cleanupDuration.Observe(p.clock.Since(l.MarkedAt.Add(p.options.GracePeriod)).Seconds())
		p.recorder.Eventf(s.fc, nil, "Normal", "CleanupDone", "Release", "Nothing left to release%s: %s", reasonGiven(s.fc), seen.summary)
	}
	for _, w := range p.memory.offloadingWaitsChanged(s.fc, s.offloadingWaits()) {
		p.recorder.Eventf(s.fc, nil, "Normal", "WaitingForLiqo", "Release",
			"NamespaceOffloading %s/offloading is kept until Liqo has done its part: %s", w.namespace, w.why)
	}
	if released := t.sum(func(c *counts) int { return c.released }); released > 0 && seen.phase != phaseDone {
		p.recorder.Eventf(s.fc, nil, "Normal", "CleanupProgress", "Release", "Released %d objects: %s", released, seen.summary)
	}
	if seen.blockedChanged {
		p.recorder.Eventf(s.fc, nil, "Warning", "CleanupBlocked", "Release",
			"%d objects stay because of finalizers liqo-janitor does not own (it never removes those): %s",
			t.sum(func(c *counts) int { return c.blocked }), seen.summary)
	}
	return p.writeSummary(ctx, s, seen.summary, "")
}

// publishBlocked sets liqo_janitor_blocked_objects and liqo_janitor_pending_objects to their sums, per
// kind, over the remembered clusters.
func (p *reporter) publishBlocked() {
	blocked, pending := p.memory.leftByKind()
	for _, kind := range allKinds {
		blockedObjects.WithLabelValues(kind).Set(float64(blocked[kind]))
		pendingObjects.WithLabelValues(kind).Set(float64(pending[kind]))
	}
}

// maxReasonLen bounds how much of the operator's reason an event quotes.
const maxReasonLen = 200

// reasonGiven quotes the operator's liqo-janitor.io/reason, with who marked the cluster, for the clean-up's
// events ("" when no reason was given).
func reasonGiven(fc *liqov1beta1.ForeignCluster) string {
	reason := fc.Annotations[liqojanitor.ReasonAnnotation]
	if reason == "" {
		return ""
	}
	if len(reason) > maxReasonLen {
		reason = strings.ToValidUTF8(reason[:maxReasonLen], "") + "…"
	}
	by := fc.Annotations[liqojanitor.MarkedByAnnotation]
	if by == "" {
		return fmt.Sprintf(" (marked dead: %q)", reason)
	}
	return fmt.Sprintf(" (marked dead by %s: %q)", by, reason)
}

// waitingNamespaces are the namespaces whose NamespaceOffloading waits for Liqo in this pass.
func (s *scope) waitingNamespaces() []string {
	var out []string
	for _, w := range s.offloadingWaits() {
		out = append(out, w.namespace)
	}
	return out
}

// offloadingWaits is a copy of what the pass's NamespaceOffloadings wait for.
func (s *scope) offloadingWaits() map[types.UID]offloadingWait {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.waits)
}

// writeSummary patches the cleanup annotation when it changed (a merge patch of that one key); with a
// resourceVersion, only if the ForeignCluster is still at that version (a conflict error otherwise).
func (p *reporter) writeSummary(ctx context.Context, s *scope, summary, resourceVersion string) error {
	if p.options.DryRun || s.fc.Annotations[liqojanitor.CleanupAnnotation] == summary {
		return nil
	}
	metadata := map[string]any{"annotations": map[string]string{liqojanitor.CleanupAnnotation: summary}}
	if resourceVersion != "" {
		metadata["resourceVersion"] = resourceVersion
	}
	patch, _ := json.Marshal(map[string]any{"metadata": metadata})
	fc := &liqov1beta1.ForeignCluster{}
	fc.Name = s.fc.Name
	if err := p.client.Patch(ctx, fc, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("writing the cleanup summary: %w", err)
	}
	return nil
}
