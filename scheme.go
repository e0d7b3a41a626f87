package liqojanitor

import (
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
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
