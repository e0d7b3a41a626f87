package fencerenew

import (
	"context"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The renewer writes in two files only (.golangci.yml): here, the renewal of the provider's Lease, which
// its credential may update; and records.go, its own records in the janitor's namespace.

// update writes the renewal at the resourceVersion read, telling whether the request was written out
// (then it may have landed, answered or not).
func (r *Renewer) update(ctx context.Context, p *provider, lease *coordinationv1.Lease, localID string) (
	*coordinationv1.Lease, time.Time, bool, error) {
	var wrote atomic.Bool
	uctx, cancel := context.WithTimeout(ctx, r.opts.timeout())
	defer cancel()
	uctx = httptrace.WithClientTrace(uctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(true) }})
	sent := r.now()
	lease.Spec.HolderIdentity = ptr.To(localID)
	lease.Spec.RenewTime = &metav1.MicroTime{Time: sent}
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(r.opts.Interval / time.Second))
	err := p.c.Update(uctx, lease)
	return lease, sent, wrote.Load(), err
}
