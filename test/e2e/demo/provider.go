package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// otherConsumer is a second consumer of the dead provider: fence must never touch its workloads there.
const otherConsumer = "another-consumer"

// remote is the dead provider's own side: its API server (a second control plane, with
// kube-controller-manager so that the garbage collector deletes the pods of deleted ShadowPods), the
// proxy in front of it that the partition takes down, and what runs there.
type remote struct {
	env       *harness.Env
	partition *harness.Outage
	// laid is what runs there: this consumer's ShadowPods and their pods, and another consumer's.
	laid *fixture.Remote
	// healed is when the partition healed.
	healed time.Time
}

// url is the provider's API server as Liqo writes it into the ForeignCluster's status: the proxy's.
func (r *remote) url() string { return "https://" + r.partition.Addr }

// startProvider starts the provider's control plane in the background; the channel reports when it is up.
func (d *demo) startProvider() <-chan error {
	done := make(chan error, 1)
	go func() {
		env, err := harness.Start(harness.Options{ControllerManager: true, Detached: d.keep})
		d.remote.env = env
		done <- err
	}()
	return done
}

// layoutProvider lays out the dead provider's side: Liqo's cluster-ID ConfigMap, the copies of the
// consumer's pods there, another consumer's workloads, and the proxy whose address the ForeignCluster's
// status names.
func (d *demo) layoutProvider(ctx context.Context) error {
	p, r := d.dead(), &d.remote
	if err := r.env.InstallLocalClusterID(ctx, liqoNamespace, p.ID); err != nil {
		return err
	}
	var err error
	if r.laid, err = fixture.LayOutRemote(ctx, r.env.Client, p, localClusterID, otherConsumer); err != nil {
		return err
	}
	if r.partition, err = r.env.NewOutage("partition"); err != nil {
		return err
	}
	// the proxy's address is what Liqo's status names as the provider's API server, and its control-plane
	// Identity too, with the provider's CA (what the janitor keeps at its first sight of the mark, and fence
	// verifies the provider against)
	if err := fixture.SetControlPlaneIdentity(ctx, d.env.Client, p, d.remote.url(), r.env.Config.CAData); err != nil {
		return err
	}
	return fixture.SetAPIServerURL(ctx, d.env.Client, d.dead().ForeignCluster, d.remote.url())
}

// stopProviders stops the providers' control planes (after a failure, keeping their logs).
func (d *demo) stopProviders() {
	fencer, _ := d.fencer.up()
	for _, env := range []*harness.Env{d.remote.env, fencer} {
		if env == nil {
			continue
		}
		if d.out.failed {
			env.KeepFiles()
		}
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping a provider's control plane:", err)
		}
	}
}
