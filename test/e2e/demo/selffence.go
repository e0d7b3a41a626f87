package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// The provider fence's settings in the last chapter: short, so that the chapter lasts about a minute. The
// agent refuses a fenceAfter below 6 renew intervals + a poll (7s here).
const (
	fenceAfter         = 10 * time.Second
	fencePoll          = time.Second
	fenceGraceCap      = 2 * time.Second
	fenceRenewInterval = time.Second
)

// fencer is the last chapter's provider (the consumer's third, demo-provider-2) on its own control plane:
// the provider fence agent runs there, and this consumer's janitor renews its Lease through the
// partition's proxy.
type fencer struct {
	// env is its control plane, started in the background (start); envReady is closed once it is up (or
	// failed to start), started once the agent's binary is built for it too; startErr says what failed.
	env               *harness.Env
	envReady, started chan struct{}
	startErr          error
	// laidOut reports the layout of its side, in the background too (layOutFencer).
	laidOut   <-chan error
	partition *harness.Outage
	// tenant is this consumer's tenant namespace, Tenant and remote namespaces there; copies its
	// ShadowPods and their pods: the tenant's own and one for each pod it offloaded to this provider.
	tenant *fixture.Tenant
	copies []client.Object
	agent  *harness.Replica
	// credential is the kubeconfig `kubectl liqo-janitor fence-credential` printed there.
	credential []byte
	// seen is what the demo watches on both sides from the partition on.
	seen *sightings
	// the chapter's moments, on this machine's clock (the janitor's and the agent's too)
	cut, refusedAt, markSent time.Time
	renewal                  liqojanitor.FenceRenewal
	deadline                 time.Time
	contract                 liqojanitor.FenceContract
}

// start starts the control plane and builds the agent's binary for it, in the background: the chapters
// before the last do not wait for them.
func (f *fencer) start(detached bool) {
	f.envReady, f.started = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(f.started)
		f.env, f.startErr = harness.Start(harness.Options{ControllerManager: true, Detached: detached})
		close(f.envReady)
		if f.startErr == nil {
			_, f.startErr = f.env.Binary("liqo-janitor")
		}
	}()
}

// envUp waits for the control plane to be up, and says if it failed.
func (f *fencer) envUp() error {
	<-f.envReady
	if f.env == nil {
		return fmt.Errorf("starting the last chapter's provider's control plane: %w", f.startErr)
	}
	return nil
}

// up waits for start: the control plane (nil if it did not start), and what failed.
func (f *fencer) up() (*harness.Env, error) {
	if f.started == nil {
		return nil, errors.New("not started")
	}
	<-f.started
	return f.env, f.startErr
}

// url is the provider's API server as the consumer reaches it: the partition's proxy.
func (f *fencer) url() string { return "https://" + f.partition.Addr }

func (d *demo) fencing() *fixture.Provider { return d.cons.Providers[2] }

// layOutFencer lays out, in the background once its control plane is up, the last chapter's provider's
// side: Liqo's cluster-ID ConfigMap, this consumer's tenant namespace and Tenant (not opted in yet), the
// copies of the pods it offloaded there, in the remote namespaces Liqo's NamespaceMap made, and the proxy
// the consumer reaches it through. Nothing on the consumer is written: the chapters before the last
// check that the live providers' objects there stay as they are.
func (d *demo) layOutFencer(ctx context.Context) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := d.fencer.up()
		if err == nil {
			err = d.layoutFencer(ctx)
		}
		done <- err
	}()
	return done
}

func (d *demo) layoutFencer(ctx context.Context) error {
	p, f := d.fencing(), &d.fencer
	if err := f.env.InstallLocalClusterID(ctx, liqoNamespace, p.ID); err != nil {
		return err
	}
	var err error
	// the remote namespaces are "<namespace>-consumer", as the consumer's NamespaceMap wants them
	if f.tenant, err = fixture.LayOutTenant(ctx, f.env.Client, fixture.TenantSpec{
		ID: localClusterID, Provider: p.ID, Apps: d.cons.Namespaces}); err != nil {
		return err
	}
	f.copies = append(f.copies, f.tenant.Mine...)
	for _, pod := range p.Pods {
		objs, err := fixture.ShadowPod(ctx, f.env.Client, p.NamespaceMap.Spec.DesiredMapping[pod.Namespace], pod.Name, localClusterID, p.ID)
		if err != nil {
			return err
		}
		f.copies = append(f.copies, objs...)
	}
	return nil
}

