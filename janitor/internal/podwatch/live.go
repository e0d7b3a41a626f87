package podwatch

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Live lists a node's pods from the API server at each call, metadata only, filtered by spec.nodeName
// there: for a plan made outside the controller (janitor.PlanCluster), which starts no informers. It
// watches nothing, so WatchOnly, Pause and Resume do nothing.
type Live struct{ client metadata.Interface }

// NewLive returns a Live that lists through c.
func NewLive(c metadata.Interface) Live { return Live{client: c} }

// Pods lists the pods bound to node now (cluster and draining matter only to a Watcher).
func (l Live) Pods(ctx context.Context, _, node string, _ bool) ([]client.Object, error) {
	list, err := l.client.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace(metav1.NamespaceAll).
		List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of virtual node %s: %w", node, err)
	}
	out := make([]client.Object, 0, len(list.Items))
	for i := range list.Items {
		pod := &list.Items[i]
		pod.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
		out = append(out, pod)
	}
	return out, nil
}

// WatchOnly does nothing: Live watches no node.
func (Live) WatchOnly(string, map[string]bool) {}

// Pause does nothing: Live watches no node.
func (Live) Pause(string) {}

// Resume does nothing: Live watches no node.
func (Live) Resume(string, Left) {}
