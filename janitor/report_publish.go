package janitor

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor/internal/records"
	"github.com/liqo-janitor/liqo-janitor/janitor/internal/release"
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
	pacing   *pacing
	options  Options
	// kept are the UIDs of the returns kept in the janitor's namespace and not fenced (the probe's).
	kept func() map[types.UID]bool
}

// wait records why a marked cluster is left alone (an event when the reason changes), and comes back when
// its grace period ends.
func (p *reporter) wait(ctx context.Context, fc *liqov1beta1.ForeignCluster, l liveness) ctrl.Result {
	waitsTotal.WithLabelValues(string(l.Wait)).Inc()
	if p.memory.waitChanged(fc, l.Wait) {
		ctrl.LoggerFrom(ctx).Info("Leaving marked ForeignCluster alone", "reason", l.Wait)
		p.recorder.Eventf(fc, nil, "Normal", "Waiting", "Wait", "%s", waitMessage(fc, l))
	}
	switch l.Wait {
	case WaitGracePeriod, WaitFenceDeadline, WaitFenceUnreadable:
		return ctrl.Result{RequeueAfter: holdRequeue(l)}
	case WaitStorm:
		// The storm's end enqueues every marked cluster (watchStorm); this bounds the hold should that
		// event be missed (janitor rule 20).
		return ctrl.Result{RequeueAfter: stormRecheck}
	}
	return ctrl.Result{}
}

// stormRecheck is how long a mark the storm guard holds waits at most before it is assessed again.
const stormRecheck = time.Minute

// holdRequeue is when a held cluster (liveness.holding) is assessed again: when its hold ends — the grace
// period, or the provider's fence deadline (janitor rule 22), at the deadline itself and not by polling — or,
// for an unreadable fence record, after fenceRecheck (a change of the record wakes it sooner).
func holdRequeue(l liveness) time.Duration {
	if l.Wait == WaitFenceUnreadable {
		return fenceRecheck
	}
	return l.holdLeft() + 100*time.Millisecond
}

// shownPlan is the plan as the cleanup annotation and the plugin show it: while the provider's fence holds
// the cluster (janitor rule 22), led by what the janitor waits for — "waiting for the provider's fence until
// 2026-05-01T10:03:41Z (the provider's contract: …), then it would release pods 4".
func shownPlan(l liveness, planSummary string) string {
	if l.Wait == WaitFenceDeadline || l.Wait == WaitFenceUnreadable {
		return fenceWait(l) + ", then it " + planSummary
	}
	return planSummary
}

// publishPlan shows what a held cluster would release (janitor rule 9; liveness.holding: its grace period,
// or the provider's fence, rule 22): the cleanup annotation, e.g. "grace 22s left: would release pods 400,
// resourceslices 3; blocked 1" — while the fence holds it, "grace 3m10s left: waiting for the provider's
// fence until … (the provider's contract: …), then it would release …", the countdown being the whole
// hold's — with the janitor's record of its first sight and of when the grace period ends, and one Waiting
// event with the same numbers. The event is sent when the plan is first made and again only when it
// changes (its numbers, or what holds it); the annotation is compared with the live one, so a plan someone
// removed or changed is written again (the seconds left are as of that write). It comes back when the hold
// ends.
func (p *reporter) publishPlan(ctx context.Context, s *scope, l liveness, t *tally) (ctrl.Result, error) {
	waitsTotal.WithLabelValues(string(l.Wait)).Inc()
	p.memory.waitChanged(s.fc, l.Wait)
	result := ctrl.Result{RequeueAfter: holdRequeue(l)}
	planSummary := t.planSummary(s.waitingNamespaces())
	shown := shownPlan(l, planSummary)
	if p.memory.shownPlanChanged(s.fc, shown) {
		ctrl.LoggerFrom(ctx).Info("Holding: planned the clean-up", "wait", l.Wait, "left", l.holdLeft().Round(time.Second), "plan", shown)
		p.recorder.Eventf(s.fc, nil, "Normal", "Waiting", "Wait", "%s; then it %s", waitMessage(s.fc, l), planSummary)
	}
	summary := s.fc.Annotations[liqojanitor.CleanupAnnotation]
	if progressOf(s.fc, t.kinds).started() {
		return result, nil // a clean-up of this mark has begun: its record is never replaced by a plan
	}
	if written, ok := liqojanitor.ParseGracePlan(summary); !ok || written.Plan != shown {
		summary = liqojanitor.GracePlan{Left: l.holdLeft(), Plan: shown}.String()
	}
	// Only onto the ForeignCluster the plan was made for: if it changed since (unmarked, paused), the patch
	// fails, writes nothing, and the change's own event decides what comes next. Another admission webhook
	// refusing it (Liqo's, while its pod is down) is no error: the plan is shown again by the next pass. A
	// result or an error, never both (controller-runtime ignores the result then, janitor rule 11).
	_, err := p.writeOwnKeys(ctx, s.fc, summary, l, "")
	if _, refused := release.RefusingWebhook(err); err != nil && !refused && !apierrors.IsConflict(err) {
		return ctrl.Result{}, err
	}
	return result, nil
}

