package harness

import (
	"context"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// PlayTokenController fills a fence credential's token Secret (liqojanitor.FenceCredentialTokenSecret) in
// namespace ns as Kubernetes' token controller does — the harness's kube-controller-manager does not run
// it —: a token of its ServiceAccount bound to the Secret (deleting either revokes it), and the API
// server's CA; until stop, which waits for it to end.
func (e *Env) PlayTokenController(ctx context.Context, ns string) (stop func(), err error) {
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			s, err := cs.CoreV1().Secrets(ns).Get(ctx, liqojanitor.FenceCredentialTokenSecret, metav1.GetOptions{})
			if err != nil || len(s.Data[corev1.ServiceAccountTokenKey]) > 0 {
				return false, nil //nolint:nilerr // not made yet, or filled: look again, as the controller's watch would
			}
			tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, s.Annotations[corev1.ServiceAccountNameKey], &authenticationv1.TokenRequest{
				Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{
					Kind: "Secret", APIVersion: "v1", Name: s.Name, UID: s.UID}}}, metav1.CreateOptions{})
			if err != nil {
				return false, nil //nolint:nilerr // its ServiceAccount not made yet: look again
			}
			s.Data = map[string][]byte{corev1.ServiceAccountTokenKey: []byte(tr.Status.Token), corev1.ServiceAccountRootCAKey: e.Config.CAData}
			_, _ = cs.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
			return false, nil
		})
	}()
	return func() { cancel(); <-done }, nil
}
