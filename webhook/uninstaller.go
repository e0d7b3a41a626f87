package webhook

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Rule 18's binding: Liqo's uninstaller is a live pod of Liqo's pre-delete Job, not whoever holds a token
// of its ServiceAccount's name. Liqo's chart runs the Job and its ServiceAccount under one name,
// <chart name>-pre-delete (deployments/liqo/templates/pre-delete-job.yaml and pre-delete-rbac.yaml,
// liqo.prefixedName of "pre-delete", the same in Liqo v1.0.3, v1.1.0 and v1.2.0), as a Helm pre-delete hook
// deleted only when it succeeds (liqo.preDeleteAnnotations: hook-delete-policy before-hook-creation,
// hook-succeeded).

// The userInfo.extra keys kube-apiserver sets for a ServiceAccount token (k8s.io/apiserver
// pkg/authentication/serviceaccount ServiceAccountInfo.UserInfo, Kubernetes v1.37): the pod a token is
// bound to (a TokenRequest with boundObjectRef kind Pod — the kubelet's projected tokens — whose pod the
// API server checks exists with that UID at every request: k8s.io/kubernetes pkg/serviceaccount claims.go
// Validate), and the credential ID ("JTI=<the token's jti>", for every token kube-apiserver issues since
// ServiceAccountTokenJTI, beta and on in 1.30, GA in 1.32; pkg/authentication/user CredentialIDKey).
const (
	podNameExtra      = "authentication.kubernetes.io/pod-name"
	podUIDExtra       = "authentication.kubernetes.io/pod-uid"
	credentialIDExtra = "authentication.kubernetes.io/credential-id"
)

// liqoUninstaller reports whether the requester is Liqo's uninstaller (rule 18): one of
// Options.LiqoUninstallerUsers whose token is bound to a pod that exists now, read live from the API
// server, in that ServiceAccount's namespace, with the token's UID, running as that ServiceAccount, not
// ended, controlled by a Job of the ServiceAccount's name. why says why a named identity is not taken for
// it ("" for anyone else). A token minted for the ServiceAccount without a pod binding carries no pod; an
// impersonation of it carries one only if the impersonator may also impersonate these userextras
// (Impersonate-Extra-…: verb impersonate on resource userextras), and then must name a live pod of the
// Job and its UID.
func (g *gate) liqoUninstaller(ctx context.Context, user authenticationv1.UserInfo) (exempt bool, why string) {
	if !g.options.isLiqoUninstaller(user.Username) {
		return false, ""
	}
	name, uid, why := boundPod(user)
	if why != "" {
		return false, why
	}
	ns, sa := splitServiceAccount(user.Username)
	pod := &corev1.Pod{}
	switch err := g.apiReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod); {
	case apierrors.IsNotFound(err):
		return false, fmt.Sprintf("pod %s/%s, which its token is bound to, does not exist", ns, name)
	case err != nil:
		return false, fmt.Sprintf("reading pod %s/%s, which its token is bound to: %v", ns, name, err)
	}
	why = uninstallerPodRefusal(sa, uid, pod)
	return why == "", why
}

// boundPod reads the pod the request's token is bound to from its userInfo.extra, and says what is
// missing when it names none.
func boundPod(user authenticationv1.UserInfo) (name string, uid types.UID, why string) {
	names, uids, creds := user.Extra[podNameExtra], user.Extra[podUIDExtra], user.Extra[credentialIDExtra]
	switch {
	case len(names) != 1 || len(uids) != 1 || names[0] == "" || uids[0] == "":
		return "", "", "its token is not bound to a pod (a token of the ServiceAccount requested without a pod binding, " +
			"or an impersonation of it, is not Liqo's uninstaller Job)"
	case len(creds) != 1 || creds[0] == "":
		return "", "", "its credentials carry no " + credentialIDExtra + " (kube-apiserver sets one for every " +
			"ServiceAccount token it issues)"
	}
	return names[0], types.UID(uids[0]), ""
}

// uninstallerPodRefusal says why pod, which the token is bound to with uid, is not a live pod of Liqo's
// pre-delete Job running as ServiceAccount sa ("" when it is).
func uninstallerPodRefusal(sa string, uid types.UID, pod *corev1.Pod) string {
	ref := pod.Namespace + "/" + pod.Name
	owner := metav1.GetControllerOf(pod)
	switch {
	case pod.UID != uid:
		return fmt.Sprintf("pod %s has UID %s, not the %s its token is bound to", ref, pod.UID, uid)
	case pod.DeletionTimestamp != nil:
		return fmt.Sprintf("pod %s is being deleted", ref)
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return fmt.Sprintf("pod %s has ended (%s)", ref, pod.Status.Phase)
	case pod.Spec.ServiceAccountName != sa:
		return fmt.Sprintf("pod %s runs as ServiceAccount %q, not %q", ref, pod.Spec.ServiceAccountName, sa)
	case owner == nil || owner.APIVersion != batchv1.SchemeGroupVersion.String() || owner.Kind != "Job" || owner.Name != sa:
		return fmt.Sprintf("pod %s is not a pod of Job %s (Liqo's pre-delete Job, named as its ServiceAccount)", ref, sa)
	}
	return ""
}
