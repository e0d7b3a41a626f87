package webhook

import (
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestUninstallerBinding: rule 18's exemption holds only for a token bound to a live pod of the Job named
// as the ServiceAccount, running as it; each missing piece is named.
func TestUninstallerBinding(t *testing.T) {
	t.Parallel()
	const sa = "liqo-pre-delete"
	bound := authenticationv1.UserInfo{Extra: map[string]authenticationv1.ExtraValue{
		podNameExtra: {"liqo-pre-delete-x"}, podUIDExtra: {"uid-1"}, credentialIDExtra: {"JTI=1"}}}
	live := func(edit func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "liqo", Name: "liqo-pre-delete-x", UID: "uid-1",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: sa, Controller: ptr.To(true)}}},
			Spec: corev1.PodSpec{ServiceAccountName: sa}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		if edit != nil {
			edit(p)
		}
		return p
	}
	tests := map[string]struct {
		user    authenticationv1.UserInfo
		pod     *corev1.Pod
		wantWhy string
	}{
		"a token bound to a running pod of the Job": {user: bound, pod: live(nil)},
		"a pending pod of the Job (not started yet) counts": {user: bound,
			pod: live(func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending })},
		"no pod binding (a TokenRequest without boundObjectRef, an impersonation)": {
			wantWhy: "its token is not bound to a pod"},
		"a pod binding without the credential ID (an impersonation of the pod's extras)": {
			user:    authenticationv1.UserInfo{Extra: map[string]authenticationv1.ExtraValue{podNameExtra: {"p"}, podUIDExtra: {"u"}}},
			wantWhy: "carry no authentication.kubernetes.io/credential-id"},
		"another pod of that name (the UID differs)": {user: bound,
			pod: live(func(p *corev1.Pod) { p.UID = "uid-2" }), wantWhy: "has UID uid-2, not the uid-1"},
		"a pod being deleted": {user: bound,
			pod: live(func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }), wantWhy: "is being deleted"},
		"a pod that has ended": {user: bound,
			pod: live(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), wantWhy: "has ended (Failed)"},
		"a pod running as another ServiceAccount": {user: bound,
			pod: live(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "default" }), wantWhy: `runs as ServiceAccount "default"`},
		"a pod of no Job": {user: bound,
			pod: live(func(p *corev1.Pod) { p.OwnerReferences = nil }), wantWhy: "is not a pod of Job liqo-pre-delete"},
		"a pod of another Job": {user: bound,
			pod: live(func(p *corev1.Pod) { p.OwnerReferences[0].Name = "other" }), wantWhy: "is not a pod of Job liqo-pre-delete"},
		"a pod owned by a Job that does not control it": {user: bound,
			pod: live(func(p *corev1.Pod) { p.OwnerReferences[0].Controller = nil }), wantWhy: "is not a pod of Job liqo-pre-delete"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, uid, why := boundPod(tc.user)
			if why == "" {
				why = uninstallerPodRefusal(sa, uid, tc.pod)
			}
			if (why == "") != (tc.wantWhy == "") || !strings.Contains(why, tc.wantWhy) {
				t.Fatalf("why = %q, want %q", why, tc.wantWhy)
			}
		})
	}
}

// TestTheGateNeedsTheJanitorsNamespace: rule 30 reads the returns the janitor keeps in its namespace, so
// options without it are refused (Setup validates them) rather than failing every marked deletion later.
func TestTheGateNeedsTheJanitorsNamespace(t *testing.T) {
	t.Parallel()
	if err := (Options{}).Default().Validate(); err == nil || !strings.Contains(err.Error(), "the gate needs the janitor's namespace") {
		t.Fatalf("Validate() without a namespace = %v, want the namespace asked for", err)
	}
	if err := (Options{Namespace: "liqo-janitor-system"}).Default().Validate(); err != nil {
		t.Fatalf("Validate() with a namespace = %v", err)
	}
}
