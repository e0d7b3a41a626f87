package volumes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// errSkipped is why a volume was not released; its text says why, and nothing was changed for it.
var errSkipped = errors.New("skipped")

// skip is a reason to skip a volume.
func skip(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errSkipped}, args...)...)
}

// releaseAll releases s's volumes in turn; once the cluster is no longer dead (or cannot be read), the
// volumes left are skipped with that reason.
func (o *Options) releaseAll(ctx context.Context, s *scope) *Result {
	res := &Result{ClusterID: output.Printable(s.clusterID)}
	w := o.progress()
	var stop error
	for _, v := range s.volumes {
		fmt.Fprintf(w, "\nPVC %s/%s (uid %s):\n", output.Printable(v.Namespace), output.Printable(v.Name), output.Printable(v.UID))
		if stop == nil {
			stop = s.stillDead(ctx)
		}
		if stop != nil {
			res.skipped(w, v, stop)
			continue
		}
		what, err := o.release(ctx, w, s, v)
		if err != nil {
			res.skipped(w, v, err)
			continue
		}
		res.released(w, v, what, s.volumeLeft(ctx, v))
	}
	return res
}

// release releases one volume: its claim as planned, its pods gone, the last checks, its delete with a
// UID precondition, then its re-creation unless a StatefulSet generates it. It says what it did.
func (o *Options) release(ctx context.Context, w io.Writer, s *scope, v liqojanitor.PinnedVolume) (string, error) {
	old, err := s.samePVC(ctx, v)
	if err != nil {
		return "", err
	}
	if err := o.awaitUsersGone(ctx, w, s, v); err != nil {
		return "", err
	}
	if err := s.lastChecks(ctx, v); err != nil {
		return "", err
	}
	if o.BeforeDelete != nil {
		o.BeforeDelete(ctx, v)
	}
	if err := s.deleteClaim(ctx, v); err != nil {
		return "", err
	}
	fmt.Fprintf(w, "  deleted (its data stays %s)\n", output.Printable(v.DataOn(s.clusterID)))
	if v.StatefulSet != "" {
		return "deleted; StatefulSet " + v.StatefulSet + " creates a new PVC for its Pending pod", nil
	}
	return o.recreate(ctx, w, s, v, old)
}

// awaitUsersGone refuses v when a pod bound to another node uses it, and waits for those on the dead
// cluster's virtual nodes to be gone; a pod that does not go makes it a skip.
func (o *Options) awaitUsersGone(ctx context.Context, w io.Writer, s *scope, v liqojanitor.PinnedVolume) error {
	pods, err := s.users(ctx, v)
	if err != nil {
		return skip("%s", err.Error())
	}
	left, err := s.awaitPodsGone(ctx, w, pods, o.Timeout, o.poll())
	if err != nil {
		return err
	}
	if len(left) > 0 {
		return skip("still used on %s after %s, never forced: %s", s.clusterID, o.Timeout, strings.Join(left, "; "))
	}
	return nil
}

// lastChecks are made just before the delete, since the wait for the pods may have been long: the
// cluster is still dead (a return may have been recorded meanwhile), and no pod bound to a node uses
// the claim (one may have come meanwhile).
func (s *scope) lastChecks(ctx context.Context, v liqojanitor.PinnedVolume) error {
	if err := s.stillDead(ctx); err != nil {
		return err
	}
	switch pods, err := s.users(ctx, v); {
	case err != nil:
		return skip("%s", err.Error())
	case len(pods) > 0:
		return skip("pod %s came on %s's virtual node %s while the release waited: not deleted; run the command again", pods[0].Name, s.clusterID, pods[0].Spec.NodeName)
	}
	return nil
}

// samePVC is v's PVC if it is still the one planned: there, with the planned UID.
func (s *scope) samePVC(ctx context.Context, v liqojanitor.PinnedVolume) (*corev1.PersistentVolumeClaim, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	switch err := s.c.Get(ctx, types.NamespacedName{Namespace: v.Namespace, Name: v.Name}, pvc); {
	case apierrors.IsNotFound(err):
		return nil, skip("gone since the plan: nothing to release")
	case err != nil:
		return nil, fmt.Errorf("reading it: %w", err)
	case string(pvc.UID) != v.UID:
		return nil, skip("re-created since the plan (now uid %s): left alone", pvc.UID)
	}
	return pvc, nil
}

// deleteClaim deletes v's PVC with a precondition on its UID, so that a PVC of the same name created
// since the plan is never deleted. It removes no finalizer: Kubernetes' pvc-protection lets it go once
// no pod bound to a node uses it, and the PV it was bound to is left to its reclaim policy (Liqo's
// provisioner), never deleted here.
func (s *scope) deleteClaim(ctx context.Context, v liqojanitor.PinnedVolume) error {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: v.Namespace, Name: v.Name}}
	uid := types.UID(v.UID)
	switch err := s.c.Delete(ctx, pvc, client.Preconditions{UID: &uid}); {
	case apierrors.IsConflict(err):
		return skip("re-created between the plan and the delete (the UID precondition failed): left alone")
	case apierrors.IsNotFound(err):
		return skip("gone before the delete: nothing to release")
	case err != nil:
		return fmt.Errorf("deleting it: %w", err)
	}
	return nil
}

// volumeLeft says what is left of v's PV once v is released: the PV is Liqo's provisioner's to delete
// (its reclaim policy), never release-volumes'. It waits a little (the binder marks it Released once it
// sees the claim gone).
func (s *scope) volumeLeft(ctx context.Context, v liqojanitor.PinnedVolume) string {
	pv := &corev1.PersistentVolume{}
	_ = wait.PollUntilContextTimeout(ctx, pvPoll, pvWait, true, func(context.Context) (bool, error) { // reads with ctx: see awaitPodsGone
		err := s.c.Get(ctx, client.ObjectKey{Name: v.PV}, pv)
		if apierrors.IsNotFound(err) {
			pv = nil
			return true, nil
		}
		return err == nil && pv.Status.Phase != corev1.VolumeBound, nil
	})
	if pv == nil {
		return "PV " + v.PV + " is gone"
	}
	line := fmt.Sprintf("PV %s still there: %s", v.PV, pv.Status.Phase)
	if pv.Status.Reason != "" || pv.Status.Message != "" {
		line += " (" + strings.TrimSpace(pv.Status.Reason+" "+pv.Status.Message) + ")"
	}
	return line + ", reclaim policy " + string(pv.Spec.PersistentVolumeReclaimPolicy) + ": left to Liqo's provisioner, never deleted here"
}
