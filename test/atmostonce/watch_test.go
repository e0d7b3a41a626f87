package atmostonce_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// podEvent is one event of a watch on pods, with when this process received it (this machine's clock): the
// change it reports happened at or before then.
type podEvent struct {
	at  time.Time
	typ watch.EventType
	pod *corev1.Pod
}

// podWatch records every event of a watch on pods from a list, until the test ends.
type podWatch struct {
	initial []corev1.Pod

	mu     sync.Mutex
	events []podEvent
	closed bool
}

// watchPods lists the pods of namespace ns ("" for all) matching selector, then watches them from that
// list's resourceVersion: no change after the list is missed.
func watchPods(t *testing.T, cfg *rest.Config, ns, selector string) *podWatch {
	t.Helper()
	g := NewWithT(t)
	cs, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	ctx := context.Background() // t.Context() ends before the test's cleanups read the record
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	g.Expect(err).NotTo(HaveOccurred())
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: list.ResourceVersion})
	g.Expect(err).NotTo(HaveOccurred())
	pw := &podWatch{initial: list.Items}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			at := time.Now()
			pod, ok := ev.Object.(*corev1.Pod)
			pw.mu.Lock()
			if ok {
				pw.events = append(pw.events, podEvent{at: at, typ: ev.Type, pod: pod})
			} else { // an error event: the watch ends
				pw.closed = true
			}
			pw.mu.Unlock()
		}
		pw.mu.Lock()
		pw.closed = true
		pw.mu.Unlock()
	}()
	t.Cleanup(func() {
		w.Stop()
		<-done
	})
	return pw
}

// snapshot returns the events so far, and whether the watch is still open (else events may be missing).
func (pw *podWatch) snapshot() ([]podEvent, bool) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return append([]podEvent(nil), pw.events...), !pw.closed
}

// lastGone is when the last of the listed pods was seen deleted (zero while one is left).
func (pw *podWatch) lastGone() time.Time {
	events, _ := pw.snapshot()
	live := map[types.UID]bool{}
	for _, p := range pw.initial {
		live[p.UID] = true
	}
	for _, ev := range events {
		switch ev.typ {
		case watch.Added:
			live[ev.pod.UID] = true
		case watch.Deleted:
			delete(live, ev.pod.UID)
			if len(live) == 0 {
				return ev.at
			}
		}
	}
	return time.Time{}
}

// firstDeletion is the first event showing one of the pods of uids deleted or being deleted (its
// deletionTimestamp set), and the pod (zero, nil: none yet).
func (pw *podWatch) firstDeletion(uids map[types.UID]string) (time.Time, *corev1.Pod) {
	events, _ := pw.snapshot()
	for _, ev := range events {
		if _, ok := uids[ev.pod.UID]; ok && (ev.typ == watch.Deleted || ev.pod.DeletionTimestamp != nil) {
			return ev.at, ev.pod
		}
	}
	return time.Time{}, nil
}

// firstAdded is the first pod created after the list that owner controls, with when it was seen (zero,
// nil: none yet).
func (pw *podWatch) firstAdded(owner types.UID) (time.Time, *corev1.Pod) {
	events, _ := pw.snapshot()
	for _, ev := range events {
		if ref := metav1.GetControllerOf(ev.pod); ev.typ == watch.Added && ref != nil && ref.UID == owner {
			return ev.at, ev.pod
		}
	}
	return time.Time{}, nil
}

// deleteRecorder is the janitor's client, recording when it first sent a deletion of an object in
// namespace ns (the consumer's application namespace: only its pods are deleted there), on this machine's
// clock, taken before the request is sent: nothing it deletes was deleted earlier by it.
type deleteRecorder struct {
	client.Client
	ns string

	mu    sync.Mutex
	first time.Time
	name  string
}

func (d *deleteRecorder) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if obj.GetNamespace() == d.ns {
		now := time.Now()
		d.mu.Lock()
		if d.first.IsZero() {
			d.first, d.name = now, obj.GetName()
		}
		d.mu.Unlock()
	}
	return d.Client.Delete(ctx, obj, opts...)
}

func (d *deleteRecorder) firstSent() (time.Time, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.first, d.name
}
