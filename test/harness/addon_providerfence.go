package harness

import (
	"context"
	"sync"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor/providerfence"
)

// StartProviderFence runs the provider fence (janitor/providerfence) in this process against the Env's
// API server, as the provider-only install's ServiceAccount with that install's RBAC
// (ProviderFenceInstall), through cfg when given (a client config of that ServiceAccount, e.g. through an
// Outage), until stop is called; stop may be called more than once. It runs as leader from the start, as
// one replica without leader election does; opts.LiqoNamespace must hold the cluster-ID ConfigMap
// (InstallLocalClusterID).
func (e *Env) StartProviderFence(opts providerfence.Options, cfg *rest.Config) (stop func(), err error) {
	if cfg == nil {
		if cfg, err = e.ProviderFenceConfig(); err != nil {
			return nil, err
		}
	}
	if err := opts.Default().Validate(); err != nil {
		return nil, err
	}
	return e.runInProcess(cfg, providerfence.ReportingController, func(c client.Client, rec events.EventRecorder) runnable {
		return providerfence.New(c, rec, opts).Loop()
	})
}

// runnable is what the manager runs of the provider fence and of the fence renewer (their Loop).
type runnable interface{ Start(context.Context) error }

// runInProcess runs in this process, against the Env's API server through cfg with the binary's client
// limits, the runnable build makes of a client and an event recorder (events reported as
// reportingController), as its elected leader from the start, until stop is called; stop may be called
// more than once.
func (e *Env) runInProcess(cfg *rest.Config, reportingController string, build func(client.Client, events.EventRecorder) runnable) (stop func(), err error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = janitor.DefaultClientQPS, janitor.DefaultClientBurst // the binary's defaults
	c, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(e.ctx)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	broadcaster.StartRecordingToSink(ctx.Done())
	r := build(c, broadcaster.NewRecorder(e.Scheme, reportingController))
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer broadcaster.Shutdown()
		_ = r.Start(ctx) // it returns nil when ctx ends
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}, nil
}

// ProviderFenceConfig is a client config of the provider-only install's ServiceAccount, with its RBAC
// applied (ProviderFenceInstall).
func (e *Env) ProviderFenceConfig() (*rest.Config, error) {
	inst, err := e.ProviderFenceInstall()
	if err != nil {
		return nil, err
	}
	return e.ServiceAccountConfig(inst.Namespace, inst.ServiceAccount)
}

// FenceCredential makes, on this Env as a provider, a consumer's fence credential in its tenant namespace
// ns as `kubectl liqo-janitor fence-credential` makes it (liqojanitor.ApplyFenceCredential), and returns
// the kubeconfig the consumer gets: the ServiceAccount's token (of the TokenRequest API: the harness runs no
// token controller), the API server's CA inline, the tenant namespace as its context's.
func (e *Env) FenceCredential(ctx context.Context, ns string) ([]byte, error) {
	if err := liqojanitor.ApplyFenceCredential(ctx, e.Client, ns, harnessFieldOwner); err != nil {
		return nil, err
	}
	cfg, err := e.ServiceAccountConfig(ns, liqojanitor.FenceCredentialName)
	if err != nil {
		return nil, err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["provider"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData, TLSServerName: cfg.ServerName}
	kc.AuthInfos["fence"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["provider"] = &clientcmdapi.Context{Cluster: "provider", AuthInfo: "fence", Namespace: ns}
	kc.CurrentContext = "provider"
	return clientcmd.Write(*kc)
}
