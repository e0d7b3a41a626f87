package harness

import (
	"context"

	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/liqo-janitor/liqo-janitor/janitor/fencerenew"
)

// StartFenceRenewer runs the janitor's fence renewer (janitor/fencerenew) in this process against the
// Env's API server as the install's ServiceAccount with the install's RBAC (InstallConfig), until stop is
// called; stop may be called more than once. It runs as leader from the start. Without opts.Namespace it
// gets a fresh namespace of the janitor's own, granted as the release namespace is, which it returns.
func (e *Env) StartFenceRenewer(opts fencerenew.Options) (stop func(), namespace string, err error) {
	if opts.Namespace == "" {
		if opts.Namespace, err = e.janitorNamespace(context.Background()); err != nil {
			return nil, "", err
		}
	}
	if err := opts.Default().Validate(); err != nil {
		return nil, "", err
	}
	cfg, err := e.InstallConfig()
	if err != nil {
		return nil, "", err
	}
	stop, err = e.runInProcess(cfg, fencerenew.ReportingController, func(c client.Client, rec events.EventRecorder) runnable {
		return fencerenew.New(c, rec, opts).Loop()
	})
	return stop, opts.Namespace, err
}
