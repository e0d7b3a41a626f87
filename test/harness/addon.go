package harness

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/liqo-janitor/liqo-janitor/janitor/liqoapi"
	"github.com/liqo-janitor/liqo-janitor/webhook"
)

// ClusterIDConfigMap is Liqo's cluster-ID ConfigMap for a local cluster named id, in namespace ns.
func ClusterIDConfigMap(ns, id string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "liqo-clusterid-configmap", Namespace: ns,
			Labels: map[string]string{liqoapi.ClusterIDConfigMapNameLabel: liqoapi.ClusterIDConfigMapNameValue}},
		Data: map[string]string{liqoapi.ClusterIDConfigMapKey: id},
	}
}

// InstallLocalClusterID creates Liqo's namespace and its cluster-ID ConfigMap, as Liqo's chart does.
func (e *Env) InstallLocalClusterID(ctx context.Context, ns, id string) error {
	for _, obj := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, ClusterIDConfigMap(ns, id)} {
		if err := e.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %s: %w", obj.GetName(), err)
		}
	}
	return nil
}

// StartGate serves the gate in a manager wired as cmd/liqo-janitor wires it, for the webhook
// configurations registered through Options.WebhookPaths, until Stop; it returns once the webhook server
// accepts connections.
func (e *Env) StartGate(liqoNamespace string, opts webhook.Options) error {
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          crwebhook.NewServer(e.WebhookOptions()),
		Cache:                  cache.Options{ByObject: liqoapi.CacheByObject(liqoNamespace)},
	})
	if err != nil {
		return err
	}
	gate := &webhook.Gate{Client: mgr.GetClient(), Reader: mgr.GetCache(), LiqoNamespace: liqoNamespace, Options: opts}
	if err := gate.SetupWithManager(mgr); err != nil {
		return err
	}
	e.Go(mgr.Start)
	return e.WaitForWebhookServer(context.Background())
}