// awaitFencer waits for the provider's side, laid out meanwhile, opens the proxy the consumer reaches it
// through (only now: no new address is taken while the return chapter's partition holds one), and names it
// as the provider's API server in the ForeignCluster's status and control-plane Identity (what the janitor
// keeps at the mark).
func (d *demo) awaitFencer(ctx context.Context) error {
	p, f := d.fencing(), &d.fencer
	if err := <-f.laidOut; err != nil {
		return fmt.Errorf("laying out %s's side: %w", p.ID, err)
	}
	var err error
	if f.partition, err = f.env.NewOutage("partition"); err != nil {
		return err
	}
	if err := fixture.SetControlPlaneIdentity(ctx, d.env.Client, p, f.url(), f.env.Config.CAData); err != nil {
		return err
	}
	if err := fixture.SetAPIServerURL(ctx, d.env.Client, p.ForeignCluster, f.url()); err != nil {
		return err
	}
	d.out.done(fmt.Sprintf("on %s's own API server (%s, started meanwhile): this consumer's Tenant and tenant namespace, "+
		"and the %d ShadowPods of this consumer and their pods", p.ID, f.url(), len(f.copies)/2))
	return nil
}

// fenceItself is the last chapter: the provider's admin opts this consumer into the provider fence, the
// consumer's janitor renews its Lease, a partition cuts them apart, the provider's agent stops this
// consumer's pods there by itself, the gate refuses the operator's mark until the deadline computed from
// the provider's contract, and then admits it: the consumer's first force-delete comes after the
// provider's last copy is gone.
func (d *demo) fenceItself(ctx context.Context) error {
	d.out.note(fmt.Sprintf("With demo-provider-1, the operator could only fence by hand once the provider answered "+
		"again: until then its copies ran on, twice. %s's admin and this consumer's opt in to the provider fence "+
		"instead: the provider stops this consumer's pods by itself once the consumer's renewals of a Lease stop, "+
		"and the consumer acts on a mark only once the provider has surely done it.", d.fencing().ID))
	for _, step := range []func(context.Context) error{
		d.awaitFencer, d.retire, d.startAgent, d.optIn, d.handOutCredential, d.storeCredential, d.awaitAcknowledged,
		d.cutOff, d.awaitProviderFence, d.markTooEarly, d.awaitDeadline, d.markAtDeadline, d.awaitRelease, d.atMostOnce,
	} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// retire deletes demo-provider-1's ForeignCluster (its unpeering complete, its return fenced) and the
// copy-paste accident: with them, losing one more provider would look like a storm to the gate (3 of 4
// unreachable).
func (d *demo) retire(ctx context.Context) error {
	d.out.note(fmt.Sprintf("First the operator closes %s's story (unpeering complete, its return fenced) and "+
		"removes the copy-paste accident, so that the next loss is one of two providers, not a storm:", d.dead().ID))
	for _, name := range []string{d.dead().ForeignCluster.Name, localClusterID} {
		d.out.command("kubectl delete foreigncluster " + name + "   # as the cluster admin")
		fc := &liqov1beta1.ForeignCluster{}
		fc.Name = name
		if err := d.env.Client.Delete(ctx, fc); err != nil {
			return fmt.Errorf("deleting ForeignCluster %s: %w", name, err)
		}
	}
	d.out.done(fmt.Sprintf("this consumer now peers with %s and %s", d.cons.Providers[0].ID, d.fencing().ID))
	return nil
}

// startAgent starts the provider fence agent on the provider: the same binary, as the chart's
// providerFence Deployment runs it, with the chapter's short settings; one replica without leader election,
// so its failover bound is a poll and the reconnect grace.
func (d *demo) startAgent(context.Context) error {
	f := &d.fencer
	inst, err := f.env.ProviderFenceInstall()
	if err != nil {
		return err
	}
	if f.agent, err = f.env.StartReplicaOf(inst, "provider-fence", "--fence-poll="+fencePoll.String(),
		"--fence-grace-cap="+fenceGraceCap.String(), "--leader-elect=false"); err != nil {
		return err
	}
	d.out.done(fmt.Sprintf("on %s, its admin runs the provider fence agent (the chart's providerFence.enabled: the same "+
		"binary with --enable-provider-fence; here --fence-poll=%s --fence-grace-cap=%s, one replica without leader election)",
		d.fencing().ID, fencePoll, fenceGraceCap))
	return nil
}

// optIn is the provider's admin's opt-in on this consumer's Tenant; the agent then creates the Lease and
// publishes its contract there.
func (d *demo) optIn(ctx context.Context) error {
	f := &d.fencer
	t := f.tenant.Tenant
	d.out.command(fmt.Sprintf("kubectl annotate tenant -n %s %s %s=%s   # on %s", t.Namespace, t.Name,
		liqojanitor.FenceAfterAnnotation, fenceAfter, d.fencing().ID))
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, liqojanitor.FenceAfterAnnotation, fenceAfter.String())
	if err := f.env.Client.Patch(ctx, t, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("opting the consumer in on its Tenant: %w", err)
	}
	lease := &coordinationv1.Lease{}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := f.env.Client.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: liqojanitor.FenceLeaseName}, lease)
		return err == nil && lease.Annotations[liqojanitor.FenceContractAnnotation] != "", client.IgnoreNotFound(err)
	})
	if err != nil {
		return fmt.Errorf("within 30s of the opt-in, the agent did not publish its contract on the Lease %s/%s (log: %s): %w",
			t.Namespace, liqojanitor.FenceLeaseName, f.agent.Log, err)
	}
	c, err := liqojanitor.ParseFenceContract(lease.Annotations[liqojanitor.FenceContractAnnotation])
	if err != nil {
		return err
	}
	d.out.done(fmt.Sprintf("the agent created the Lease %s/%s and published its contract there: %s", t.Namespace,
		liqojanitor.FenceLeaseName, c.Summary()))
	return nil
}

