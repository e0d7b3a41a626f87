package harness

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/liqo-janitor/liqo-janitor/janitor"
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

// StartJanitor runs the janitor in a manager of its own, wired as cmd/liqo-janitor wires it (with the
// binary's client rate limits, 1000 QPS and a burst of 2000), until stop is called; stop may be called
// more than once and returns the manager's error. Several janitors may run one after the other in a
// process: controller-name validation is off.
func (e *Env) StartJanitor(opts janitor.Options) (stop func() error, err error) {
	if opts.Workers == 0 {
		opts.Workers = 32
	}
	cfg := rest.CopyConfig(e.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{ByObject: janitor.CacheByObject(opts)},
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, err
	}
	r := &janitor.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("liqo-janitor"), Options: opts}
	if err := r.SetupWithManager(mgr, 4); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	var stopErr error
	return func() error {
		once.Do(func() {
			cancel()
			stopErr = <-done
		})
		return stopErr
	}, nil
}
