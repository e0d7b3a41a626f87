package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

const (
	localClusterID = "consumer"
	operator       = "alice"
	liqoNamespace  = "liqo"
	// returnProbeInterval is the janitor's --return-probe-interval: short, so the return chapter is short.
	returnProbeInterval = 2 * time.Second
	// minUnreachable is the gate's --min-unreachable: how long Liqo must have reported a provider's API
	// server unreachable before it may be marked; short, so that in the last chapter the provider fence's
	// deadline is what the mark waits for.
	minUnreachable = 5 * time.Second
)

// installLiqoBasics creates what the gate reads on a Liqo consumer: Liqo's cluster-ID ConfigMap, and the
// shipped break-glass ClusterRole bound (with ForeignCluster editing) to the operator, who may also read
// what the plugin reads (fence: the cluster-ID ConfigMap too).
func installLiqoBasics(ctx context.Context, env *harness.Env) error {
	if err := env.InstallLocalClusterID(ctx, liqoNamespace, localClusterID); err != nil {
		return err
	}
	if err := env.InstallOperators(ctx, []string{operator}, nil); err != nil {
		return err
	}
	if err := env.InstallPlanReaders(ctx, operator); err != nil {
		return err
	}
	if err := env.InstallGateWebhookConfiguration(ctx); err != nil { // where the plugin finds the janitor's namespace
		return err
	}
	return installClusterIDReader(ctx, env)
}

// installClusterIDReader lets the operator read the ConfigMaps in Liqo's namespace, as a namespace's view
// role would: fence reads this cluster's ID there.
func installClusterIDReader(ctx context.Context, env *harness.Env) error {
	meta := metav1.ObjectMeta{Name: "liqo-configmap-reader", Namespace: liqoNamespace}
	role := &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: operator}}}
	for _, obj := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

func (d *demo) layout(ctx context.Context) error {
	t0 := time.Now()
	var err error
	d.cons, err = fixture.Build(ctx, d.env.Client, fixture.Spec{
		Prefix: "demo", Providers: 3, PodsPerProvider: d.pods, OffloadedNamespaces: 2, ExtraResourceSlices: 2,
	})
	if err != nil {
		return err
	}
	for _, p := range d.cons.Providers {
		d.out.done(fmt.Sprintf("%s: virtual node, %d pods, %d ResourceSlices, NamespaceMap, Renew",
			p.ID, len(p.Pods), 1+len(p.ExtraSlices)))
	}
	d.out.done(fmt.Sprintf("namespaces %s offloaded to all three (NamespaceOffloadings)", strings.Join(d.cons.Namespaces, ", ")))
	if err := d.layoutStateful(ctx); err != nil {
		return err
	}
	d.out.done(fmt.Sprintf("in %s, StatefulSet db: its claim data-db-0 of Liqo's virtual storage class was provisioned on %s "+
		"(a placeholder PV pinned there, as Liqo's virtual kubelet makes it)", d.stateful.ns, d.dead().ID))
	if err := d.layoutNetworking(ctx); err != nil {
		return err
	}
	d.out.done("in each tenant namespace, what Liqo's networking leaves there: a RouteConfiguration and a " +
		"FirewallConfiguration under the fabric's finalizers; the VirtualNode carries " + fixture.VirtualNodeFinalizer +
		" (Liqo's VirtualNode controller, which does not run here, holds it)")
	if err := d.layoutProvider(ctx); err != nil {
		return err
	}
	d.out.done(fmt.Sprintf("on %s's own API server (%s): the %d ShadowPods of this consumer and their pods, "+
		"and %d of %s's", d.dead().ID, d.remote.url(), len(d.remote.laid.Mine)/2, len(d.remote.laid.Theirs)/2, otherConsumer))
	d.fencer.laidOut = d.layOutFencer(ctx)
	d.out.done(fmt.Sprintf("laid out in %s", time.Since(t0).Round(100*time.Millisecond)))
	return nil
}

func (d *demo) dead() *fixture.Provider { return d.cons.Providers[1] }

func (d *demo) killProvider(ctx context.Context) error {
	// No control plane may start while the partition holds the dead provider's address: one started then
	// may take the port, and the partition could not heal. The last chapter's is up by now, or nearly.
	if err := d.fencer.envUp(); err != nil {
		return err
	}
	p := d.dead()
	// A pod someone else guards with a finalizer: the janitor must leave that finalizer alone.
	patch := fmt.Appendf(nil, `{"metadata":{"finalizers":[%q]}}`, fixture.ForeignFinalizer)
	if err := d.env.Client.Patch(ctx, p.Pods[0], client.RawPatch(types.MergePatchType, patch)); err != nil {
		return err
	}
	d.remote.partition.Down()
	d.out.done(fmt.Sprintf("%s is cut off: its API server at %s drops every connection", p.ID, d.remote.url()))
	err := fixture.Kill(ctx, d.env.Client, p)
	if err != nil {
		return err
	}
	d.out.done("Liqo reports APIServerStatus Error; word comes that the data centre is gone")
	if err := fixture.Terminate(ctx, d.env.Client, p); err != nil {
		return err
	}
	if d.before, err = fixture.ResourceVersions(ctx, d.env.Client, d.liveObjects()...); err != nil {
		return err
	}
	stuck := len(p.Pods) + 3 + len(p.ExtraSlices)
	d.out.done(fmt.Sprintf("the unpeering started: %d objects are now Terminating", stuck))
	d.out.note("...and stay so: the pods' virtual kubelet cannot reach the provider, and the ResourceSlices, " +
		"NamespaceMap and Renew wait on crdreplicator.liqo.io/resource for a remote delete that never comes. " +
		"One pod also carries someone else's finalizer, " + fixture.ForeignFinalizer + ".")
	return nil
}

