package volumes

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// The pods using a volume, re-listed live before its release. A pod bound to a node that is not one of
// the dead cluster's virtual nodes runs (or may run) somewhere alive, on a claim bound to the dead
// cluster's placeholder: not a pinned volume release-volumes understands, so it refuses the volume. A
// pod on one of the dead cluster's virtual nodes is the janitor's to delete (its pod rule, once its grace
// period is over): release-volumes waits for it, bounded by --timeout, and never forces it; Kubernetes'
// pvc-protection holds a claim while a pod bound to a node uses it (pkg/controller/volume/pvcprotection
// podUsesPVC). A Pending pod (bound to no node) is the one waiting for the claim's release.

// users are the pods of v's namespace that use v's claim: those on the dead cluster's virtual nodes, and
// a refusal naming those bound to any other node.
func (s *scope) users(ctx context.Context, v liqojanitor.PinnedVolume) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := s.c.List(ctx, &pods, client.InNamespace(v.Namespace)); err != nil {
		return nil, fmt.Errorf("listing the pods of namespace %s: %w", output.Printable(v.Namespace), err)
	}
	var onX []corev1.Pod
	var elsewhere []string
	for _, pod := range pods.Items {
		switch {
		case !usesClaim(&pod, v.Name) || pod.Spec.NodeName == "":
		case s.nodes[pod.Spec.NodeName]:
			onX = append(onX, pod)
		default:
			elsewhere = append(elsewhere, fmt.Sprintf("%s (on node %s)", pod.Name, pod.Spec.NodeName))
		}
	}
	if len(elsewhere) > 0 {
		return nil, fmt.Errorf("used by pod %s, bound to a node that is not one of %s's virtual nodes: refused, nothing changed for it",
			strings.Join(elsewhere, ", "), s.clusterID)
	}
	return onX, nil
}

func usesClaim(pod *corev1.Pod, claim string) bool {
	return slices.ContainsFunc(pod.Spec.Volumes, func(vol corev1.Volume) bool {
		return vol.PersistentVolumeClaim != nil && vol.PersistentVolumeClaim.ClaimName == claim
	})
}

// awaitPodsGone waits, up to timeout, until every pod of pods is gone (or replaced: another UID), saying
// what it waits for; it returns those still there then, each with its finalizers and whether its deletion
// was asked for.
func (s *scope) awaitPodsGone(ctx context.Context, w io.Writer, pods []corev1.Pod, timeout, poll time.Duration) ([]string, error) {
	if len(pods) == 0 {
		return nil, nil
	}
	for _, pod := range pods {
		fmt.Fprintf(w, "  waiting for pod %s/%s on %s's virtual node %s to be gone (the janitor's pod rule deletes it; up to %s)\n",
			output.Printable(pod.Namespace), output.Printable(pod.Name), output.Printable(s.clusterID), output.Printable(pod.Spec.NodeName), timeout)
	}
	var left []string
	// reads with ctx, not the wait's: a read near the wait's deadline would fail for it (the client's rate
	// limiter refuses a wait past a deadline), not because the pod is there
	err := wait.PollUntilContextTimeout(ctx, poll, timeout, true, func(context.Context) (bool, error) {
		var err error
		left, err = s.podsLeft(ctx, pods)
		return len(left) == 0, err
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		return left, nil
	}
	return left, err
}

// podsLeft describes the pods of pods still there.
func (s *scope) podsLeft(ctx context.Context, pods []corev1.Pod) ([]string, error) {
	var left []string
	for _, p := range pods {
		pod := &corev1.Pod{}
		switch err := s.c.Get(ctx, client.ObjectKeyFromObject(&p), pod); {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("reading pod %s/%s: %w", p.Namespace, p.Name, err)
		case pod.UID != p.UID:
			continue
		}
		state := "not deleted yet (the janitor deletes it once its grace period is over)"
		if !pod.DeletionTimestamp.IsZero() {
			state = "being deleted"
		}
		fin := "no finalizers"
		if len(pod.Finalizers) > 0 {
			fin = "finalizers " + strings.Join(pod.Finalizers, ", ")
		}
		left = append(left, fmt.Sprintf("pod %s on node %s: %s, %s", pod.Name, pod.Spec.NodeName, state, fin))
	}
	return left, nil
}