func waitMessage(fc *liqov1beta1.ForeignCluster, l liveness) string {
	switch l.Wait {
	case WaitUnconfirmed:
		return fmt.Sprintf("Marked permanently unreachable but not confirmed: nothing is released until %s=%s",
			liqojanitor.ConfirmAnnotation, fc.Spec.ClusterID)
	case WaitReachable:
		return "Marked permanently unreachable, but Liqo sees its API server answering (APIServerStatus Established): nothing is released"
	case WaitTunnelUp:
		return "Marked permanently unreachable, but Liqo's data plane to it is up (NetworkConnectionStatus Established): " +
			"its pods still run and serve, so nothing is released while the tunnel is up"
	case WaitStorm:
		return fmt.Sprintf("Marked permanently unreachable during a storm: %s. So many at once is more likely this consumer's "+
			"own cut (its uplink, gateway or DNS) than every provider's death; nothing is released for this mark while the "+
			"storm lasts (its grace period starts after it). Check this cluster's connectivity; if the providers are gone, "+
			"unmark and mark again with %s set to the number of unreachable providers (kubectl liqo-janitor mark asks for it)",
			l.Storm, liqojanitor.AcknowledgeUnreachableAnnotation)
	case WaitNotFoundByLiqo:
		return fmt.Sprintf("Marked permanently unreachable, but this is not the ForeignCluster Liqo finds for cluster ID %s: "+
			"its label %s is missing or names another cluster, so Liqo does not probe it and its APIServerStatus proves "+
			"nothing; nothing is released until the label is restored: kubectl label foreigncluster %s %s=%s --overwrite",
			fc.Spec.ClusterID, liqojanitor.RemoteClusterIDLabel, fc.Name, liqojanitor.RemoteClusterIDLabel, fc.Spec.ClusterID)
	case WaitPaused:
		return fmt.Sprintf("Paused (%s=true): nothing is released", liqojanitor.PausedAnnotation)
	case WaitDuplicate:
		return fmt.Sprintf("Marked permanently unreachable, but ForeignCluster %s has the same cluster ID %s and is not dead "+
			"(unmarked, unconfirmed, reachable, paused or in its grace period): nothing is released while one ForeignCluster "+
			"of a cluster ID says it is alive; find the stray one with: kubectl get foreignclusters", l.Duplicate, fc.Spec.ClusterID)
	case WaitBraked:
		return fmt.Sprintf("The janitor-wide brake is set (ConfigMap %s%s): nothing is released for any cluster until "+
			"it is deleted", liqojanitor.BrakeConfigMap, quoted(l.Brake))
	case WaitGracePeriod:
		return fmt.Sprintf("Marked permanently unreachable at %s: releasing starts in %s unless the mark is removed",
			l.MarkedAt.UTC().Format(time.RFC3339), l.GraceLeft.Round(time.Second))
	case WaitFenceDeadline:
		return fmt.Sprintf("Marked permanently unreachable at %s, %s: the provider stops this consumer's copies by then, "+
			"so nothing is released before (releasing starts in %s unless the mark is removed)",
			l.MarkedAt.UTC().Format(time.RFC3339), fenceWait(l), l.FenceLeft.Round(time.Second))
	case WaitFenceUnreadable:
		return fmt.Sprintf("Marked permanently unreachable, but the janitor's record of the provider's fence cannot be read (%s): "+
			"the provider's copies may run until a deadline the janitor no longer knows, so nothing is released until the record "+
			"can be read. The janitor's renewer rewrites it while it renews that provider; otherwise, once the provider is surely "+
			"fenced or gone, remove that key: kubectl -n <the janitor's namespace> edit configmap %s",
			truncate(l.Fence.unreadable, maxReasonLen), liqojanitor.FenceRenewalsConfigMap)
	}
	return "Not marked permanently unreachable: nothing is released"
}