// handOutCredential runs `kubectl liqo-janitor fence-credential` as the provider's admin, with the
// consumer's way to the provider's API server (the partition's proxy).
func (d *demo) handOutCredential(ctx context.Context) error {
	f := &d.fencer
	stop, err := f.playTokenController(ctx)
	if err != nil {
		return err
	}
	defer stop()
	d.out.note(fmt.Sprintf("%s's admin hands out the credential the consumer renews with (Kubernetes' token controller, "+
		"which does not run here, is played by the demo):", d.fencing().ID))
	out, errOut, err := d.runPlugin(ctx, f.env.KubeconfigPath, "", "",
		[]string{"fence-credential", localClusterID, "--provider-server", f.url()}, " > fence.kubeconfig   # on "+d.fencing().ID)
	if err != nil {
		return fmt.Errorf("fence-credential: %w", err)
	}
	f.credential = []byte(out)
	d.out.shown(errOut)
	d.out.done(fmt.Sprintf("fence.kubeconfig: the server %s, %s's CA, a token; no exec plugin", f.url(), d.fencing().ID))
	return nil
}

// storeCredential is the consumer's admin storing the credential where the janitor looks for it.
func (d *demo) storeCredential(ctx context.Context) error {
	inst, err := d.env.DefaultInstall()
	if err != nil {
		return err
	}
	p := d.fencing()
	name := "liqo-janitor-provider-fence-" + p.ID
	d.out.note("This consumer's admin stores it:")
	d.out.command(fmt.Sprintf("kubectl -n %s create secret generic %s --from-file=%s=fence.kubeconfig && kubectl -n %s label "+
		"secret %s %s=%s", inst.Namespace, name, liqojanitor.ProviderFenceKubeconfigKey, inst.Namespace, name,
		liqojanitor.ProviderFenceSecretLabel, p.ID))
	s := &corev1.Secret{}
	s.Namespace, s.Name = inst.Namespace, name
	s.Labels = map[string]string{liqojanitor.ProviderFenceSecretLabel: p.ID}
	s.Data = map[string][]byte{liqojanitor.ProviderFenceKubeconfigKey: d.fencer.credential}
	if err := d.env.Client.Create(ctx, s); err != nil {
		return fmt.Errorf("storing the fence credential: %w", err)
	}
	return nil
}

