package liqoapi

import (
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NewScheme returns a scheme that knows the built-in Kubernetes types and the Liqo types the add-on reads
// and writes: ForeignCluster (core.liqo.io), ResourceSlice, Renew and Identity (authentication.liqo.io),
// NamespaceMap, NamespaceOffloading and VirtualNode (offloading.liqo.io).
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(AddToScheme(s))
	return s
}

// AddToScheme registers the built-in Kubernetes types and the Liqo API groups in s.
func AddToScheme(s *runtime.Scheme) error {
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		liqov1beta1.AddToScheme,
		authv1beta1.AddToScheme,
		offloadingv1beta1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return err
		}
	}
	return nil
}

// CacheByObject restricts the manager's cache for kinds the add-on reads but must not cache cluster-wide:
// only Liqo's cluster-ID ConfigMap, in the Liqo namespace.
func CacheByObject(liqoNamespace string) map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}: {
			Namespaces: map[string]cache.Config{liqoNamespace: {}},
			Label:      labels.SelectorFromSet(labels.Set{ClusterIDConfigMapNameLabel: ClusterIDConfigMapNameValue}),
		},
	}
}
