package providerfence

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// enforce carries out a consumer's fence (fence rules 5 and 6): the first time, the Tenant cordoned and
// every deletion issued; on every later poll, the deletions again for whatever appeared, until none of the
// consumer's pods is left. What it did is recorded on the agent's record, and on the Tenant.
func (a *Agent) enforce(ctx context.Context, t *authv1beta1.Tenant, cons *consumer, stateLease *coordinationv1.Lease, state liqojanitor.FenceState) error {
	// The fence's own deadline: its stop bound, not the poll's.
	ctx, cancel := context.WithTimeout(ctx, a.opts.GraceCap+stopSlack)
	defer cancel()
	before := state
	f := *state.Fence
	first := f.FencedAt == nil
	if first {
		outcome, err := a.cordon(ctx, t)
		if err != nil {
			return err
		}
		f.Tenant = outcome
	}
	del, err := a.stop(ctx, cons)
	if err != nil {
		return err
	}
	now := a.now()
	f.ShadowPods += del.shadowPods
	f.Pods += del.pods
	f.NotStopped = del.notStopped
	if first {
		f.FencedAt = &now
	}
	switch {
	case del.remaining > len(del.notStopped) || del.shadowPods+del.pods > 0:
		f.StoppedAt = nil // still stopping, or something appeared again
	case f.StoppedAt == nil:
		f.StoppedAt = &now
	}
	state.Fence = &f
	if _, err := a.record(ctx, cons, stateLease, before, state); err != nil {
		return err
	}
	if first {
		fencesTotal.WithLabelValues(cons.id).Inc()
		logf.FromContext(ctx).Info("Fenced a lost consumer", "tenant", klog.KObj(t), "consumer", cons.id, "record", f.String())
		if a.recorder != nil {
			a.recorder.Eventf(t, nil, corev1.EventTypeWarning, "Fenced", "Fence", "no renewal of %s/%s observed since %s: %s; "+
				"renewals change nothing now: when the consumer is back and should run here again, run kubectl liqo-janitor unfence %s",
				cons.namespace, liqojanitor.FenceLeaseName, formatTime(f.LastObservedAt), f.Describe(), cons.id)
		}
	}
	return nil
}

// cordon sets the Tenant Cordoned, only from Active (Liqo's tenant controller then cordons the consumer's
// ResourceSlices and quotas, and Liqo's ShadowPod webhook refuses its new ShadowPods:
// pkg/liqo-controller-manager/authentication/tenant-controller, pkg/webhooks/shadowpod), recording when on
// the Tenant. A Cordoned or Drained Tenant is left as it is. The patch is at the resourceVersion read.
func (a *Agent) cordon(ctx context.Context, t *authv1beta1.Tenant) (string, error) {
	live := &authv1beta1.Tenant{}
	if err := a.c.Get(ctx, client.ObjectKeyFromObject(t), live); err != nil {
		return "", fmt.Errorf("reading the Tenant to cordon it: %w", err)
	}
	if live.UID != t.UID {
		return "", fmt.Errorf("the Tenant %s was replaced while fencing", klog.KObj(t))
	}
	patch := client.MergeFromWithOptions(live.DeepCopy(), client.MergeFromWithOptimisticLock{})
	at := a.now().UTC().Format(time.RFC3339)
	live.Annotations = withAnnotation(live.Annotations, liqojanitor.FencedAtAnnotation, at)
	outcome := "left " + string(live.Spec.TenantCondition)
	switch cond := live.Spec.TenantCondition; {
	case cond == authv1beta1.TenantConditionCordoned && live.Annotations[liqojanitor.CordonedByFenceAnnotation] != "":
		outcome = "cordoned" // by this fence, on an attempt that did not get to record it
	case cond == authv1beta1.TenantConditionActive || cond == "":
		live.Spec.TenantCondition = authv1beta1.TenantConditionCordoned
		live.Annotations = withAnnotation(live.Annotations, liqojanitor.CordonedByFenceAnnotation, at)
		outcome = "cordoned"
	}
	if err := a.c.Patch(ctx, live, patch); err != nil {
		return "", fmt.Errorf("cordoning the Tenant: %w", err)
	}
	return outcome, nil
}

// deletions is what one pass of stop issued and found.
type deletions struct {
	shadowPods, pods int
	// remaining is how many of the consumer's pods still exist; notStopped names those on a node that is
	// not Ready.
	remaining  int
	notStopped []string
}