// renewal reads the janitor's renewal record of the chapter's provider (zero until it has one).
func (d *demo) renewal(ctx context.Context) (liqojanitor.FenceRenewal, error) {
	inst, err := d.env.DefaultInstall()
	if err != nil {
		return liqojanitor.FenceRenewal{}, err
	}
	cm := &corev1.ConfigMap{}
	err = d.env.Client.Get(ctx, client.ObjectKey{Namespace: inst.Namespace, Name: liqojanitor.FenceRenewalsConfigMap}, cm)
	if err != nil {
		return liqojanitor.FenceRenewal{}, client.IgnoreNotFound(err)
	}
	return liqojanitor.FenceRenewals(cm)[d.fencing().ID], nil
}

// awaitAcknowledged waits for the janitor's first acknowledged renewals, then shows the status.
func (d *demo) awaitAcknowledged(ctx context.Context) error {
	d.out.note(fmt.Sprintf("The janitor renews the Lease every %s; the agent arms when it observes a renewal, and "+
		"answers the next one with the renewal it saw: only such a renewal counts as acknowledged.", fenceRenewInterval))
	w := d.out.waiter("waiting for an acknowledged renewal")
	t0 := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		w.tick()
		r, err := d.renewal(ctx)
		return err == nil && r.LastAck != nil, err
	})
	if err != nil {
		return fmt.Errorf("within 30s of storing the credential, the janitor recorded no acknowledged renewal in %s "+
			"(logs: %s, %s): %w", liqojanitor.FenceRenewalsConfigMap, d.env.BinaryLog(), d.fencer.agent.Log, err)
	}
	d.out.done(fmt.Sprintf("acknowledged %.1fs after the credential was stored; the janitor keeps lastAck in ConfigMap %s",
		time.Since(t0).Seconds(), liqojanitor.FenceRenewalsConfigMap))
	d.out.note("What the operator sees now:")
	out, err := d.plugin(ctx, "", "status", d.fencing().ID)
	if err != nil {
		return err
	}
	d.out.shown(providerFenceLines(out))
	return nil
}

// providerFenceLines keeps, of the plugin's output, its "provider fence:" paragraph: that line and the more
// indented ones after it, without the paragraph's own indentation (the whole output if it has none).
func providerFenceLines(out string) string {
	lines := strings.Split(out, "\n")
	for i, line := range lines {
		if !strings.HasPrefix(strings.TrimLeft(line, " "), "provider fence:") {
			continue
		}
		indent := line[:len(line)-len(strings.TrimLeft(line, " "))]
		var keep []string
		for _, l := range lines[i:] {
			if len(keep) > 0 && !strings.HasPrefix(l, indent+" ") {
				break
			}
			keep = append(keep, strings.TrimPrefix(l, indent))
		}
		return strings.Join(keep, "\n")
	}
	return out
}

// cutOff is the partition: the consumer no longer reaches the provider (its renewals fail), while the
// provider's control plane, and the agent in it, run on.
func (d *demo) cutOff(ctx context.Context) error {
	p, f := d.fencing(), &d.fencer
	var err error
	if f.renewal, err = d.renewal(ctx); err != nil {
		return err
	}
	f.seen = d.watchBothSides(ctx)
	f.partition.Down()
	f.cut = time.Now()
	d.out.done(fmt.Sprintf("a partition: %s's API server at %s drops every connection from this consumer; on the "+
		"provider, its control plane and the agent run on", p.ID, f.url()))
	if err := fixture.SetAPIServerStatus(ctx, d.env.Client, p.ForeignCluster, liqov1beta1.ConditionStatusError, 0); err != nil {
		return err
	}
	if err := fixture.Terminate(ctx, d.env.Client, p); err != nil {
		return err
	}
	d.out.done(fmt.Sprintf("Liqo reports APIServerStatus Error; the unpeering starts and hangs as before: %d pods "+
		"Terminating on the virtual node %s", len(p.Pods), p.Node.Name))
	return nil
}

