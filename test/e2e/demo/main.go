package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

func main() {
	keep := flag.Bool("keep", false, "leave the control plane and liqo-janitor running at the end, to explore with kubectl")
	pods := flag.Int("pods", 400, "offloaded pods per provider")
	grace := flag.Duration("grace-period", 5*time.Second, "liqo-janitor's --grace-period")
	flag.Parse()
	logf.SetLogger(logr.Discard())

	d := &demo{out: newScreen(os.Stdout), keep: *keep, pods: *pods, grace: *grace}
	// Ctrl-C (or a closed terminal) stops the story, and the teardown below still runs; output piped into
	// a reader that quits early (| head) must not kill the demo before its teardown either.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	start := time.Now()
	err := d.run(ctx)
	if err != nil {
		d.out.fail(err, d.logs())
	}
	if !d.keep || err != nil {
		d.teardown()
	}
	if err != nil {
		os.Exit(1)
	}
	d.out.line("")
	d.out.line(fmt.Sprintf("Demo finished in %s.", time.Since(start).Round(100*time.Millisecond)))
	if d.keep {
		d.out.kept(d.env.KubeconfigPath, d.remote.env.KubeconfigPath, d.fencer.env.KubeconfigPath)
	}
}

// demo holds the running pieces.
type demo struct {
	out   *screen
	keep  bool
	pods  int
	grace time.Duration

	env          *harness.Env
	janitor      *harness.Replica // the liqo-janitor binary
	pluginBinary string           // kubectl-liqo_janitor, built by the harness
	remote       remote           // the dead provider's own side
	fencer       fencer           // the last chapter's provider, which fences itself
	cons         *fixture.Consumer
	before       map[string]string // resourceVersions of the live providers' objects
	marked       time.Time
	fabrics      map[string]fabric // each provider's networking objects in its tenant namespace, by cluster ID
	stateful     stateful          // the StatefulSet whose volume is pinned to the dead provider
	// tenantDeleted is when the operator deleted the dead provider's tenant namespace.
	tenantDeleted time.Time
}

func (d *demo) run(ctx context.Context) error {
	d.out.title("liqo-janitor demo: a Liqo consumer loses one of its three providers")
	steps := []struct {
		name string
		do   func(context.Context) error
	}{
		{"Starting a local control plane", d.startControlPlane},
		{"Starting liqo-janitor (gate + janitor)", d.startJanitor},
		{"Laying out a consumer peered with three providers", d.layout},
		{"A provider dies", d.killProvider},
		{"Declaring it dead", d.declare},
		{"The janitor at work", d.watchJanitor},
		{"Result", d.result},
		{"The unpeering", d.unpeer},
		{"Stateful workloads come back", d.statefulChapter},
		{"The dead provider comes back", d.comeBack},
		{"At most once: a provider that fences itself", d.fenceItself},
	}
	for i, s := range steps {
		d.out.step(i+1, len(steps), s.name)
		if err := s.do(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return nil
}

func (d *demo) startControlPlane(context.Context) error {
	t0 := time.Now()
	provider := d.startProvider()
	var err error
	d.env, err = harness.Start(harness.Options{
		GeneratedWebhooks: true,
		ControllerManager: true,
		Detached:          d.keep,
	})
	if err := errors.Join(err, <-provider); err != nil {
		return err
	}
	d.out.done(fmt.Sprintf("etcd, kube-apiserver, kube-controller-manager v1.37.2 up in %s",
		time.Since(t0).Round(100*time.Millisecond)))
	d.out.done("Liqo v1.2.0 CRDs installed; liqo-janitor's webhooks registered")
	d.out.done("and a second control plane: one provider's own API server, for the return chapter (a third, for the " +
		"last chapter, starts later, in the background)")
	return nil
}

func (d *demo) startJanitor(ctx context.Context) error {
	d.fencer.start(d.keep) // the last chapter's provider, in the background
	if err := installLiqoBasics(ctx, d.env); err != nil {
		return err
	}
	// Both binaries are built from this checkout here, before the story needs them (StartBinary builds
	// liqo-janitor): the operator's plugin runs without a pause later.
	var err error
	if d.pluginBinary, err = d.env.Binary("kubectl-liqo_janitor"); err != nil {
		return err
	}
	// the name gives the log StartBinary would (BinaryLog); the replica serves the metrics read at the end
	if d.janitor, err = d.env.StartReplica("liqo-janitor", "--grace-period="+d.grace.String(),
		"--min-unreachable="+minUnreachable.String(), "--return-probe-interval="+returnProbeInterval.String(),
		"--fence-renew-interval="+fenceRenewInterval.String(), "--zap-log-level=info"); err != nil {
		return err
	}
	d.out.done(fmt.Sprintf("liqo-janitor ready (--grace-period=%s, --min-unreachable=%s, --return-probe-interval=%s, "+
		"--fence-renew-interval=%s)", d.grace, minUnreachable, returnProbeInterval, fenceRenewInterval))
	d.out.done("local cluster ID \"" + localClusterID + "\"; user \"alice\" may mark clusters dead")
	return nil
}

func (d *demo) logs() []string {
	var logs []string
	if d.env != nil {
		logs = append(logs, d.env.BinaryLog(), d.env.ControllerManagerLog())
	}
	fencer, _ := d.fencer.up()
	for _, env := range []*harness.Env{d.remote.env, fencer} {
		if env != nil {
			logs = append(logs, env.ControllerManagerLog())
		}
	}
	if d.fencer.agent != nil {
		logs = append(logs, d.fencer.agent.Log)
	}
	return logs
}

// teardown stops liqo-janitor and the control planes and removes their temporary files. After a
// failure it keeps the logs: it only stops the processes.
func (d *demo) teardown() {
	defer d.stopProviders()
	if d.env == nil {
		return
	}
	if d.out.failed {
		d.env.KeepFiles()
	}
	if err := d.env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
	}
}
