package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
	"github.com/liqo-janitor/liqo-janitor/webhook"
)

// fencePollInterval is how often fence reads what is left on the provider while it waits.
const fencePollInterval = time.Second

type fenceOptions struct {
	providerKubeconfig, liqoNamespace, providerLiqoNamespace string
	output                                                   *output.Flag
	all, dryRun, yes                                         bool
	timeout                                                  time.Duration
}

// fenceScope is what one fence knows: the consumer, the marked ForeignCluster, both cluster IDs and the
// provider's API server. A scope exists only for a provider fence identified: providerRead is the Liqo
// cluster ID read on it, which is providerID.
type fenceScope struct {
	consumer            client.Client
	fc                  *liqov1beta1.ForeignCluster
	localID, providerID string
	provider            *providerConn
	providerRead        clusterIDRead
	all                 bool
}

func (e *env) fenceCommand() *cobra.Command {
	var o fenceOptions
	cmd := &cobra.Command{
		Use:   "fence <cluster-id|foreigncluster> [--provider-kubeconfig <file>]",
		Short: "Stop, on a marked provider that answers again, the workloads this consumer left running there",
		Long: `fence connects to a provider this consumer marked permanently unreachable and that answers again, where
the consumer's offloaded pods still run while the consumer already force-deleted its own copies. It acts only
on the marked provider itself: it reads Liqo's cluster ID on the provider (its cluster-ID ConfigMap in
--provider-liqo-namespace) and refuses, deleting and recording nothing, unless it is the ForeignCluster's
spec.clusterID. It shows the plan, asks you to type that provider's cluster ID, deletes this consumer's
ShadowPods there (the garbage collector then deletes their pods) and waits until they are gone; with --all,
then the copies of this consumer's ResourceSlices, NamespaceMaps and Renews in its tenant namespace there
(Liqo then deletes the remote namespaces). It removes no finalizer. Done, it records what it stopped on the
ForeignCluster (` + liqojanitor.FencedAnnotation + `), or "` + verifiedClean + `" when nothing of this consumer was left
there. Without --provider-kubeconfig it tries this consumer's control-plane identity Secret for the provider,
with its inline credentials only: it never runs a credential plugin from a kubeconfig found in the cluster.`,
		Example: `  # what fence would stop, written nowhere
  kubectl liqo-janitor fence provider-a --provider-kubeconfig provider.kubeconfig --dry-run

  # stop this consumer's pods there, then its replicated copies in its tenant namespace there
  kubectl liqo-janitor fence 0f8a2d7c-provider --provider-kubeconfig provider.kubeconfig --all

  # Liqo runs in namespace liqo-system on the provider (in liqo on this consumer)
  kubectl liqo-janitor fence provider-a --provider-kubeconfig provider.kubeconfig --provider-liqo-namespace liqo-system`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: e.completeClusters(isMarked),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			return e.fence(cmd.Context(), args[0], o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.providerKubeconfig, "provider-kubeconfig", "",
		"a kubeconfig of an admin of the provider (default: try this consumer's control-plane identity for it)")
	f.BoolVar(&o.all, "all", false, "also delete this consumer's replicated copies in its tenant namespace on the provider")
	f.BoolVar(&o.dryRun, "dry-run", false, "print the plan and write nothing")
	f.BoolVar(&o.yes, "yes", false, "skip typing the provider's cluster ID (for automation); fence still acts only on a provider whose "+
		"Liqo cluster ID it read there and that matches")
	o.output = output.AddFlag(cmd)
	f.DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long to wait for what fence deleted to be gone")
	f.StringVar(&o.liqoNamespace, "liqo-namespace", webhook.DefaultLiqoNamespace, "the namespace of Liqo's cluster-ID ConfigMap on this cluster (the consumer)")
	f.StringVar(&o.providerLiqoNamespace, "provider-liqo-namespace", webhook.DefaultLiqoNamespace,
		"the namespace of Liqo's cluster-ID ConfigMap on the provider")
	return cmd
}

func (o fenceOptions) validate() error {
	if o.timeout <= 0 {
		return fmt.Errorf("--timeout=%s: give a positive duration, e.g. --timeout=5m", o.timeout)
	}
	return nil
}

// progress is where fence writes what is not the document: stdout, or stderr with -o.
func (e *env) progress(o fenceOptions) io.Writer {
	if o.output.Document() {
		return e.ErrOut
	}
	return e.Out
}

// fence is `fence`: the scope and its checks, the plan, the typed confirmation, the deletes and waits,
// the record.
func (e *env) fence(ctx context.Context, arg string, o fenceOptions) error {
	s, err := e.fenceScope(ctx, arg, o)
	if err != nil {
		return err
	}
	plan, err := computePlan(ctx, s)
	if err != nil {
		return err
	}
	if err := e.showFence(o, &fenceReport{TypeMeta: output.TypeMeta("FenceReport"), Plan: plan.escaped()}); err != nil {
		return err
	}
	if o.dryRun {
		fmt.Fprintln(e.progress(o), "\nDry run: nothing was deleted on the provider, nothing was written on this cluster.")
		return nil
	}
	if err := e.confirmFence(s, plan, o); err != nil {
		return err
	}
	res, err := e.runFence(ctx, s, plan, o)
	if err == nil {
		err = e.recordFence(ctx, s, res)
	}
	if err != nil {
		if o.output.Document() {
			_ = e.showFence(o, &fenceReport{TypeMeta: output.TypeMeta("FenceReport"), Result: res})
		}
		return err
	}
	return e.showFence(o, &fenceReport{TypeMeta: output.TypeMeta("FenceReport"), Result: res})
}

// fenceScope resolves the ForeignCluster (it must be marked), reads this cluster's ID, reaches the
// provider and checks that it is the provider, not this cluster or another one.
func (e *env) fenceScope(ctx context.Context, arg string, o fenceOptions) (*fenceScope, error) {
	c, fc, err := e.Resolve(ctx, arg)
	if err != nil {
		return nil, err
	}
	if !liqojanitor.IsMarked(fc.Annotations) {
		return nil, notMarked(fc)
	}
	local, err := readClusterID(ctx, c, o.liqoNamespace)
	if err != nil {
		return nil, fmt.Errorf("reading this cluster's Liqo cluster ID (--liqo-namespace %s): %w; nothing was read on the provider", o.liqoNamespace, err)
	}
	s := &fenceScope{consumer: c, fc: fc, localID: local.id, providerID: string(fc.Spec.ClusterID), all: o.all}
	if s.provider, err = e.connectProvider(ctx, c, fc, o.providerKubeconfig); err != nil {
		return nil, err
	}
	if s.provider.identity {
		if err := checkIdentity(ctx, e.progress(o), s.provider, o.all); err != nil {
			return nil, err
		}
	}
	if err := checkNotConsumer(ctx, c, s.provider); err != nil {
		return nil, err
	}
	if s.providerRead, err = checkProviderID(ctx, s.provider, o.providerLiqoNamespace, fc, s.localID); err != nil {
		return nil, err
	}
	return s, nil
}

func notMarked(fc *liqov1beta1.ForeignCluster) error {
	name := output.Printable(fc.Name)
	return output.Lines{
		fmt.Sprintf("ForeignCluster %s is not marked permanently unreachable: fence is for a provider this consumer declared dead "+
			"that answers again. Nothing was read on the provider or written.", name),
		"A live provider is unpeered with liqoctl unpeer. To declare this one dead first:",
		"  kubectl liqo-janitor mark " + name + ` --reason "…"`,
	}
}

// confirmFence asks the operator to type the provider's cluster ID as fence read it there (unless --yes):
// what is typed names the one cluster fence acts on, not this consumer, whose ID is the same for all
// its providers.
func (e *env) confirmFence(s *fenceScope, plan *fencePlan, o fenceOptions) error {
	if o.yes {
		return nil
	}
	w := e.progress(o)
	want := s.providerRead.id
	if plan.empty() {
		fmt.Fprintf(w, "\nThis records provider %s %s on the ForeignCluster, which ends its returned-provider alarm.\n", output.Printable(want), verifiedClean)
	} else {
		fmt.Fprintf(w, "\nThis deletes on provider %s what this consumer left running there; nothing brings it back.\n", output.Printable(want))
	}
	fmt.Fprintf(w, "Type the PROVIDER's cluster ID, as read there (%s, %s), to confirm: ", output.Printable(want), s.providerRead.from)
	got, err := e.ReadLine()
	if err != nil {
		return fmt.Errorf("reading the confirmation: %w", err)
	}
	fmt.Fprintln(w)
	if got == want {
		return nil
	}
	hint := ""
	if got == s.localID {
		hint = " (that is this consumer's own: type the provider's)"
	}
	return fmt.Errorf("you typed %q, not the provider's cluster ID %q%s: nothing was deleted or written", got, want, hint)
}

// fenceReport is `fence -o json|yaml`, kind FenceReport: the plan first, and after the confirmation a
// second document, the result.
type fenceReport struct {
	metav1.TypeMeta `json:",inline"`
	Plan            *fencePlan   `json:"plan,omitempty"`
	Result          *fenceResult `json:"result,omitempty"`
}

// DeepCopyObject makes fenceReport a runtime.Object, for cli-runtime's printers.
func (r *fenceReport) DeepCopyObject() runtime.Object { return output.DeepCopyJSON(r) }

// fenceResult is what fence did, and what is left.
type fenceResult struct {
	Steps []*fenceStep `json:"steps"`
	// Counts is what the fence stopped, as recorded: "shadowpods 12, pods 12".
	Counts string `json:"counts"`
	// Record is the value of the fenced annotation written on the ForeignCluster.
	Record string `json:"record,omitempty"`
	// Left is what was still on the provider when --timeout expired, and why.
	Left []string `json:"left,omitempty"`
}

func (e *env) showFence(o fenceOptions, r *fenceReport) error {
	if o.output.Document() {
		return o.output.Print(e.Out, r)
	}
	if r.Plan != nil {
		printFencePlan(e.Out, r.Plan)
	}
	if r.Result != nil && r.Result.Record != "" && strings.HasPrefix(r.Result.Counts, verifiedClean) {
		fmt.Fprintf(e.Out, "\nVerified clean: nothing of this consumer is on the provider.\nRecorded on the ForeignCluster: %s=%s\n",
			liqojanitor.FencedAnnotation, output.Printable(r.Result.Record))
	} else if r.Result != nil && r.Result.Record != "" {
		fmt.Fprintf(e.Out, "\nFenced: nothing this consumer left is running on the provider any more (%s).\n"+
			"Recorded on the ForeignCluster: %s=%s\n", r.Result.Counts, liqojanitor.FencedAnnotation, output.Printable(r.Result.Record))
	}
	return nil
}

// runFence deletes and waits, step by step in Liqo's order, within --timeout.
func (e *env) runFence(ctx context.Context, s *fenceScope, plan *fencePlan, o fenceOptions) (*fenceResult, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	res := &fenceResult{}
	if plan.empty() {
		res.Counts = verifiedClean + " (" + countsOf(nil, s.all) + ")"
		return res, nil
	}
	w := e.progress(o)
	steps, err := deleteShadowPods(ctx, s, plan)
	res.Steps = append(res.Steps, steps...)
	if err == nil {
		err = e.await(ctx, w, steps, o.timeout, res)
	}
	if err != nil || !s.all {
		res.Counts = countsOf(res.Steps, s.all)
		return res, err
	}
	for _, t := range plan.tenants {
		if err := e.fenceTenant(ctx, w, s, t, o.timeout, res); err != nil {
			res.Counts = countsOf(res.Steps, s.all)
			return res, err
		}
	}
	res.Counts = countsOf(res.Steps, s.all)
	return res, nil
}

// fenceTenant deletes the copies in a tenant namespace in Liqo's order — ResourceSlices first (liqoctl
// unpeer's disableOffloading, pkg/liqoctl/unpeer/handler.go), NamespaceMaps (and Liqo's deletion of their
// remote namespaces), Renews last (the authentication, disableAuthentication) — each gone before the next.
func (e *env) fenceTenant(ctx context.Context, w io.Writer, s *fenceScope, t *tenantFootprint, timeout time.Duration, res *fenceResult) error {
	for _, kind := range []struct {
		name string
		objs []client.Object
	}{{"resourceslices", t.resourceSlices}, {"namespacemaps", t.namespaceMaps}, {"renews", t.renews}} {
		step, err := deleteCopies(ctx, s, t.namespace, kind.name, kind.objs)
		if err != nil {
			return err
		}
		steps := []*fenceStep{step}
		if kind.name == "namespacemaps" && len(t.remoteNamespaces) > 0 {
			steps = append(steps, &fenceStep{Where: "remote namespaces of tenant namespace " + t.namespace + " (Liqo's namespacemap controller deletes them)",
				Kind: "namespaces", Before: len(t.remoteNamespaces), left: tracked(s.provider.c, t.remoteNamespaces)})
		}
		res.Steps = append(res.Steps, steps...)
		if err := e.await(ctx, w, steps, timeout, res); err != nil {
			return err
		}
	}
	return nil
}

// fenceStep is one thing fence deleted and then waits for: e.g. the ShadowPods of a namespace, and their
// pods.
type fenceStep struct {
	Where       string   `json:"where"`
	DeletedKind string   `json:"deletedKind,omitempty"`
	Deleted     int      `json:"deleted"`
	Kind        string   `json:"kind"`
	Before      int      `json:"before"`
	Left        int      `json:"left"`
	LeftAlone   []string `json:"leftAlone,omitempty"`
	left        func(ctx context.Context) ([]client.Object, error)
	last        []client.Object
	printed     bool
}

func (st *fenceStep) line() string {
	switch st.DeletedKind {
	case "":
		return fmt.Sprintf("%s: %s %d → %d left", st.Where, st.Kind, st.Before, st.Left)
	case st.Kind:
		return fmt.Sprintf("%s: %s %d deleted, %d → %d left", st.Where, st.Kind, st.Deleted, st.Before, st.Left)
	}
	return fmt.Sprintf("%s: %s %d deleted, %s %d → %d left", st.Where, st.DeletedKind, st.Deleted, st.Kind, st.Before, st.Left)
}

// deleteShadowPods deletes the planned ShadowPods, namespace by namespace; each namespace's step waits
// for the pods the deleted ones own.
func deleteShadowPods(ctx context.Context, s *fenceScope, plan *fencePlan) ([]*fenceStep, error) {
	var steps []*fenceStep
	for _, pn := range plan.Namespaces {
		st := &fenceStep{Where: "namespace " + pn.Namespace, DeletedKind: "shadowpods", Kind: "pods", Before: pn.Pods}
		var owners []types.UID
		for i := range plan.shadowPods {
			sp := &plan.shadowPods[i]
			if sp.Namespace != pn.Namespace {
				continue
			}
			deleted, err := deleteChecked(ctx, s.provider.c, sp, s.ownsShadowPod)
			if err != nil {
				return steps, err
			}
			st.count(sp, deleted)
			if deleted || sp.GetResourceVersion() == "" { // deleted, or already gone: its pods are still this consumer's
				owners = append(owners, sp.UID)
			}
		}
		ns, c := pn.Namespace, s.provider.c
		st.left = func(ctx context.Context) ([]client.Object, error) {
			pods, err := ownedPods(ctx, c, ns, owners)
			return objects(pods), err
		}
		steps = append(steps, st)
	}
	return steps, nil
}

// deleteCopies deletes the crdReplicator's copies of one kind in a tenant namespace.
func deleteCopies(ctx context.Context, s *fenceScope, ns, kind string, objs []client.Object) (*fenceStep, error) {
	st := &fenceStep{Where: "tenant namespace " + ns, DeletedKind: kind, Kind: kind}
	var deleted []client.Object
	for _, obj := range objs {
		ok, err := deleteChecked(ctx, s.provider.c, obj, s.ownsCopy)
		if err != nil {
			return nil, err
		}
		st.count(obj, ok)
		if ok {
			deleted = append(deleted, obj)
		}
	}
	st.Before, st.left = len(deleted), tracked(s.provider.c, deleted)
	return st, nil
}

// count counts obj as deleted, or, when deleteChecked left it alone though it still exists, says so.
func (st *fenceStep) count(obj client.Object, deleted bool) {
	if deleted {
		st.Deleted++
		return
	}
	if obj.GetResourceVersion() != "" { // deleteChecked clears it on an object already gone
		st.LeftAlone = append(st.LeftAlone, describe(obj)+": its labels changed, or it was re-created, since the plan")
	}
}

// deleteChecked deletes obj, with background propagation, if it still belongs to this fence (owns, checked
// on the object itself): the UID and resourceVersion preconditions make the API server refuse an object
// re-created or changed since it was checked; a changed one is read and checked again. It reports whether
// it deleted obj; an object already gone is not an error.
func deleteChecked(ctx context.Context, c client.Client, obj client.Object, owns func(client.Object) bool) (bool, error) {
	for range 5 {
		if !owns(obj) {
			return false, nil
		}
		uid, rv := obj.GetUID(), obj.GetResourceVersion()
		err := c.Delete(ctx, obj, client.Preconditions{UID: &uid, ResourceVersion: &rv}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsNotFound(err):
			obj.SetResourceVersion("")
			return false, nil
		case !apierrors.IsConflict(err):
			return false, providerErr("deleting "+describe(obj), err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			if apierrors.IsNotFound(err) {
				obj.SetResourceVersion("")
				return false, nil
			}
			return false, providerErr("reading "+describe(obj), err)
		}
		if obj.GetUID() != uid {
			return false, nil // re-created: not the object the plan showed
		}
	}
	return false, fmt.Errorf("on the provider, %s kept changing while fence deleted it: run fence again", describe(obj))
}

// tracked is a step's view of objs: those still there, the same objects (UID).
func tracked(c client.Client, objs []client.Object) func(ctx context.Context) ([]client.Object, error) {
	return func(ctx context.Context) ([]client.Object, error) {
		var left []client.Object
		for _, obj := range objs {
			fresh := obj.DeepCopyObject().(client.Object) //nolint:forcetypeassert // a copy of a client.Object
			err := c.Get(ctx, client.ObjectKeyFromObject(obj), fresh)
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				return nil, providerErr("reading "+describe(obj), err)
			case fresh.GetUID() == obj.GetUID():
				left = append(left, fresh)
			}
		}
		return left, nil
	}
}

func objects(pods []corev1.Pod) []client.Object {
	out := make([]client.Object, 0, len(pods))
	for i := range pods {
		out = append(out, &pods[i])
	}
	return out
}

// await polls the steps until nothing is left of them, printing a step's line whenever its count changes;
// when --timeout expires it says what is still there, and why.
func (e *env) await(ctx context.Context, w io.Writer, steps []*fenceStep, timeout time.Duration, res *fenceResult) error {
	err := wait.PollUntilContextCancel(ctx, fencePollInterval, true, func(ctx context.Context) (bool, error) {
		done := true
		for _, st := range steps {
			left, err := st.left(ctx)
			if err != nil {
				return false, err
			}
			changed := !st.printed || len(left) != st.Left
			st.Left, st.last, st.printed = len(left), left, true
			if changed {
				fmt.Fprintln(w, st.line())
			}
			done = done && len(left) == 0
		}
		return done, nil
	})
	if err != nil && ctx.Err() != nil {
		return stillThere(steps, timeout, res)
	}
	return err
}

// stillThere is the error of a fence whose --timeout expired: what is left, and why.
func stillThere(steps []*fenceStep, timeout time.Duration, res *fenceResult) error {
	for _, st := range steps {
		for _, obj := range st.last {
			res.Left = append(res.Left, describe(obj)+": "+why(obj))
		}
	}
	msg := output.Lines{fmt.Sprintf("--timeout %s expired; still on the provider:", timeout)}
	for _, l := range res.Left {
		msg = append(msg, "  "+output.Printable(l))
	}
	return append(msg, "fence removes no finalizers. Nothing was recorded on the ForeignCluster; once the owners of what is listed "+
		"let it go, run fence again (it finds what is left and waits for it).")
}

// describe names obj for a person: "pod app/web-0".
func describe(obj client.Object) string {
	kind := "object"
	switch obj.(type) {
	case *corev1.Pod:
		kind = "pod"
	case *corev1.Namespace:
		return "namespace " + obj.GetName()
	case *offloadingv1beta1.ShadowPod:
		kind = "ShadowPod"
	case *authv1beta1.ResourceSlice:
		kind = "ResourceSlice"
	case *offloadingv1beta1.NamespaceMap:
		kind = "NamespaceMap"
	case *authv1beta1.Renew:
		kind = "Renew"
	}
	return kind + " " + obj.GetNamespace() + "/" + obj.GetName()
}

// why says why obj is still there.
func why(obj client.Object) string {
	if obj.GetDeletionTimestamp() == nil {
		switch obj.(type) {
		case *corev1.Pod:
			return "not deleted yet: the garbage collector (kube-controller-manager) deletes it once its ShadowPod is gone"
		case *corev1.Namespace:
			return "not deleted yet: Liqo's namespacemap controller deletes it once its NamespaceMap is being deleted"
		}
		return "not deleted yet"
	}
	since := "terminating since " + obj.GetDeletionTimestamp().UTC().Format(time.RFC3339)
	if f := obj.GetFinalizers(); len(f) > 0 {
		return since + ", waiting for the finalizers " + strings.Join(f, ", ") + " (their owners remove them)"
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		return since + ": no kubelet has confirmed it stopped (node " + o.Spec.NodeName + ")"
	case *corev1.Namespace:
		return since + ": the namespace controller is still deleting what is in it"
	}
	return since
}

// countsOf is what the steps stopped, in the words of the fenced record.
func countsOf(steps []*fenceStep, all bool) string {
	kinds := []string{"shadowpods", "pods"}
	if all {
		kinds = append(kinds, "resourceslices", "namespacemaps", "renews", "namespaces")
	}
	n := map[string]int{}
	for _, st := range steps {
		if st.DeletedKind != "" {
			n[st.DeletedKind] += st.Deleted
		}
		if st.DeletedKind != st.Kind {
			n[st.Kind] += st.Before - st.Left
		}
	}
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %d", k, n[k]))
	}
	return strings.Join(parts, ", ")
}

// recordFence writes the fenced record on the ForeignCluster: a merge patch of that one annotation, the
// user the consumer's API server takes the plugin's requests to come from.
func (e *env) recordFence(ctx context.Context, s *fenceScope, res *fenceResult) error {
	user, err := cli.WhoAmI(ctx, s.consumer)
	if err != nil {
		return fmt.Errorf("the provider is fenced (%s), but %w; nothing was recorded on the ForeignCluster", res.Counts, err)
	}
	value := liqojanitor.FencedRecord(time.Now(), user, res.Counts)
	target := &liqov1beta1.ForeignCluster{}
	target.Name = s.fc.Name
	if err := s.consumer.Patch(ctx, target, cli.AnnotationsPatch(map[string]string{liqojanitor.FencedAnnotation: value}, nil)); err != nil {
		return fmt.Errorf("the provider is fenced (%s), but recording it on ForeignCluster %s failed: %w; record it with "+
			"kubectl annotate foreigncluster %s %s=%q", res.Counts, s.fc.Name, err, s.fc.Name, liqojanitor.FencedAnnotation, value)
	}
	e.PrintWarnings()
	res.Record = value
	return nil
}
