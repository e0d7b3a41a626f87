package janitor

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// podWatcher watches the pods of dead virtual nodes only.
//
// Why not a pod cache: a cluster-wide pod informer would hold every pod of the consumer in memory, and
// memory must not grow with pods unrelated to dead clusters. Why not a list per pass: a terminating pod
// that appears on a dead node must be handled within seconds, without polling. So for each virtual node
// of a dead cluster the janitor runs one metadata-only informer filtered server-side with the field
// selector spec.nodeName=<node>: it costs nothing for pods elsewhere, and its events enqueue the node's
// ForeignCluster. Informers stop when the cluster is no longer dead or the node is gone.
type podWatcher struct {
	client metadata.Interface
	events chan event.GenericEvent

	mu      sync.Mutex
	nodes   map[string]*nodePods // by node name
	stopped bool                 // the manager is stopping: start no more informers
}

type nodePods struct {
	cluster  string // the ForeignCluster's name, enqueued on events
	informer toolscache.SharedIndexInformer
	stop     chan struct{}
	// draining: the node's VirtualNode is being deleted, so every pod on it is work, not only
	// terminating ones.
	draining atomic.Bool
}

func newPodWatcher(c metadata.Interface) *podWatcher {
	return &podWatcher{client: c, events: make(chan event.GenericEvent, 1024), nodes: map[string]*nodePods{}}
}

// pods returns the pods bound to node, starting (and syncing) the node's informer on first use; draining
// says whether every pod event on the node is work, or only those of terminating pods.
func (w *podWatcher) pods(ctx context.Context, cluster, node string, draining bool) ([]client.Object, error) {
	np := w.ensure(cluster, node)
	if np == nil {
		return nil, fmt.Errorf("not watching the pods of virtual node %s: the janitor is stopping", node)
	}
	np.draining.Store(draining)
	// Poll the sync finely: client-go's WaitForCacheSync checks every 100 ms, a tenth of a whole clean-up.
	if err := wait.PollUntilContextCancel(ctx, 5*time.Millisecond, true, func(context.Context) (bool, error) {
		return np.informer.HasSynced(), nil
	}); err != nil {
		return nil, fmt.Errorf("syncing the pods of virtual node %s: %w", node, err)
	}
	var out []client.Object
	for _, item := range np.informer.GetStore().List() {
		pod := item.(*metav1.PartialObjectMetadata).DeepCopy()
		pod.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
		out = append(out, pod)
	}
	return out, nil
}

func (w *podWatcher) ensure(cluster, node string) *nodePods {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return nil
	}
	if np, ok := w.nodes[node]; ok {
		return np
	}
	informer := metadatainformer.NewFilteredMetadataInformer(w.client, corev1.SchemeGroupVersion.WithResource("pods"),
		metav1.NamespaceAll, 0, toolscache.Indexers{}, func(o *metav1.ListOptions) {
			o.FieldSelector = "spec.nodeName=" + node
		}).Informer()
	// managedFields are never read: drop them (SetTransform fails only once the informer runs; not yet)
	_ = informer.SetTransform(cache.TransformStripManagedFields())
	np := &nodePods{cluster: cluster, informer: informer, stop: make(chan struct{})}
	notify := func() {
		w.events <- event.GenericEvent{Object: &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}}
	}
	enqueue := func(obj any) {
		if pod, ok := obj.(*metav1.PartialObjectMetadata); ok && pod.DeletionTimestamp == nil && !np.draining.Load() {
			return // only terminating pods are work, unless the node's VirtualNode is being deleted
		}
		notify()
	}
	_, _ = informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		// A pod of a dead node that goes (its owner released a finalizer the janitor left) is progress
		// of the clean-up's record: a pass counts it done.
		DeleteFunc: func(any) { notify() },
	})
	go informer.Run(np.stop)
	w.nodes[node] = np
	return np
}

// Start runs until ctx ends, then stops every node informer (the manager runs it, on the leader only).
func (w *podWatcher) Start(ctx context.Context) error {
	<-ctx.Done()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	for node, np := range w.nodes {
		close(np.stop)
		delete(w.nodes, node)
	}
	return nil
}

// retain stops the informers of cluster's nodes that are not in keep (all of them when keep is empty).
func (w *podWatcher) retain(cluster string, keep map[string]bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for node, np := range w.nodes {
		if np.cluster == cluster && !keep[node] {
			close(np.stop)
			delete(w.nodes, node)
		}
	}
}
