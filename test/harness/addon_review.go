package harness

import (
	"encoding/json"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// UnconfirmedMarkReview is the AdmissionReview of alice's request that sets the mark on a ForeignCluster
// without the confirmation: the gate refuses it (and, doing so, fills its request metrics). Send it with
// Env.Review.
func UnconfirmedMarkReview() *admissionv1.AdmissionReview {
	old := &liqov1beta1.ForeignCluster{TypeMeta: metav1.TypeMeta{APIVersion: liqov1beta1.GroupVersion.String(), Kind: "ForeignCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: "provider-review", UID: "u-1"}, Spec: liqov1beta1.ForeignClusterSpec{ClusterID: "provider-review"}}
	marked := old.DeepCopy()
	marked.Annotations = map[string]string{liqojanitor.MarkAnnotation: liqojanitor.MarkValue}
	raw := func(o any) runtime.RawExtension {
		data, _ := json.Marshal(o) // a ForeignCluster always marshals
		return runtime.RawExtension{Raw: data}
	}
	return &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "review-1", Name: old.Name, Operation: admissionv1.Update,
			Kind:     metav1.GroupVersionKind{Group: "core.liqo.io", Version: "v1beta1", Kind: "ForeignCluster"},
			Resource: metav1.GroupVersionResource{Group: "core.liqo.io", Version: "v1beta1", Resource: "foreignclusters"},
			UserInfo: authenticationv1.UserInfo{Username: "alice"}, Object: raw(marked), OldObject: raw(old)},
	}
}
