package harness

import (
	"context"
	"sync"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor/fencerenew"
)

// StartFenceRenewer runs the janitor's fence renewer (janitor/fencerenew) in this process against the
// Env's API server as the install's ServiceAccount with the install's RBAC (InstallConfig), until stop is
// called; stop may be called more than once. It runs as leader from the start. Without opts.Namespace it
// gets a fresh namespace of the janitor's own, granted as the release namespace is, which it returns.
func (e *Env) StartFenceRenewer(opts fencerenew.Options) (stop func(), namespace string, err error) {
	ctx, cancel := context.WithCancel(e.ctx)
	defer func() {
		if err != nil {
			cancel()
		}
	}()
	if opts.Namespace == "" {
		if opts.Namespace, err = e.janitorNamespace(ctx); err != nil {
			return nil, "", err
		}
	}
	cfg, err := e.InstallConfig()
	if err != nil {
		return nil, "", err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = janitor.DefaultClientQPS, janitor.DefaultClientBurst
	if err := opts.Default().Validate(); err != nil {
		return nil, "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		return nil, "", err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, "", err
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	broadcaster.StartRecordingToSink(ctx.Done())
	renewer := fencerenew.New(c, broadcaster.NewRecorder(e.Scheme, fencerenew.ReportingController), opts)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer broadcaster.Shutdown()
		_ = renewer.Start(ctx) // it returns nil when ctx ends
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}, opts.Namespace, nil
}