// report makes a pass over a dead cluster visible: the cleanup annotation — the clean-up's record,
// derived from the record on the ForeignCluster and what this pass did (report_progress.go), written at most
// once per pass, only when it changes, never in a dry run — then the phase events on the record's transitions
// (started, done: once per clean-up, whichever replica makes them), progress, blocked and waiting events, and
// metrics. It returns the error of its own write, nothing else: the pass's errors are the caller's.
func (p *reporter) report(ctx context.Context, s *scope, l liveness, end passEnd) error {
	t := end.tally
	if end.stopped {
		ctrl.LoggerFrom(ctx).Info("Stopped releasing: the cluster is no longer dead")
		p.recorder.Eventf(s.fc, nil, "Warning", "CleanupStopped", "Release",
			"Stopped releasing: the mark was removed or changed, the cluster was paused, Liqo sees it answering again, "+
				"the janitor-wide brake was set, or the provider's fence deadline is ahead")
		return nil
	}
	waiting := s.waitingNamespaces()
	blocked := t.sum(func(c *counts) int { return c.blocked })
	prev, next := p.passProgress(s, t)
	p.noteLeaks(s, next)
	refused := t.refusedBy()
	progress := next.written(t.kinds, blocked, waiting, p.options.DryRun)
	if len(refused.webhooks) > 0 {
		progress.WaitingForWebhooks = listSome(refused.webhooks, 2)
	}
	summary := progress.String()
	p.releasedPerKind(s, t) // what was released is said whether or not the record can be written now
	blockedChanged := p.memory.passed(s.fc, t)
	p.publishBlocked()
	if written, err := p.writeRefusable(ctx, s, summary, l, next, refused); !written {
		return err // the record was not written: its events wait for the pass that writes it
	}
	if !prev.started() && next.started() {
		p.recorder.Eventf(s.fc, nil, "Normal", "CleanupStarted", "Release", "Releasing what the dead cluster left stuck%s: %s",
			reasonGiven(s.fc), summary)
	}
	done := next.complete() && !prev.complete()
	if done {
		cleanupDuration.Observe(p.clock.Since(l.releasableSince()).Seconds())
		p.recorder.Eventf(s.fc, nil, "Normal", "CleanupDone", "Release",
			"liqo-janitor's part is done, nothing left for it to release%s: %s (the unpeering itself is done at UnpeeringComplete)",
			reasonGiven(s.fc), summary)
	}
	for _, w := range p.memory.offloadingWaitsChanged(s.fc, s.offloadingWaits()) {
		p.recorder.Eventf(s.fc, nil, "Normal", "WaitingForLiqo", "Release",
			"NamespaceOffloading %s/offloading is kept until Liqo has done its part: %s", w.namespace, w.why)
	}
	p.unpeered(ctx, s)
	if released := t.sum(func(c *counts) int { return c.released }); released > 0 && !done {
		p.recorder.Eventf(s.fc, nil, "Normal", "CleanupProgress", "Release", "Released %d objects: %s", released, summary)
	}
	if blockedChanged {
		p.recorder.Eventf(s.fc, nil, "Warning", "CleanupBlocked", "Release",
			"%d objects stay because of finalizers liqo-janitor does not own (it never removes those), or are pods on a deleted VirtualNode that Liqo's drain does not delete: %s", blocked, summary)
	}
	return nil
}

// passProgress are the record before a pass over a dead cluster and the one after it (report_progress.go):
// before is the record on the ForeignCluster; the pass adds to it, or to the record this process could not
// write there (another admission webhook refused it), so that what it released meanwhile counts. A dry run
// writes no record: each pass counts alone, and memory holds the last one.
func (p *reporter) passProgress(s *scope, t *tally) (prev, next progress) {
	if p.options.DryRun {
		next = progress{}.after(t)
		return p.memory.dryRunPassed(s.fc, next), next
	}
	prev = progressOf(s.fc, t.kinds)
	from := prev
	if u := p.memory.unwrittenRecord(s.fc, prev); u != nil {
		from = *u
	}
	return prev, from.after(t)
}

// writeRefusable writes the pass's record (a no-op in a dry run, which counts as written) and reports
// whether it did. A refusal by another admission webhook is no error but one of the pass's refusals, and
// the record is kept to be written by a later pass (refusals, keepUnwritten).
func (p *reporter) writeRefusable(ctx context.Context, s *scope, summary string, l liveness, next progress, refused refusal) (bool, error) {
	_, err := p.writeOwnKeys(ctx, s.fc, summary, l, p.unpeeringValue(s))
	webhook, recordRefused := release.RefusingWebhook(err)
	if recordRefused {
		refused.webhooks, refused.left = append(refused.webhooks, webhook), append(refused.left, "the cleanup record")
		refused.first, err = cmp.Or(refused.first, err), nil
	}
	p.memory.keepUnwritten(s.fc, next, recordRefused && !p.options.DryRun)
	p.refusals(s.fc, refused)
	return err == nil && !recordRefused, err
}

