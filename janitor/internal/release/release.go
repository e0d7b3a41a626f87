package release

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Outcome is what happened to one candidate object.
type Outcome int

const (
	// Released means the janitor removed its finalizer, or force-deleted the pod.
	Released Outcome = iota
	// ReleasedButBlocked means the janitor did its part, but the object stays because of someone else's
	// finalizer.
	ReleasedButBlocked
	// Blocked means the object stays because of a finalizer the janitor does not own, or it is a pod on a
	// VirtualNode being deleted that Liqo's drain does not select, left alone.
	Blocked
	// Gone means the object disappeared (or was replaced) before the janitor acted.
	Gone
	// Waiting means the object is tied to a live cluster too (a NamespaceOffloading), or is no longer
	// terminating.
	Waiting
	// WouldRelease means, in a dry run or plan, that the janitor would have released the object.
	WouldRelease
	// WouldReleaseButBlocked means, in a dry run or plan, that the janitor would do its part, but someone
	// else's finalizer would keep the object.
	WouldReleaseButBlocked
)

// maxAttempts bounds the re-read-and-retry loop when the finalizer list changes under the janitor.
const maxAttempts = 5

// RemoveFinalizer removes finalizer from obj — only if obj is being deleted — with a JSON patch that tests
// the object's UID and the exact list entry before removing it, so a concurrent writer's entries are never
// lost, the list is never replaced wholesale, and a re-created object of the same name is never touched.
// When a test fails (the list moved), it re-reads the object through live and tries again on the fresh
// list — unless the object it read is another one (a new UID): that one is not the janitor's to touch.
// obj is updated to the API server's answer. With dryRun it writes nothing and says what it would do.
func RemoveFinalizer(ctx context.Context, c client.Writer, live client.Reader, obj client.Object, finalizer string, dryRun bool) (Outcome, error) {
	return RemoveFinalizerIf(ctx, c, live, obj, finalizer, dryRun, nil)
}

// Check decides, before each attempt of RemoveFinalizerIf, on the object as it stands for that attempt
// (as given for the first, as re-read from the API server for every retry): ok to write, or the outcome
// to return instead. attempt counts from 0.
type Check func(ctx context.Context, obj client.Object, attempt int) (ok bool, instead Outcome, err error)

// RemoveFinalizerIf is RemoveFinalizer with a decision taken again on every attempt, conflict retries
// included: check runs right before each write (and before a dry run's answer), on the object that write
// is made for, so a retry never writes on a decision taken for an older version of the world. A nil
// check always allows.
func RemoveFinalizerIf(ctx context.Context, c client.Writer, live client.Reader, obj client.Object, finalizer string,
	dryRun bool, check Check) (Outcome, error) {
	uid := obj.GetUID()
	for attempt := range maxAttempts {
		if attempt > 0 {
			// The last write's test op failed: someone changed the list, or the object was replaced. Re-read.
			if o, done, err := reread(ctx, live, obj, uid); done {
				return o, err
			}
		}
		if o, retry, err := tryRemove(ctx, c, obj, finalizer, dryRun, check, attempt); !retry {
			return o, err
		}
	}
	return 0, fmt.Errorf("removing finalizer %s: the finalizer list kept changing (%d attempts)", finalizer, maxAttempts)
}

// tryRemove is one attempt of RemoveFinalizerIf on obj as it was last read; retry says its write lost a
// race (a test op failed) and obj must be re-read.
func tryRemove(ctx context.Context, c client.Writer, obj client.Object, finalizer string, dryRun bool,
	check Check, attempt int) (o Outcome, retry bool, err error) {
	if obj.GetDeletionTimestamp().IsZero() {
		return Waiting, false, nil
	}
	i := slices.Index(obj.GetFinalizers(), finalizer)
	if i < 0 {
		return blockedIfFinalizers(obj), false, nil
	}
	if check != nil {
		if ok, instead, err := check(ctx, obj, attempt); err != nil || !ok {
			return instead, false, err
		}
	}
	if dryRun {
		if len(obj.GetFinalizers()) > 1 {
			return WouldReleaseButBlocked, false, nil
		}
		return WouldRelease, false, nil
	}
	err = c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, finalizerPatch(obj.GetUID(), i, finalizer)))
	switch {
	case err == nil && len(obj.GetFinalizers()) > 0 && !obj.GetDeletionTimestamp().IsZero():
		return ReleasedButBlocked, false, nil // ours is gone; the object waits on someone else's
	case err == nil:
		return Released, false, nil
	case apierrors.IsNotFound(err):
		return Gone, false, nil
	case !apierrors.IsInvalid(err) && !apierrors.IsConflict(err):
		return 0, false, fmt.Errorf("removing finalizer %s: %w", finalizer, err)
	}
	return 0, true, nil
}

// reread refreshes obj from the API server after a lost race; done says the attempts end here, with that
// outcome: obj is gone, or was replaced by a new object of the same name (never the janitor's to touch).
func reread(ctx context.Context, live client.Reader, obj client.Object, uid types.UID) (o Outcome, done bool, err error) {
	if err := live.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		if apierrors.IsNotFound(err) {
			return Gone, true, nil
		}
		return 0, true, fmt.Errorf("re-reading after a conflict: %w", err)
	}
	if obj.GetUID() != uid {
		return Gone, true, nil
	}
	return 0, false, nil
}

// finalizerPatch tests that the object is uid and that entry i is finalizer, and removes that entry: a
// write that can only ever remove that one entry of that one object, whatever else changes concurrently.
func finalizerPatch(uid types.UID, i int, finalizer string) []byte {
	path := fmt.Sprintf("/metadata/finalizers/%d", i)
	patch, _ := json.Marshal([]map[string]string{
		{"op": "test", "path": "/metadata/uid", "value": string(uid)},
		{"op": "test", "path": path, "value": finalizer},
		{"op": "remove", "path": path},
	})
	return patch
}

func blockedIfFinalizers(obj client.Object) Outcome {
	if len(obj.GetFinalizers()) > 0 {
		return Blocked
	}
	return Gone
}

// ForceDeletePod deletes a terminating pod — or, with evenIfRunning, one Liqo's drain selects on a
// VirtualNode being deleted (the caller's selection) — with grace period 0 and a UID precondition (a new
// pod with the same name is never touched). A pod carrying finalizers is deleted all the same — it then
// goes as soon as its owners release it — but its finalizers are never stripped and it is counted as
// blocked. With dryRun it writes nothing and says what it would do.
func ForceDeletePod(ctx context.Context, c client.Writer, pod client.Object, evenIfRunning, dryRun bool) (Outcome, error) {
	if pod.GetDeletionTimestamp().IsZero() && !evenIfRunning {
		return Waiting, nil
	}
	if grace := pod.GetDeletionGracePeriodSeconds(); grace != nil && *grace == 0 && len(pod.GetFinalizers()) > 0 {
		return Blocked, nil // already force-deleted, waiting on its owners' finalizers: no re-write
	}
	if dryRun {
		if len(pod.GetFinalizers()) > 0 {
			return WouldReleaseButBlocked, nil
		}
		return WouldRelease, nil
	}
	uid := pod.GetUID()
	err := c.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &uid})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err): // gone, or replaced by a new pod
		return Gone, nil
	case err != nil:
		return 0, fmt.Errorf("force-deleting pod: %w", err)
	case len(pod.GetFinalizers()) > 0:
		return ReleasedButBlocked, nil
	}
	return Released, nil
}
