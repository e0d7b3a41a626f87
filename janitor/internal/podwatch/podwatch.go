// Package podwatch lists the pods of dead clusters' virtual nodes for liqo-janitor: Watcher from per-node
// watches in the controller, Live from the API server at each call, for a plan made outside it.
//
// Why not a pod cache: a cluster-wide pod informer would hold every pod of the consumer in memory, and
// memory must not grow with pods unrelated to dead clusters. Why not a list per pass: a terminating pod
// that appears on a dead node must be handled within seconds, without polling. So for each virtual node
// of a dead cluster the janitor runs one metadata-only informer filtered server-side with the field
// selector spec.nodeName=<node>: it costs nothing for pods elsewhere, and its events enqueue the node's
// ForeignCluster. Informers stop when the cluster is no longer dead or the node is gone (WatchOnly).
//
// Why a pass pauses them (Pause, Resume): each pod the pass force-deletes is two watch events (MODIFIED,
// DELETED) to the node's informer, news of the pass's own writes. At thousands of pods that stream
// outruns the watch's buffer in the API server, which then closes the watch as unresponsive and serves a
// re-watch from its event window — load on the API server that is already the limit, for nothing (see
// test/e2e/bench/REPORT.md). So while a pass writes pods, their nodes are not watched; when it ends, fresh
// informers list the nodes again and compare with what the pass left behind: only a pod the pass did
// not leave so — new, changed, or gone — starts a pass. The pods a pass leaves on purpose (blocked,
// left alone) start none.
package podwatch

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// Watcher watches the pods of dead virtual nodes only, one metadata-only informer per node (see the
// package documentation); run Start (the manager does, on the leader only).
type Watcher struct {
	client metadata.Interface
	events chan event.GenericEvent

	mu      sync.Mutex
	nodes   map[string]*nodePods // by node name
	stopped bool                 // the manager is stopping: start no more informers
}

// nodePods is the watch of one node's pods.
type nodePods struct {
	cluster string // the ForeignCluster's name, enqueued on events
	// informer and stop are the running informer and what stops it; both nil while a pass has paused it.
	informer toolscache.SharedIndexInformer
	stop     chan struct{}
	// draining: the node's VirtualNode is being deleted, so every pod on it is work, not only
	// terminating ones.
	draining atomic.Bool
}

// Left is what a pass left on each node it paused: node name → pod UID → resourceVersion as the pass
// last saw it.
type Left map[string]map[types.UID]string

// New returns a Watcher that reads pods metadata-only through c; it watches no node until Pods asks.
func New(c metadata.Interface) *Watcher {
	return &Watcher{client: c, events: make(chan event.GenericEvent, 1024), nodes: map[string]*nodePods{}}
}

// Pods returns the pods bound to node, starting (and syncing) the node's informer on first use; its events
// enqueue the ForeignCluster named cluster. draining says whether every pod event on the node is work, or
// only those of terminating pods.
func (w *Watcher) Pods(ctx context.Context, cluster, node string, draining bool) ([]client.Object, error) {
	informer := w.ensure(cluster, node, draining)
	if informer == nil {
		return nil, fmt.Errorf("not watching the pods of virtual node %s: the janitor is stopping", node)
	}
	// Poll the sync finely: client-go's WaitForCacheSync checks every 100 ms, a tenth of a whole clean-up.
	if err := wait.PollUntilContextCancel(ctx, 5*time.Millisecond, true, func(context.Context) (bool, error) {
		return informer.HasSynced(), nil
	}); err != nil {
		return nil, fmt.Errorf("syncing the pods of virtual node %s: %w", node, err)
	}
	var out []client.Object
	for _, item := range informer.GetStore().List() {
		pod := item.(*metav1.PartialObjectMetadata).DeepCopy()
		pod.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
		out = append(out, pod)
	}
	return out, nil
}

// ensure returns node's running informer, starting it if there is none (or it is paused: another
// ForeignCluster of the same cluster ID may be in a pass of its own); nil once the manager stops.
func (w *Watcher) ensure(cluster, node string, draining bool) toolscache.SharedIndexInformer {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return nil
	}
	np, ok := w.nodes[node]
	if !ok {
		np = &nodePods{cluster: cluster}
		w.nodes[node] = np
	}
	np.draining.Store(draining)
	if np.informer == nil {
		// The caller lists the store once it has synced: the initial list is its own, not news.
		w.run(np, node, nil)
	}
	return np.informer
}