// awaitProviderFence waits for the agent's record to say the fence is done, and shows it.
func (d *demo) awaitProviderFence(ctx context.Context) error {
	f := &d.fencer
	d.out.note(fmt.Sprintf("The janitor's renewals fail now. On the provider, the agent fences this consumer %s after "+
		"the last renewal it observed, by its own clock.", fenceAfter))
	w := d.out.waiter("waiting for the provider's agent")
	w.every = 5 * time.Second
	var state liqojanitor.FenceState
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		w.tick()
		var err error
		state, err = fixture.FenceState(ctx, f.env.Client, f.tenant.Namespace)
		return err == nil && state.Fence != nil && state.Fence.StoppedAt != nil, err
	})
	if err != nil {
		return fmt.Errorf("within a minute of the partition, the provider's agent did not record its fence done (log: %s): %w",
			f.agent.Log, err)
	}
	d.out.done(fmt.Sprintf("the agent's record (Lease %s/%s on the provider): %s", f.tenant.Namespace,
		liqojanitor.FenceStateLeaseName, state.Fence.Describe()))
	t := &authv1beta1.Tenant{}
	if err := f.env.Client.Get(ctx, client.ObjectKeyFromObject(f.tenant.Tenant), t); err != nil {
		return err
	}
	if t.Spec.TenantCondition != authv1beta1.TenantConditionCordoned {
		return fmt.Errorf("the fence left the Tenant %s, want Cordoned", t.Spec.TenantCondition)
	}
	d.out.done(fmt.Sprintf("Tenant %s/%s: %s (%s=%s), so Liqo admits no new ShadowPod of this consumer",
		t.Namespace, t.Name, t.Spec.TenantCondition, liqojanitor.FencedAtAnnotation, t.Annotations[liqojanitor.FencedAtAnnotation]))
	return d.checkFencer(ctx)
}

// checkFencer checks the provider's side after the fence: this consumer's ShadowPods and pods gone, what
// the fence keeps (namespaces, PVCs, Services, ConfigMaps, Secrets) untouched.
func (d *demo) checkFencer(ctx context.Context) error {
	f := &d.fencer
	copies, err := fixture.ResourceVersions(ctx, f.env.Client, f.copies...)
	if err != nil {
		return err
	}
	if left := len(copies) - fixture.Gone(copies); left > 0 {
		return fmt.Errorf("%d of this consumer's ShadowPods and pods are still on the provider", left)
	}
	kept, err := fixture.ResourceVersions(ctx, f.env.Client, f.tenant.Kept...)
	if err != nil {
		return err
	}
	if n := fixture.Changed(f.tenant.KeptBefore, kept); n > 0 {
		return fmt.Errorf("the fence changed %d of the objects it must keep", n)
	}
	d.out.done(fmt.Sprintf("on the provider now: none of this consumer's %d ShadowPods and pods; its namespaces, PVCs, "+
		"Services, ConfigMaps and Secrets kept (%d objects, resourceVersions unchanged)", len(f.copies), len(f.tenant.Kept)))
	return nil
}

// markTooEarly is the operator's mark right after the fence: the gate refuses it until the deadline.
func (d *demo) markTooEarly(ctx context.Context) error {
	p, f := d.fencing(), &d.fencer
	d.out.note(fmt.Sprintf("On this consumer, word comes that %s is gone. The operator marks it at once, typing the "+
		"cluster ID when asked:", p.ID))
	out, err := d.plugin(ctx, p.ID+"\n", "mark", p.ID, "--reason", "lost in the partition")
	f.refusedAt = time.Now()
	if err == nil {
		return fmt.Errorf("the gate admitted a mark of %s before its provider fence's deadline: %s", p.ID, out)
	}
	if lines := providerFenceLines(out); lines != out {
		d.out.shown(lines)
	}
	msg, _ := strings.CutPrefix(err.Error(), "error: ")
	d.out.refused(msg)
	return nil
}