func (d *demo) declare(ctx context.Context) error {
	alice, err := d.operator()
	if err != nil {
		return err
	}
	p := d.dead()
	d.out.note("The operator looks first, with the kubectl plugin: what would a mark release, and would the gate take it?")
	out, err := d.plugin(ctx, "", "plan", p.ID)
	if err != nil {
		return err
	}
	d.out.shown(out)

	d.out.note("Without the plugin, a bare mark has no confirmation, the second key:")
	d.out.command(fmt.Sprintf("kubectl annotate foreigncluster %s %s=true", p.ID, liqojanitor.MarkAnnotation))
	err = fixture.Annotate(ctx, alice, p.ForeignCluster, map[string]*string{liqojanitor.MarkAnnotation: ptr.To("true")})
	if err := d.expectRefusal(err); err != nil {
		return err
	}

	self := &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: localClusterID},
		Spec: liqov1beta1.ForeignClusterSpec{ClusterID: localClusterID}}
	if err := d.env.Client.Create(ctx, self); err != nil {
		return err
	}
	d.out.note("A ForeignCluster named after this very cluster exists too (a copy-paste accident). Marking it:")
	if _, err := d.plugin(ctx, "", "mark", localClusterID, "--reason", "oops", "--yes"); err == nil {
		return errors.New("expected the gate to refuse marking the local cluster")
	} else if msg, ok := strings.CutPrefix(err.Error(), "error: "); ok {
		d.out.refused(msg)
	} else {
		return err
	}

	d.out.note("The real one, typing the cluster ID when asked:")
	out, err = d.plugin(ctx, p.ID+"\n", "mark", p.ID, "--reason", "data centre flooded")
	if err != nil {
		return fmt.Errorf("the confirmed mark was refused: %w", err)
	}
	if i := strings.Index(out, "This cannot be undone"); i >= 0 {
		out = out[i:] // the plan above it is step one's
	}
	d.out.shown(strings.Replace(out, "to confirm: ", "to confirm: "+p.ID+"\n", 1))
	fc := &liqov1beta1.ForeignCluster{}
	if err := d.env.Client.Get(ctx, client.ObjectKeyFromObject(p.ForeignCluster), fc); err != nil {
		return err
	}
	d.marked = time.Now()
	if !liqojanitor.IsMarked(fc.Annotations) || fc.Annotations[liqojanitor.MarkedByAnnotation] != operator {
		return fmt.Errorf("the mark is not stored as expected: %v", fc.Annotations)
	}
	return nil
}

// plugin runs the kubectl plugin (kubectl-liqo_janitor) as the operator against the demo's API server, with stdin, and
// returns its output (its error output as the error, if it fails).
func (d *demo) plugin(ctx context.Context, stdin string, args ...string) (string, error) {
	out, _, err := d.runPlugin(ctx, d.env.KubeconfigPath, operator, stdin, args, "")
	return out, err
}

// runPlugin runs the kubectl plugin with kubeconfig, as user as (none: the kubeconfig's), with stdin, showing
// the command with suffix after it; it returns its output and error output (the error output as the
// error, if it fails).
func (d *demo) runPlugin(ctx context.Context, kubeconfig, as, stdin string, args []string, suffix string) (string, string, error) {
	shown := make([]string, len(args))
	for i, a := range args {
		shown[i] = a
		if strings.ContainsAny(a, " \t") {
			shown[i] = strconv.Quote(a)
		}
	}
	d.out.command("kubectl liqo-janitor " + strings.Join(shown, " ") + suffix)
	flags := []string{"--kubeconfig", kubeconfig}
	if as != "" {
		flags = append(flags, "--as", as)
	}
	cmd := exec.CommandContext(ctx, d.pluginBinary, append(flags, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return out.String(), errOut.String(), errors.New(strings.TrimSpace(errOut.String()))
		}
		return "", "", fmt.Errorf("running the kubectl plugin: %w", err)
	}
	return out.String(), errOut.String(), nil
}

// operator is a client of the operator (impersonated).
func (d *demo) operator() (client.Client, error) {
	return d.env.NewClient(func(c *rest.Config) { c.Impersonate.UserName = operator })
}

// expectRefusal prints the API server's refusal, or fails if the request went through.
func (d *demo) expectRefusal(err error) error {
	var status *apierrors.StatusError
	if !errors.As(err, &status) {
		return fmt.Errorf("expected the gate to refuse, got: %w", err)
	}
	d.out.refused(fmt.Sprintf("HTTP %d: %s", status.ErrStatus.Code, status.ErrStatus.Message))
	return nil
}
