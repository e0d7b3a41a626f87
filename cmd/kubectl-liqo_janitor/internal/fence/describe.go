package fence

import (
	"strings"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// describe names obj for a person: "pod app/web-0".
func describe(obj client.Object) string {
	kind := "object"
	switch obj.(type) {
	case *corev1.Pod:
		kind = "pod"
	case *corev1.Namespace:
		return "namespace " + obj.GetName()
	case *offloadingv1beta1.ShadowPod:
		kind = "ShadowPod"
	case *authv1beta1.ResourceSlice:
		kind = "ResourceSlice"
	case *offloadingv1beta1.NamespaceMap:
		kind = "NamespaceMap"
	case *authv1beta1.Renew:
		kind = "Renew"
	}
	return kind + " " + obj.GetNamespace() + "/" + obj.GetName()
}

// why says why obj is still there.
func why(obj client.Object) string {
	if obj.GetDeletionTimestamp() == nil {
		switch obj.(type) {
		case *corev1.Pod:
			return "not deleted yet: the garbage collector (kube-controller-manager) deletes it once its ShadowPod is gone"
		case *corev1.Namespace:
			return "not deleted yet: Liqo's namespacemap controller deletes it once its NamespaceMap is being deleted"
		}
		return "not deleted yet"
	}
	since := "terminating since " + obj.GetDeletionTimestamp().UTC().Format(time.RFC3339)
	if f := obj.GetFinalizers(); len(f) > 0 {
		return since + ", waiting for the finalizers " + strings.Join(f, ", ") + " (their owners remove them)"
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		return since + ": no kubelet has confirmed it stopped (node " + o.Spec.NodeName + ")"
	case *corev1.Namespace:
		return since + ": the namespace controller is still deleting what is in it"
	}
	return since
}
