package volumes

import (
	"context"
	"fmt"
	"io"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// How long volumeLeft waits for the PV to leave Bound, and how often it looks.
const (
	pvWait = 10 * time.Second
	pvPoll = 200 * time.Millisecond
)

// A PVC no StatefulSet generates is re-created as Liqo's own `liqoctl move volume` re-creates one
// (pkg/liqoctl/move/volumeutils.go recreatePvc, the same in v1.0.3, v1.1.0 and v1.2.0): the same name,
// namespace and labels, the same spec with spec.volumeName cleared — and no annotation of the old claim,
// so none of those Kubernetes' controllers wrote for the old binding (pv.kubernetes.io/bind-completed,
// pv.kubernetes.io/bound-by-controller, volume.kubernetes.io/selected-node — which names the dead
// cluster's virtual node, whose provisioner would never answer —, volume.kubernetes.io/storage-provisioner,
// volume.beta.kubernetes.io/storage-provisioner) is carried over. One difference, on purpose: the
// operator's two overrides Liqo v1.2.0 reads on the claim when it provisions the remote one
// (pkg/consts/replication.go RemotePVCStorageClassAnnotKey, RemotePVCAccessModeAnnotKey, read by
// pkg/liqo-controller-manager/offloading/storageprovisioner/remoteprovisioner.go ProvisionRemotePVC) are
// kept, since they say how the new claim's data is to be provisioned. Liqo's recreatePvc retries the
// create while the old claim is there (AlreadyExists); here the wait is for the old claim to be gone
// (pvc-protection holds it while a pod bound to a node uses it), and a claim of the same name with another
// UID — someone else's — is left alone, never replaced.

// keptAnnotations are the annotations of the old claim the new one keeps.
var keptAnnotations = []string{"liqo.io/remote-storage-class", "liqo.io/remote-access-modes"}

// recreate waits for v's old PVC old (as read before its delete) to be gone, then creates its successor
// and says so.
func (o *Options) recreate(ctx context.Context, w io.Writer, s *scope, v liqojanitor.PinnedVolume, old *corev1.PersistentVolumeClaim) (string, error) {
	fmt.Fprintf(w, "  waiting for the old claim to be gone before re-creating it (up to %s)\n", o.Timeout)
	if err := s.awaitClaimGone(ctx, v, o.Timeout, o.poll()); err != nil {
		return "", err
	}
	pvc := successor(old)
	switch err := s.c.Create(ctx, pvc); {
	case apierrors.IsAlreadyExists(err):
		return "", skip("deleted, but a PVC of that name was created meanwhile by someone else: not re-created; its data is abandoned")
	case err != nil:
		return "", fmt.Errorf("deleted, but re-creating it failed: %w; create it again from the old claim's labels and spec", err)
	}
	fmt.Fprintf(w, "  re-created as uid %s, unbound\n", pvc.UID)
	return "deleted and re-created as uid " + string(pvc.UID) + ", unbound", nil
}

// awaitClaimGone waits, up to timeout, until v's PVC of the planned UID is gone.
func (s *scope) awaitClaimGone(ctx context.Context, v liqojanitor.PinnedVolume, timeout, poll time.Duration) error {
	var holders []string
	err := wait.PollUntilContextTimeout(ctx, poll, timeout, true, func(context.Context) (bool, error) { // reads with ctx: see awaitPodsGone
		pvc := &corev1.PersistentVolumeClaim{}
		err := s.c.Get(ctx, types.NamespacedName{Namespace: v.Namespace, Name: v.Name}, pvc)
		if apierrors.IsNotFound(err) || (err == nil && string(pvc.UID) != v.UID) {
			return true, nil
		}
		holders = pvc.Finalizers
		return false, err
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		return skip("deleted, but still there after %s (finalizers %s: a pod bound to a node still uses it): not re-created; "+
			"once it is gone, create it again from its labels and spec", timeout, strings.Join(holders, ", "))
	}
	return err
}

// successor is the PVC that replaces old: recreatePvc's, with the operator's remote overrides kept.
func successor(old *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: old.Name, Namespace: old.Namespace, Labels: maps.Clone(old.Labels)},
		Spec:       *old.Spec.DeepCopy(),
	}
	pvc.Spec.VolumeName = ""
	for _, k := range keptAnnotations {
		if v, ok := old.Annotations[k]; ok {
			if pvc.Annotations == nil {
				pvc.Annotations = map[string]string{}
			}
			pvc.Annotations[k] = v
		}
	}
	return pvc
}
