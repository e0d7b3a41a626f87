package fencerenew

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// records is the renewals ConfigMap as read this round.
type records struct {
	cm *corev1.ConfigMap // nil: none yet
	ns string
}

// read is the record of provider id ("" when none): an unreadable one is an error, never a fresh record.
func (s *records) read(id string) (liqojanitor.FenceRenewal, error) {
	if s.cm == nil {
		return liqojanitor.FenceRenewal{}, nil
	}
	v, ok := s.cm.Data[id]
	if !ok {
		return liqojanitor.FenceRenewal{}, nil
	}
	return liqojanitor.ParseFenceRenewal(v)
}

func (r *Renewer) loadRecords(ctx context.Context) (*records, error) {
	cm := &corev1.ConfigMap{}
	err := r.c.Get(ctx, client.ObjectKey{Namespace: r.opts.Namespace, Name: liqojanitor.FenceRenewalsConfigMap}, cm)
	if apierrors.IsNotFound(err) {
		return &records{ns: r.opts.Namespace}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the renewals ConfigMap: %w", err)
	}
	return &records{cm: cm, ns: r.opts.Namespace}, nil
}

// write records one provider's renewals, at the ConfigMap's resourceVersion read (only the leader writes
// it; a conflict means another leader did, and the next round reads again).
func (s *records) write(ctx context.Context, c client.Client, id string, rec liqojanitor.FenceRenewal) error {
	if s.cm == nil {
		cm := &corev1.ConfigMap{}
		cm.Namespace, cm.Name = s.ns, liqojanitor.FenceRenewalsConfigMap
		cm.Data = map[string]string{id: rec.String()}
		if err := c.Create(ctx, cm); err != nil {
			return fmt.Errorf("creating the renewals ConfigMap: %w", err)
		}
		s.cm = cm
		return nil
	}
	patch := client.MergeFromWithOptions(s.cm.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if s.cm.Data == nil {
		s.cm.Data = map[string]string{}
	}
	s.cm.Data[id] = rec.String()
	if err := c.Patch(ctx, s.cm, patch); err != nil {
		return fmt.Errorf("recording the renewals of %s: %w", id, err)
	}
	return nil
}
