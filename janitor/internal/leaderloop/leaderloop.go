// Package leaderloop runs a round of work every interval on the elected leader, reading and writing live:
// the provider fence's polls (janitor/providerfence) and the fence renewer's renewals (janitor/fencerenew),
// which judge by what the API server says now and never by a cache.
package leaderloop

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Loop calls Round at once and then every Every, until its context ends; Name names its logger.
type Loop struct {
	Name  string
	Every time.Duration
	Round func(ctx context.Context)
}

// NeedLeaderElection says the loop runs on the elected leader only.
func (l Loop) NeedLeaderElection() bool { return true }

// Start runs the rounds until ctx ends.
func (l Loop) Start(ctx context.Context) error {
	ctx = logf.IntoContext(ctx, logf.FromContext(ctx).WithName(l.Name))
	ticker := time.NewTicker(l.Every)
	defer ticker.Stop()
	for {
		l.Round(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// LiveClient is a client of mgr's API server that reads from it, not from a cache.
func LiveClient(mgr manager.Manager, what string) (client.Client, error) {
	c, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, fmt.Errorf("%s's client: %w", what, err)
	}
	return c, nil
}