// run starts an informer for node's pods. Events after its initial list enqueue the node's cluster when
// they are work; the initial list does only for a resumed watch (left is what the pass that paused it left
// on the node), and only where it differs from what the pass left. w.mu must be held.
func (w *Watcher) run(np *nodePods, node string, left map[types.UID]string) {
	informer := metadatainformer.NewFilteredMetadataInformer(w.client, corev1.SchemeGroupVersion.WithResource("pods"),
		metav1.NamespaceAll, 0, toolscache.Indexers{}, func(o *metav1.ListOptions) {
			o.FieldSelector = "spec.nodeName=" + node
		}).Informer()
	// managedFields are never read: drop them (SetTransform fails only once the informer runs; not yet)
	_ = informer.SetTransform(cache.TransformStripManagedFields())
	cluster := np.cluster
	notify := func() {
		w.events <- event.GenericEvent{Object: &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}}
	}
	isWork := func(obj any) bool {
		pod, ok := obj.(*metav1.PartialObjectMetadata)
		// only terminating pods are work, unless the node's VirtualNode is being deleted
		return !ok || pod.DeletionTimestamp != nil || np.draining.Load()
	}
	reg, _ := informer.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if isWork(obj) && (!initial || left != nil && changedSince(obj, left)) {
				notify()
			}
		},
		UpdateFunc: func(_, obj any) {
			if isWork(obj) {
				notify()
			}
		},
		// A pod of a dead node that goes (its owner released a finalizer the janitor left) is progress
		// of the clean-up's record: a pass counts it done.
		DeleteFunc: func(any) { notify() },
	})
	np.informer, np.stop = informer, make(chan struct{})
	go informer.Run(np.stop)
	if left != nil && reg != nil {
		go notifyIfGone(np.stop, reg, informer.GetStore(), left, notify)
	}
}

// changedSince reports whether a pod is not as a pass left it: new, or changed since.
func changedSince(obj any, left map[types.UID]string) bool {
	pod, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return true
	}
	rv, known := left[pod.UID]
	return !known || rv != pod.ResourceVersion
}

// notifyIfGone waits for a resumed informer's initial list and notifies once if a pod the pass left is
// no longer there (gone while the node was not watched: progress, as a delete event would be).
func notifyIfGone(stop <-chan struct{}, reg toolscache.ResourceEventHandlerRegistration, store toolscache.Store,
	left map[types.UID]string, notify func()) {
	if !toolscache.WaitForCacheSync(stop, reg.HasSynced) {
		return
	}
	there := map[types.UID]bool{}
	for _, item := range store.List() {
		if pod, ok := item.(*metav1.PartialObjectMetadata); ok {
			there[pod.UID] = true
		}
	}
	for uid := range left {
		if !there[uid] {
			notify()
			return
		}
	}
}

// Pause stops watching cluster's nodes while a pass writes their pods (see the package documentation);
// Resume undoes it.
func (w *Watcher) Pause(cluster string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, np := range w.nodes {
		if np.cluster == cluster {
			np.halt()
		}
	}
}

// Resume watches cluster's paused nodes again, given what the pass left on each: a pod that differs from
// it, or is missing, enqueues the cluster once the fresh informer has listed the node.
func (w *Watcher) Resume(cluster string, left Left) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	for node, np := range w.nodes {
		if np.cluster == cluster && np.informer == nil {
			onNode := left[node]
			if onNode == nil {
				onNode = map[types.UID]string{}
			}
			w.run(np, node, onNode)
		}
	}
}

// Start runs until ctx ends, then stops every node informer (the manager runs it, on the leader only).
func (w *Watcher) Start(ctx context.Context) error {
	<-ctx.Done()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	for node, np := range w.nodes {
		np.halt()
		delete(w.nodes, node)
	}
	return nil
}

// WatchOnly stops the informers of cluster's nodes that are not in keep (all of them when keep is empty).
func (w *Watcher) WatchOnly(cluster string, keep map[string]bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for node, np := range w.nodes {
		if np.cluster == cluster && !keep[node] {
			np.halt()
			delete(w.nodes, node)
		}
	}
}

// halt stops np's informer, if it runs.
func (np *nodePods) halt() {
	if np.stop != nil {
		close(np.stop)
		np.informer, np.stop = nil, nil
	}
}

// Events is where the watches enqueue the ForeignCluster of a node whose pods changed (a source for the
// controller).
func (w *Watcher) Events() <-chan event.GenericEvent { return w.events }
