package webhook

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// The provider fence's deadline (rule 31) as a pure decision: the exact instant, the override and its
// stamp, Liqo's uninstaller held too; and the gate's read of the janitor's record (no ConfigMap, an API
// error), through a fake client that fails at will.

// contract is a provider's fence contract: SafeAfter is 195.75 s.
var contract = liqojanitor.FenceContract{FenceAfter: liqojanitor.Duration(90 * time.Second), Poll: liqojanitor.Duration(5 * time.Second),
	GraceCap: liqojanitor.Duration(30 * time.Second), Failover: liqojanitor.Duration(20 * time.Second),
	Stop: liqojanitor.Duration(60 * time.Second), ProviderClusterID: id}

// renewalDue is a renewal record whose deadline is deadline.
func renewalDue(deadline time.Time) liqojanitor.FenceRenewal {
	landed := deadline.Add(-contract.SafeAfter())
	ack := landed.Add(-time.Second)
	return liqojanitor.FenceRenewal{Contract: contract.String(), LastAck: &ack, LastLanded: &landed}
}

func TestDecideFenceDeadline(t *testing.T) {
	t.Parallel()
	deadline := now.Add(5 * time.Second) // within the stamps' window, so that a mark at it is the same request
	overridden := with(marked, liqojanitor.OverrideFenceDeadlineAnnotation, id,
		liqojanitor.FenceDeadlineOverriddenAnnotation, liqojanitor.FenceDeadlineOverride{At: now, By: "alice", Deadline: deadline}.String())
	tests := map[string]struct {
		review      inputs
		at          time.Time // the request's time; now when zero
		wantAllowed bool
		wantCode    int32
		wantPaths   []string
		wantInMsg   []string
		wantReason  string
		wantWarning string
	}{
		"a mark 1 s before the deadline is refused, with the deadline in UTC and why": {
			review: inputs{Old: fc(id, confirmed, down), New: fc(id, marked, down), permission: permitted, FenceRenewal: renewalDue(deadline)},
			at:     deadline.Add(-time.Second), wantCode: http.StatusUnprocessableEntity, wantReason: reasonFenceDeadline,
			wantPaths: []string{"metadata.annotations[liqo.io/foreign-cluster-permanently-unreachable]"},
			wantInMsg: []string{"Liqo ≥ v1.1 force-deletes", "completes by " + deadline.Format(time.RFC3339) + " (in 1s",
				"mark at or after it", "fenceAfter 1m30s, poll 5s, failover 20s, stop 1m0s, provider cluster ID provider-a",
				"liqo-janitor.io/override-fence-deadline=provider-a liqo-janitor.io/confirm-cluster-id=provider-a liqo.io/foreign-cluster-permanently-unreachable=true"},
		},
		"a mark at the deadline is admitted": {
			review: inputs{Old: fc(id, confirmed, down), New: fc(id, marked, down), permission: permitted, FenceRenewal: renewalDue(deadline)},
			at:     deadline, wantAllowed: true, wantReason: reasonMarked,
		},
		"no record is no deadline": {
			review:      inputs{Old: fc(id, confirmed, down), New: fc(id, marked, down), permission: permitted},
			wantAllowed: true, wantReason: reasonMarked,
		},
		"a record without a renewal that may have landed is no deadline": {
			review:      inputs{Old: fc(id, confirmed, down), New: fc(id, marked, down), permission: permitted, FenceRenewal: liqojanitor.FenceRenewal{Contract: contract.String()}},
			wantAllowed: true, wantReason: reasonMarked,
		},
		"a record that cannot be read refuses the mark (fail closed)": {
			review:   inputs{Old: fc(id, confirmed, down), New: fc(id, marked, down), permission: permitted, FenceRenewalErr: errors.New("etcd is sad")},
			wantCode: http.StatusUnprocessableEntity, wantReason: reasonFenceDeadline,
			wantInMsg: []string{"cannot read the janitor's record", "etcd is sad", "fail closed"},
		},
		"Liqo's uninstaller is held too (rule 18)": {
			review:   inputs{Old: fc(id, nil), New: fc(id, marked), LiqoUninstaller: true, FenceRenewal: renewalDue(deadline)},
			wantCode: http.StatusUnprocessableEntity, wantReason: reasonFenceDeadline, wantInMsg: []string{"completes by " + deadline.Format(time.RFC3339)},
		},
		"the override in the marking request, stamped, with the verb: admitted with a warning": {
			review:      inputs{Old: fc(id, confirmed, down), New: fc(id, overridden, down), permission: permitted, FenceRenewal: renewalDue(deadline)},
			wantAllowed: true, wantReason: reasonDeadlineOverride, wantWarning: "before the provider's fence completes (by " + deadline.Format(time.RFC3339),
		},
		"the override also passes a record that cannot be read": {
			review:      inputs{Old: fc(id, confirmed, down), New: fc(id, overridden, down), permission: permitted, FenceRenewalErr: errors.New("etcd is sad")},
			wantAllowed: true, wantReason: reasonDeadlineOverride,
		},
		"the override without the verb is refused": {
			review:   inputs{Old: fc(id, confirmed, down), New: fc(id, overridden, down), FenceRenewal: renewalDue(deadline)},
			wantCode: http.StatusForbidden, wantReason: reasonPermission,
		},
		"Liqo's uninstaller's override needs the verb": {
			review: inputs{Old: fc(id, nil), New: fc(id, with(overridden, liqojanitor.MarkedByAnnotation, "alice")), LiqoUninstaller: true,
				FenceRenewal: renewalDue(deadline)},
			wantCode: http.StatusForbidden, wantReason: reasonPermission,
		},
		"an override naming another cluster ID is refused": {
			review: inputs{Old: fc(id, confirmed, down), New: fc(id, with(overridden, liqojanitor.OverrideFenceDeadlineAnnotation, "provider-b"), down),
				permission: permitted, FenceRenewal: renewalDue(deadline)},
			wantCode: http.StatusUnprocessableEntity, wantReason: reasonDeadlineValue,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/override-fence-deadline]"}, wantInMsg: []string{"must equal the cluster ID"},
		},
		"an override the old object carried does not count": {
			review: inputs{Old: fc(id, with(confirmed, liqojanitor.OverrideFenceDeadlineAnnotation, id), down), New: fc(id, overridden, down),
				permission: permitted, FenceRenewal: renewalDue(deadline)},
			wantCode: http.StatusUnprocessableEntity, wantReason: reasonDeadlineEarly,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/override-fence-deadline]"}, wantInMsg: []string{"was set before this request"},
		},
		"an override set ahead of the mark is refused, for a holder of the verb too": {
			review:   inputs{Old: fc(id, nil, down), New: fc(id, with(nil, liqojanitor.OverrideFenceDeadlineAnnotation, id), down), permission: permitted},
			wantCode: http.StatusUnprocessableEntity, wantReason: reasonDeadlineEarly, wantInMsg: []string{"never ahead of it (gate rule 31)"},
		},
		"an override not stamped by the gate is refused": {
			review: inputs{Old: fc(id, confirmed, down), New: fc(id, without(overridden, liqojanitor.FenceDeadlineOverriddenAnnotation), down),
				permission: permitted, FenceRenewal: renewalDue(deadline)},
			wantCode: http.StatusUnprocessableEntity, wantReason: reasonNotStamped,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/fence-deadline-overridden]"},
		},
		"the override's stamp is immutable while marked": {
			review:   inputs{Old: fc(id, overridden, down), New: fc(id, with(overridden, liqojanitor.FenceDeadlineOverriddenAnnotation, "x"), down)},
			wantCode: http.StatusUnprocessableEntity, wantReason: reasonImmutable,
		},
		"the override's stamp without the mark is refused": {
			review:   inputs{Old: fc(id, nil, down), New: fc(id, with(nil, liqojanitor.FenceDeadlineOverriddenAnnotation, overridden[liqojanitor.FenceDeadlineOverriddenAnnotation]), down)},
			wantCode: http.StatusUnprocessableEntity, wantReason: reasonStamps,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := tc.review
			r.User, r.Now = alice, now
			if !tc.at.IsZero() {
				r.Now = tc.at
			}
			v := decide(&r, opts)
			assertVerdict(t, &v, r.New, tc.wantAllowed, tc.wantCode, tc.wantPaths, tc.wantInMsg)
			if v.Reason != tc.wantReason {
				t.Errorf("Reason = %q, want %q", v.Reason, tc.wantReason)
			}
			if tc.wantWarning != "" && (len(v.Warnings) != 1 || !strings.Contains(v.Warnings[0], tc.wantWarning)) {
				t.Errorf("warnings = %q, want one containing %q", v.Warnings, tc.wantWarning)
			}
		})
	}
}

