package harness

import (
	"context"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// LiqoUninstallerPod lays out Liqo's pre-delete Job in namespace as Liqo's chart makes it (a ServiceAccount
// and a Job both named liqojanitor.LiqoPreDeleteServiceAccount: deployments/liqo/templates/pre-delete-job.yaml,
// Liqo v1.0.3 to v1.2.0), the Job suspended so that nothing else starts a pod of it, and a pod of that Job
// running as that ServiceAccount (deleted when the test ends). It returns the pod and a rest.Config whose
// token is bound to the pod (a TokenRequest with boundObjectRef, as the kubelet's projected tokens are: no
// kubelet needed), the credentials gate rule 18 takes for Liqo's uninstaller.
func (e *Env) LiqoUninstallerPod(tb testing.TB, namespace string) (*corev1.Pod, *rest.Config, error) {
	tb.Helper()
	ctx := context.Background()
	name := liqojanitor.LiqoPreDeleteServiceAccount
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: batchv1.JobSpec{Suspend: ptr.To(true), Template: corev1.PodTemplateSpec{Spec: preDeletePodSpec(name)}}}
	for _, o := range []client.Object{sa, job} {
		if err := e.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, nil, err
		}
	}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
		return nil, nil, err
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: name + "-",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "Job",
			Name: job.Name, UID: job.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: preDeletePodSpec(name)}
	if err := e.Client.Create(ctx, pod); err != nil {
		return nil, nil, err
	}
	tb.Cleanup(func() { _ = e.Client.Delete(context.Background(), pod) })
	cfg, err := e.serviceAccountConfig(namespace, name, &authenticationv1.BoundObjectReference{
		APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID})
	if err != nil {
		return nil, nil, err
	}
	cfg.WrapTransport = nil // the uninstaller is not the product: its RBAC refusals are no RBACDenials
	return pod, cfg, nil
}

// preDeletePodSpec is the pod of Liqo's pre-delete Job, as far as the API server needs one.
func preDeletePodSpec(serviceAccount string) corev1.PodSpec {
	return corev1.PodSpec{ServiceAccountName: serviceAccount, RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "pre-delete-job", Image: "ghcr.io/liqotech/uninstaller"}}}
}
