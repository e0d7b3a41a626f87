package janitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// report makes a pass visible on the ForeignCluster: phase events (started, progress, blocked, done —
// with counts), the cleanup annotation (at most one write per pass, only when it changes, never in dry
// run or once the cluster stopped being dead), and metrics. It returns the pass's errors for a retry
// with backoff.
func (r *Reconciler) report(ctx context.Context, s *scope, l Liveness, t *tally, passErr error) error {
	if errors.Is(passErr, errStopped) {
		ctrl.LoggerFrom(ctx).Info("Stopped releasing: the cluster is no longer dead")
		r.Recorder.Eventf(s.fc, nil, "Warning", "CleanupStopped", "Release",
			"Stopped releasing: the mark was removed or changed, the cluster was paused, or Liqo sees it answering again")
		return joinErrs(nil, t.errs)
	}
	m := r.memoryOf(s.fc)
	summary, phase := r.remember(m, t, s.waitingNamespaces())
	r.rememberBlocked(m, t)
	switch phase {
	case phaseStarted:
		r.Recorder.Eventf(s.fc, nil, "Normal", "CleanupStarted", "Release", "Releasing what the dead cluster left stuck%s: %s",
			reasonGiven(s.fc), summary)
	case phaseDone:
		cleanupDuration.Observe(r.Clock.Since(l.MarkedAt.Add(r.Options.GracePeriod)).Seconds())
		r.Recorder.Eventf(s.fc, nil, "Normal", "CleanupDone", "Release", "Nothing left to release%s: %s", reasonGiven(s.fc), summary)
	}
	r.reportOffloadingWaits(s, m)
	if released := t.sum(func(c *counts) int { return c.released }); released > 0 && phase != phaseDone {
		r.Recorder.Eventf(s.fc, nil, "Normal", "CleanupProgress", "Release", "Released %d objects: %s", released, summary)
	}
	if b := t.sum(func(c *counts) int { return c.blocked }); b > 0 && r.blockedChanged(m, b) {
		r.Recorder.Eventf(s.fc, nil, "Warning", "CleanupBlocked", "Release",
			"%d objects stay because of finalizers liqo-janitor does not own (it never removes those): %s", b, summary)
	}
	if err := r.writeSummary(ctx, s, summary); err != nil {
		passErr = errors.Join(passErr, err)
	}
	return joinErrs(passErr, t.errs)
}

type phase int

const (
	phaseNone phase = iota
	phaseStarted
	phaseDone
)

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
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, w := range s.waits {
		out = append(out, w.namespace)
	}
	return out
}

// reportOffloadingWaits emits a WaitingForLiqo event on the ForeignCluster for each NamespaceOffloading
// whose wait began or changed since the last pass (not on every pass), naming the namespace and what it
// waits for.
func (r *Reconciler) reportOffloadingWaits(s *scope, m *memory) {
	s.mu.Lock()
	waits := maps.Clone(s.waits)
	s.mu.Unlock()
	r.mu.Lock()
	var changed []offloadingWait
	for uid, w := range waits {
		if m.offloadingWaits[uid] != w.why {
			changed = append(changed, w)
		}
	}
	m.offloadingWaits = map[types.UID]string{}
	for uid, w := range waits {
		m.offloadingWaits[uid] = w.why
	}
	r.mu.Unlock()
	for _, w := range changed {
		r.Recorder.Eventf(s.fc, nil, "Normal", "WaitingForLiqo", "Release",
			"NamespaceOffloading %s/offloading is kept until Liqo has done its part: %s", w.namespace, w.why)
	}
}

// remember folds a pass into the cluster's memory and returns the summary and the phase it entered.
func (r *Reconciler) remember(m *memory, t *tally, waitingNamespaces []string) (string, phase) {
	r.mu.Lock()
	defer r.mu.Unlock()
	acted := m.acted
	if r.Options.DryRun {
		acted = map[string]map[types.UID]bool{} // nothing really goes: count this pass only
	}
	for kind, c := range t.byKind {
		if acted[kind] == nil {
			acted[kind] = map[types.UID]bool{}
		}
		for _, uid := range c.acted {
			acted[kind][uid] = true
		}
	}
	summary := t.summary(acted, waitingNamespaces, r.Options.DryRun)
	work := t.sum(func(c *counts) int { return c.released + c.pending() }) > 0
	outstanding := t.sum(func(c *counts) int { return c.pending() }) > 0
	switch {
	case work && !m.started:
		m.started, m.done = true, false
		return summary, phaseStarted
	case m.started && !outstanding && !m.done:
		m.done = true
		return summary, phaseDone
	case outstanding:
		m.done = false
	}
	return summary, phaseNone
}

// writeSummary patches the cleanup annotation when it changed (a merge patch of that one key).
func (r *Reconciler) writeSummary(ctx context.Context, s *scope, summary string) error {
	if r.Options.DryRun || s.fc.Annotations[liqojanitor.CleanupAnnotation] == summary {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{liqojanitor.CleanupAnnotation: summary},
	}})
	fc := &liqov1beta1.ForeignCluster{}
	fc.Name = s.fc.Name
	if err := r.Client.Patch(ctx, fc, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("writing the cleanup summary: %w", err)
	}
	return nil
}

// rememberBlocked records what stayed blocked in this pass, and publishes the sum over dead clusters.
func (r *Reconciler) rememberBlocked(m *memory, t *tally) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m.blocked = map[string]int{}
	for kind, c := range t.byKind {
		m.blocked[kind] = c.blocked
	}
	r.publishBlocked()
}

// blockedChanged reports whether the number of blocked objects differs from the last pass's, so the
// blocked event is emitted when the situation changes, not on every pass.
func (r *Reconciler) blockedChanged(m *memory, blocked int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := m.lastBlocked != blocked
	m.lastBlocked = blocked
	return changed
}