// TestTheGateReadsTheRenewalRecord: the gate's read of the janitor's record — none when the ConfigMap or
// the provider's entry is not there; an error (the mark refused) when the API server fails or the record is
// not readable; a look-alike in another namespace is not read.
func TestTheGateReadsTheRenewalRecord(t *testing.T) {
	t.Parallel()
	const ns = "liqo-janitor-system"
	deadline := now.Add(time.Minute)
	cm := func(namespace, value string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: liqojanitor.FenceRenewalsConfigMap},
			Data: map[string]string{id: value}}
	}
	failing := interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		return errors.New("connection refused")
	}}
	tests := map[string]struct {
		objects      []client.Object
		funcs        *interceptor.Funcs
		wantDeadline bool
		wantErr      string
	}{
		"no ConfigMap":              {},
		"a look-alike elsewhere":    {objects: []client.Object{cm("default", renewalDue(deadline).String())}},
		"the record":                {objects: []client.Object{cm(ns, renewalDue(deadline).String())}, wantDeadline: true},
		"a record that is not JSON": {objects: []client.Object{cm(ns, "soon")}, wantErr: "not readable"},
		"the API server fails":      {funcs: &failing, wantErr: "connection refused"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			scheme := runtime.NewScheme()
			_ = corev1.AddToScheme(scheme)
			b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objects...)
			if tc.funcs != nil {
				b = b.WithInterceptorFuncs(*tc.funcs)
			}
			g := &gate{apiReader: b.Build(), options: Options{Namespace: ns}}
			r, err := g.fenceRenewal(t.Context(), fc(id, nil))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d, _, ok := r.Deadline(); ok != tc.wantDeadline || (ok && !d.Equal(deadline)) {
				t.Errorf("Deadline = %s, %v; want %s, %v", d, ok, deadline, tc.wantDeadline)
			}
		})
	}
}