// returned reports a provider that answered again after its mark (janitor rule 10): its return first
// in the cleanup annotation (returnSummary), one Warning event ProviderReturned on the return's first
// record — kept in the janitor's namespace (first, rule 17) or written onto the ForeignCluster, once per
// return, whichever replica gets there — and one Fenced event on its transition to the operator's fence
// record; the returned-clusters gauge counts it until it is fenced. Another admission webhook refusing the
// write is no error: it is named in a BlockedByWebhook event and the write comes back on the capped
// backoff (a result or an error, never both: controller-runtime ignores the result then, rule 11). In a
// dry run nothing is written, and the events fire on what this process remembers.
func (p *reporter) returned(ctx context.Context, fc *liqov1beta1.ForeignCluster, l liveness, untold bool) (ctrl.Result, error) {
	waitsTotal.WithLabelValues(string(l.Wait)).Inc()
	p.memory.waitChanged(fc, l.Wait)
	fencedBy, isFenced := fenced(fc, l.Returned, p.clock.Now())
	if p.memory.returnedChanged(fc, !isFenced) {
		p.publishReturned()
	}
	if untold {
		p.tellReturn(ctx, fc, l.Returned)
	}
	summary := returnSummary(fc, l.Returned, p.clock.Now())
	wrote, err := p.writeOwnKeys(ctx, fc, summary, liveness{}, "")
	webhook, refused := release.RefusingWebhook(err)
	switch {
	case apierrors.IsConflict(err):
		return ctrl.Result{}, nil // the ForeignCluster changed since it was read: its own event brings the next pass
	case err != nil && !refused:
		return ctrl.Result{}, err
	}
	r := refusal{}
	if refused {
		r = refusal{webhooks: []string{webhook}, left: []string{"the return record"}, first: err}
	}
	p.refusals(fc, r)
	newFence := wrote && isFenced
	if p.options.DryRun { // a dry run keeps nothing in the janitor's namespace: this process's memory tells
		var newReturn bool
		if newReturn, newFence = p.memory.returnReported(fc, isFenced); newReturn {
			p.tellReturn(ctx, fc, l.Returned)
		}
	}
	if newFence {
		ctrl.LoggerFrom(ctx).Info("The returned provider was fenced", "fenced", fencedBy)
		p.recorder.Eventf(fc, nil, "Normal", "Fenced", "Fence",
			"Fenced %s: the consumer's workloads on the returned provider of cluster %s were stopped; unmark and re-peer, or delete the ForeignCluster",
			fencedBy, fc.Spec.ClusterID)
	}
	if refused {
		ctrl.LoggerFrom(ctx).Info("An admission webhook refused the return's record on the ForeignCluster; it is kept in the janitor's namespace, will retry",
			"webhook", webhook, "err", err.Error())
		return ctrl.Result{RequeueAfter: p.pacing.backoff(fc)}, nil
	}
	return ctrl.Result{}, nil
}

// tellReturn sends ProviderReturned for a return (janitor rules 10 and 17: once per kept return).
func (p *reporter) tellReturn(ctx context.Context, fc *liqov1beta1.ForeignCluster, r providerReturn) {
	ctrl.LoggerFrom(ctx).Info("The provider of a marked cluster answers again: releases stop", "how", r.how, "at", r.at)
	p.recorder.Eventf(fc, nil, "Warning", "ProviderReturned", "Detect", "%s", returnedMessage(fc, r))
}

// publishReturned sets liqo_janitor_returned_clusters to the number of clusters whose provider returned
// and that are not fenced yet: those this process assessed, and every other return kept in the janitor's
// namespace — of a ForeignCluster deleted since, or not assessed yet by this process — so that neither
// deleting the ForeignCluster nor a restart silences the alarm (janitor rule 10).
func (p *reporter) publishReturned() {
	var kept map[types.UID]bool
	if p.kept != nil {
		kept = p.kept()
	}
	returnedClusters.Set(float64(p.memory.returnedUnfenced(kept)))
}