// awaitDeadline waits until the deadline the janitor's record gives has passed.
func (d *demo) awaitDeadline(ctx context.Context) error {
	f := &d.fencer
	r, err := d.renewal(ctx)
	if err != nil {
		return err
	}
	deadline, contract, ok := r.Deadline()
	if !ok {
		return fmt.Errorf("the janitor's renewal record of %s gives no deadline: %s", d.fencing().ID, r)
	}
	f.renewal, f.deadline, f.contract = r, deadline, contract
	d.out.note(fmt.Sprintf("The deadline is the last renewal that may have reached the provider (%s, this cluster's clock) "+
		"plus T_safe = (1 + 1%%) × (poll + fenceAfter + failover + stop) + 2 × 2s + 15s = %s, from the provider's contract "+
		"alone: no clock of the provider's is read.", r.LastLanded.UTC().Format("15:04:05.000"), contract.SafeAfter().Round(100*time.Millisecond)))
	w := d.out.waiter("")
	w.every = 5 * time.Second
	for time.Now().Before(deadline) {
		w.what = fmt.Sprintf("waiting for the deadline, %s UTC (%s left)", deadline.UTC().Format("15:04:05"),
			time.Until(deadline).Round(time.Second))
		w.tick()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

// markAtDeadline marks the provider again once its deadline has passed: admitted.
func (d *demo) markAtDeadline(ctx context.Context) error {
	p, f := d.fencing(), &d.fencer
	d.out.note("The deadline has passed; the operator marks it again:")
	f.markSent = time.Now()
	out, err := d.plugin(ctx, p.ID+"\n", "mark", p.ID, "--reason", "lost in the partition")
	if err != nil {
		return fmt.Errorf("the mark after the deadline was refused: %w", err)
	}
	if i := strings.Index(out, "ForeignCluster "+p.ID+" is marked"); i >= 0 {
		out = out[i:]
	}
	d.out.shown(out)
	return nil
}

// awaitRelease waits for the janitor to force-delete the provider's pods on this consumer.
func (d *demo) awaitRelease(ctx context.Context) error {
	p, f := d.fencing(), &d.fencer
	var last []progress
	bars := d.out.bars()
	err := wait.PollUntilContextTimeout(ctx, 150*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pr, err := d.measureOf(ctx, p)
		if err != nil {
			return false, err
		}
		last = pr
		bars.draw(pr, time.Since(f.markSent))
		for _, k := range pr {
			if k.gone+k.blocked < k.total {
				return false, nil
			}
		}
		return true, nil
	})
	bars.finish(last, time.Since(f.markSent))
	if err != nil {
		return fmt.Errorf("the janitor did not release %s's objects within 2 minutes of the mark: %w", p.ID, err)
	}
	d.out.done(fmt.Sprintf("released in %s after the mark (grace period %s included)",
		time.Since(f.markSent).Round(100*time.Millisecond), d.grace))
	return nil
}

// atMostOnce shows the chapter on one clock and checks that nothing ran twice: the provider's last copy
// was gone before the consumer's first force-delete, which came after the deadline.
func (d *demo) atMostOnce(ctx context.Context) error {
	f := &d.fencer
	seen, err := f.seen.result(ctx)
	if err != nil {
		return err
	}
	state, err := fixture.FenceState(ctx, f.env.Client, f.tenant.Namespace)
	if err != nil || state.Fence == nil {
		return errors.Join(errors.New("the agent's fence record is gone"), err)
	}
	// times from the partition
	at := func(t time.Time) string { return fmt.Sprintf("%+7.1fs", t.Sub(f.cut).Seconds()) }
	d.out.line("")
	d.out.line("  On one clock (this machine's, which the janitor and the agent read too):")
	rows := []struct {
		t    time.Time
		what string
	}{
		{*f.renewal.LastAck, "the last acknowledged renewal (the janitor's lastAck)"},
		{f.cut, "the partition"},
		{state.Fence.StartedAt, fmt.Sprintf("the provider's agent fences: no renewal observed for %s", fenceAfter)},
		{seen.providerGoneBy, "the provider's last pod of this consumer gone, by then"},
		{f.refusedAt, "the operator's mark refused by the gate (gate rule 31)"},
		{f.deadline, fmt.Sprintf("the deadline: last renewal that may have landed + T_safe %s", f.contract.SafeAfter().Round(100*time.Millisecond))},
		{f.markSent, "the mark sent again, and admitted"},
		{seen.consumerAllThere, fmt.Sprintf("all %d pods of %s still on this consumer", len(d.fencing().Pods), d.fencing().ID)},
		{seen.consumerFirstGone, "the consumer's first force-delete (the janitor's), seen"},
	}
	for _, r := range rows {
		d.out.line(fmt.Sprintf("  %s  %s", at(r.t), r.what))
	}
	d.out.line("")
	switch {
	case !seen.providerGoneBy.Before(seen.consumerAllThere):
		return fmt.Errorf("the provider's last copy was seen gone at %s, not before the consumer's first force-delete (after %s)",
			at(seen.providerGoneBy), at(seen.consumerAllThere))
	case seen.consumerAllThere.Before(f.deadline):
		return fmt.Errorf("the consumer deleted a pod of %s before the deadline (%s): all were there last at %s",
			d.fencing().ID, at(f.deadline), at(seen.consumerAllThere))
	}
	d.out.done(fmt.Sprintf("nothing runs twice: the provider's last copy of this consumer's pods was gone %.1fs before "+
		"the consumer's first force-delete, which came after the deadline; the provider's own bound "+
		"(poll + fenceAfter + failover + stop = %s) is inside T_safe", seen.consumerAllThere.Sub(seen.providerGoneBy).Seconds(),
		f.contract.Bound()))
	return nil
}

// sightings is what the demo sees on both sides from the partition on, polling both API servers: when
// the provider's last pod of this consumer was seen gone, and the interval in which the consumer's first
// force-delete of a pod on the provider's virtual node happened.
type sightings struct {
	done chan struct{}
	err  error
	// providerGoneBy is the end of the first poll that found none of this consumer's pods on the provider.
	providerGoneBy time.Time
	// consumerAllThere is the start of the last poll that found every pod of the virtual node on this
	// consumer (no force-delete before it); consumerFirstGone the end of the first poll that found fewer.
	consumerAllThere, consumerFirstGone time.Time
}

// watchBothSides polls, until it has seen both, the provider's pods of this consumer and the consumer's
// pods on the provider's virtual node.
func (d *demo) watchBothSides(ctx context.Context) *sightings {
	p, f := d.fencing(), &d.fencer
	s := &sightings{done: make(chan struct{})}
	count := func(ctx context.Context, c client.Client, opts ...client.ListOption) (int, error) {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		if err := c.List(ctx, list, opts...); err != nil {
			return 0, err
		}
		return len(list.Items), nil
	}
	go func() {
		defer close(s.done)
		s.err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
			if s.providerGoneBy.IsZero() {
				n, err := count(ctx, f.env.Client, client.MatchingLabels{fixture.OriginLabel: localClusterID})
				if err != nil {
					return false, err
				}
				if n == 0 {
					s.providerGoneBy = time.Now()
				}
			}
			start := time.Now()
			n, err := count(ctx, d.env.Client, client.MatchingFields{"spec.nodeName": p.Node.Name})
			if err != nil {
				return false, err
			}
			if n == len(p.Pods) {
				s.consumerAllThere = start
				return false, nil
			}
			s.consumerFirstGone = time.Now()
			return !s.providerGoneBy.IsZero(), nil
		})
	}()
	return s
}

// result waits for the sightings to be complete.
func (s *sightings) result(ctx context.Context) (*sightings, error) {
	select {
	case <-s.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if s.err != nil {
		return nil, fmt.Errorf("watching both sides: %w", s.err)
	}
	if s.consumerAllThere.IsZero() {
		return nil, errors.New("the consumer's pods on the provider's virtual node were never all seen there after the partition")
	}
	return s, nil
}

// playTokenController fills the fence credential's token Secret in this consumer's tenant namespace as
// Kubernetes' token controller does (harness.PlayTokenController: the demo's kube-controller-manager does
// not run it), until stop.
func (f *fencer) playTokenController(ctx context.Context) (stop func(), err error) {
	return f.env.PlayTokenController(ctx, f.tenant.Namespace)
}
