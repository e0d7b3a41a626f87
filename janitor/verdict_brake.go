package janitor

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// The brake (janitor rule 14): a janitor-wide stop an operator sets without writing any ForeignCluster —
// the ConfigMap liqojanitor.BrakeConfigMap in the janitor's own namespace. Pause and unmark are
// ForeignCluster writes, and Liqo's own ForeignCluster webhook (fc.mutate.liqo.io, failurePolicy Fail)
// refuses every one of them while its pod is down — or the gate does while ours is; a ConfigMap in the
// janitor's namespace passes neither. While it exists no pass releases anything: it is read live before a
// pass releases and before every batch of writes (the re-check), and a pass that finds it stops as one
// that finds the cluster no longer dead does. Its RBAC (get, list and watch of that one ConfigMap in the
// release namespace) is the chart's templates/brake-rbac.yaml: a marker would put it in Liqo's namespace.

// brake reads the janitor-wide brake.
type brake struct {
	// reader reads the brake's ConfigMap live; namespace is the janitor's (required: Setup refuses to run
	// without it).
	reader    client.Reader
	namespace string
}

// on reports whether the brake is set, and the operator's reason (its data key "reason"), read live.
func (b brake) on(ctx context.Context) (reason string, set bool, err error) {
	cm := &corev1.ConfigMap{}
	switch err := b.reader.Get(ctx, client.ObjectKey{Namespace: b.namespace, Name: liqojanitor.BrakeConfigMap}, cm); {
	case apierrors.IsNotFound(err):
		brakeGauge.Set(0)
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("reading the brake (ConfigMap %s/%s): %w", b.namespace, liqojanitor.BrakeConfigMap, err)
	}
	brakeGauge.Set(1)
	return cm.Data[liqojanitor.BrakeReasonKey], true, nil
}

// brakeCache watches the brake's ConfigMap alone (its namespace, its name), so that setting or removing it
// starts a pass of every marked cluster.
func brakeCache(mgr ctrl.Manager, namespace string) (cache.Cache, error) {
	return ownCache(mgr, "the brake", cache.Options{
		DefaultNamespaces:    map[string]cache.Config{namespace: {}},
		DefaultFieldSelector: fields.OneTermEqualSelector("metadata.name", liqojanitor.BrakeConfigMap),
	})
}