// refusals says when other admission webhooks begin or stop refusing the janitor's writes for fc (one
// BlockedByWebhook event naming them and what they hold up, one WebhookAnswering event when none refuses
// any more), and paces the next pass (pacing.refused).
func (p *reporter) refusals(fc *liqov1beta1.ForeignCluster, r refusal) {
	webhooks := slices.Compact(slices.Sorted(slices.Values(r.webhooks)))
	p.pacing.refused(fc, webhooks, r.kinds)
	before, changed := p.memory.refusedBy(fc, webhooks)
	switch {
	case !changed:
	case len(webhooks) > 0:
		p.recorder.Eventf(fc, nil, "Warning", "BlockedByWebhook", "Release",
			"The admission webhook %s refuses the janitor's writes (%s left: %s): %v. Liqo's own webhooks use failurePolicy Fail, so "+
				"while Liqo's webhook pod is down nothing passes them; the janitor retries every few seconds and finishes within "+
				"seconds of them answering again (check Liqo's webhook: kubectl -n liqo get pods)",
			strings.Join(webhooks, ", "), fc.Spec.ClusterID, strings.Join(r.left, ", "), r.first)
	case len(before) > 0:
		p.recorder.Eventf(fc, nil, "Normal", "WebhookAnswering", "Release",
			"The admission webhook %s no longer refuses the janitor's writes", strings.Join(before, ", "))
	}
}

// releasedPerKind sends the pass's one event per kind on the ForeignCluster: how many objects of that kind
// it released (or, in a dry run, would release), and the first and last of them. Per-object events need
// --object-events; the log has every release.
func (p *reporter) releasedPerKind(s *scope, t *tally) {
	reason, verb := "Released", "Released"
	if p.options.DryRun {
		reason, verb = "WouldRelease", "Dry run: would release"
	}
	for _, kind := range t.kinds {
		c := t.byKind[kind]
		if c.released == 0 {
			continue
		}
		objects := klog.KObj(c.first).String()
		if c.released > 1 {
			objects = fmt.Sprintf("first %s, last %s", klog.KObj(c.first), klog.KObj(c.last))
		}
		// related: the first object, which also keeps the events of different kinds and passes apart (the
		// events library merges events alike in regarding, related, reason and action into one series)
		leak := ""
		if kind == secretGVK.Kind && !p.options.DryRun {
			leak = ". " + reflectorLeak(s.clusterID)
		}
		p.recorder.Eventf(s.fc, c.first, "Normal", reason, releaseAction(kind), "%s %d %ss of cluster %s (%s)%s%s",
			verb, c.released, strings.ToLower(kind), s.clusterID, objects, reasonGiven(s.fc), leak)
	}
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
	reason = truncate(reason, maxReasonLen)
	by := fc.Annotations[liqojanitor.MarkedByAnnotation]
	if by == "" {
		return fmt.Sprintf(" (marked dead: %q)", reason)
	}
	return fmt.Sprintf(" (marked dead by %s: %q)", by, reason)
}

// writeOwnKeys patches the janitor's own keys on the ForeignCluster where they differ from the live ones
// the pass read: the cleanup annotation, the unpeering record (when given), and its record of the first sight
// of the mark and of when the grace period ends (janitor rule 1; only the janitor's identity may write them,
// gate rule 14). The patch carries the resourceVersion the pass read, so it lands only on that version of the
// ForeignCluster: a conflict error otherwise, and two replicas never both make one transition. It reports
// whether it wrote.
func (p *reporter) writeOwnKeys(ctx context.Context, on *liqov1beta1.ForeignCluster, summary string, l liveness, unpeering string) (bool, error) {
	want := map[string]string{liqojanitor.CleanupAnnotation: summary}
	if unpeering != "" {
		want[liqojanitor.UnpeeringAnnotation] = unpeering
	}
	if !l.FirstSeen.IsZero() {
		want[liqojanitor.FirstSeenAnnotation] = liqojanitor.RecordTime(l.FirstSeen)
		want[liqojanitor.GraceEndsAnnotation] = liqojanitor.RecordTime(l.GraceEnds)
	}
	for key, value := range want {
		if on.Annotations[key] == value {
			delete(want, key)
		}
	}
	if p.options.DryRun || len(want) == 0 {
		return false, nil
	}
	set := make(map[string]any, len(want))
	for key, value := range want {
		set[key] = value
	}
	if err := records.PatchAnnotations(ctx, p.client, on.Name, on.ResourceVersion, set); err != nil {
		return false, fmt.Errorf("writing the cleanup record: %w", err)
	}
	return true, nil
}

// quoted is ": \"reason\"" for a reason given, "" otherwise.
func quoted(reason string) string {
	if reason == "" {
		return ""
	}
	return fmt.Sprintf(": %q", truncate(reason, maxReasonLen))
}

// truncate cuts s to at most n bytes, on a rune boundary, marking the cut with "…".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n-len("…")], "") + "…"
}