// stop deletes exactly the consumer's ShadowPods and their pods (fence rule 5), each with a UID
// precondition, pods with their grace period capped. Nothing else in those namespaces is touched.
func (a *Agent) stop(ctx context.Context, cons *consumer) (deletions, error) {
	var d deletions
	namespaces, err := a.remoteNamespaces(ctx, cons)
	if err != nil {
		return d, err
	}
	var errs []error
	for _, ns := range namespaces {
		var sps offloadingv1beta1.ShadowPodList
		if err := a.c.List(ctx, &sps, client.InNamespace(ns), client.MatchingLabels{liqojanitor.ShadowPodOriginLabel: cons.id}); err != nil {
			errs = append(errs, fmt.Errorf("listing ShadowPods in %s: %w", ns, err))
			continue
		}
		for i := range sps.Items {
			sp := &sps.Items[i]
			if sp.DeletionTimestamp != nil {
				continue
			}
			err := a.c.Delete(ctx, sp, client.Preconditions{UID: &sp.UID}, client.PropagationPolicy("Background"))
			switch {
			case err == nil:
				d.shadowPods++
			case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
				errs = append(errs, fmt.Errorf("deleting ShadowPod %s: %w", klog.KObj(sp), err))
			}
		}
		errs = append(errs, a.stopPods(ctx, ns, &d))
	}
	slices.Sort(d.notStopped)
	return d, errors.Join(errs...)
}

// stopPods deletes the pods Liqo's shadowpod controller made in ns, their grace period capped at the
// grace cap (a pod already terminating with a longer one is deleted again with the cap, which shortens it).
func (a *Agent) stopPods(ctx context.Context, ns string, d *deletions) error {
	var pods corev1.PodList
	if err := a.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{liqojanitor.ManagedByLabel: liqojanitor.ManagedByShadowPod}); err != nil {
		return fmt.Errorf("listing pods in %s: %w", ns, err)
	}
	capSeconds := int64(a.opts.GraceCap / time.Second)
	var errs []error
	for i := range pods.Items {
		p := &pods.Items[i]
		d.remaining++
		if !a.nodeReady(ctx, p.Spec.NodeName) {
			d.notStopped = append(d.notStopped, fmt.Sprintf("%s/%s on %s", p.Namespace, p.Name, p.Spec.NodeName))
		}
		grace := capSeconds
		if p.Spec.TerminationGracePeriodSeconds != nil {
			grace = min(grace, *p.Spec.TerminationGracePeriodSeconds)
		}
		if p.DeletionTimestamp != nil && p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds <= grace {
			continue // already stopping within the cap
		}
		err := a.c.Delete(ctx, p, client.Preconditions{UID: &p.UID}, client.GracePeriodSeconds(grace))
		switch {
		case err == nil:
			d.pods++
		case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
			errs = append(errs, fmt.Errorf("deleting pod %s: %w", klog.KObj(p), err))
		}
	}
	return errors.Join(errs...)
}

// nodeReady says whether the pod's containers are stopped by its node's kubelet: an unscheduled pod, or
// one on a Node that no longer exists, runs nowhere; on a Node that is not Ready they may still run.
func (a *Agent) nodeReady(ctx context.Context, name string) bool {
	if name == "" {
		return true
	}
	var n corev1.Node
	if err := a.c.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
		return apierrors.IsNotFound(err)
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// remoteNamespaces are the namespaces Liqo made for the consumer: labelled with its cluster ID, and made
// by a NamespaceMap of its tenant namespace (the annotation "<tenant namespace>/<name>"; Liqo's
// namespacemap controller, pkg/liqo-controller-manager/offloading/namespacemap-controller, writes both).
func (a *Agent) remoteNamespaces(ctx context.Context, cons *consumer) ([]string, error) {
	var nss corev1.NamespaceList
	if err := a.c.List(ctx, &nss, client.MatchingLabels{liqojanitor.RemoteClusterIDLabel: cons.id}); err != nil {
		return nil, fmt.Errorf("listing the consumer's namespaces: %w", err)
	}
	var names []string
	for i := range nss.Items {
		ns := &nss.Items[i]
		if owner, ok := ns.Annotations[liqojanitor.ManagedByNamespaceMapAnnotation]; ok && strings.HasPrefix(owner, cons.namespace+"/") {
			names = append(names, ns.Name)
		}
	}
	return names, nil
}

func formatTime(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return t.UTC().Format(time.RFC3339)
}
