package fence

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// pollInterval is how often fence reads what is left on the provider while it waits.
const pollInterval = time.Second

// deleteAndWait deletes and waits, step by step in Liqo's order, within timeout (--timeout), writing a
// step's line to w whenever its count changes.
func deleteAndWait(ctx context.Context, w io.Writer, s *scope, plan *Plan, timeout time.Duration) (*Result, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res := &Result{}
	if plan.empty() {
		res.Counts = VerifiedClean + " (" + countsOf(nil, s.all) + ")"
		return res, nil
	}
	steps, err := deleteShadowPods(ctx, s, plan)
	res.Steps = append(res.Steps, steps...)
	if err == nil {
		err = await(ctx, w, steps, timeout, res)
	}
	if err != nil || !s.all {
		res.Counts = countsOf(res.Steps, s.all)
		return res, err
	}
	for _, t := range plan.tenants {
		if err := deleteTenant(ctx, w, s, t, timeout, res); err != nil {
			res.Counts = countsOf(res.Steps, s.all)
			return res, err
		}
	}
	res.Counts = countsOf(res.Steps, s.all)
	return res, nil
}

// deleteTenant deletes the copies in a tenant namespace in Liqo's order — ResourceSlices first (liqoctl
// unpeer's disableOffloading, pkg/liqoctl/unpeer/handler.go), NamespaceMaps (and Liqo's deletion of their
// remote namespaces), Renews last (the authentication, disableAuthentication) — each gone before the next.
func deleteTenant(ctx context.Context, w io.Writer, s *scope, t *tenantFootprint, timeout time.Duration, res *Result) error {
	for _, kind := range []struct {
		name string
		objs []client.Object
	}{{"resourceslices", t.resourceSlices}, {"namespacemaps", t.namespaceMaps}, {"renews", t.renews}} {
		step, err := deleteCopies(ctx, s, t.namespace, kind.name, kind.objs)
		if err != nil {
			return err
		}
		steps := []*Step{step}
		if kind.name == "namespacemaps" && len(t.remoteNamespaces) > 0 {
			steps = append(steps, &Step{Where: "remote namespaces of tenant namespace " + t.namespace + " (Liqo's namespacemap controller deletes them)",
				Kind: "namespaces", Before: len(t.remoteNamespaces), left: tracked(s.provider.c, t.remoteNamespaces)})
		}
		res.Steps = append(res.Steps, steps...)
		if err := await(ctx, w, steps, timeout, res); err != nil {
			return err
		}
	}
	return nil
}

// Step is one thing fence deleted and then waits for: e.g. the ShadowPods of a namespace, and their
// pods.
type Step struct {
	// Where is the namespace, or what Liqo deletes: "namespace app", "tenant namespace t".
	Where string `json:"where"`
	// DeletedKind and Deleted are what fence deleted ("shadowpods", 3); empty for what Liqo deletes.
	DeletedKind string `json:"deletedKind,omitempty"`
	Deleted     int    `json:"deleted"`
	// Kind is what the step waits for ("pods" of deleted ShadowPods), Before how many there were and
	// Left how many are still there.
	Kind   string `json:"kind"`
	Before int    `json:"before"`
	Left   int    `json:"left"`
	// LeftAlone is what fence did not delete though the plan listed it, and why.
	LeftAlone []string `json:"leftAlone,omitempty"`

	// left reads what of the step is still there; last is its last answer, printed whether its line
	// was printed once.
	left    func(ctx context.Context) ([]client.Object, error)
	last    []client.Object
	printed bool
}

func (st *Step) line() string {
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
func deleteShadowPods(ctx context.Context, s *scope, plan *Plan) ([]*Step, error) {
	var steps []*Step
	for _, pn := range plan.Namespaces {
		st := &Step{Where: "namespace " + pn.Namespace, DeletedKind: "shadowpods", Kind: "pods", Before: pn.Pods}
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
func deleteCopies(ctx context.Context, s *scope, ns, kind string, objs []client.Object) (*Step, error) {
	st := &Step{Where: "tenant namespace " + ns, DeletedKind: kind, Kind: kind}
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
func (st *Step) count(obj client.Object, deleted bool) {
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
func await(ctx context.Context, w io.Writer, steps []*Step, timeout time.Duration, res *Result) error {
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
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
func stillThere(steps []*Step, timeout time.Duration, res *Result) error {
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

// countsOf is what the steps stopped, in the words of the fenced record.
func countsOf(steps []*Step, all bool) string {
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
