package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// FuzzDecide drives the pure decision with arbitrary annotations, conditions and inputs: it never panics,
// and every denial carries a message that names the cluster.
func FuzzDecide(f *testing.F) {
	f.Add("provider-a", "", "", "", "true", "provider-a", "alice", now.Format(time.RFC3339), "Error", int64(3600), true, "local", false)
	f.Add("provider-a", "true", "provider-a", "alice", "", "", "", "", "Established", int64(10), false, "provider-a", true)
	f.Add("p", "true", "p", "", "true", "q", "mallory", "garbage", "", int64(-5), true, "", false)
	f.Fuzz(func(t *testing.T, id, oldMark, oldConfirm, oldBy, newMark, newConfirm, newBy, newAt, status string,
		sinceSeconds int64, permitted bool, localID string, localErr bool) {
		ann := func(mark, confirm, by, at string) map[string]string {
			m := map[string]string{}
			for k, v := range map[string]string{liqojanitor.MarkAnnotation: mark, liqojanitor.ConfirmAnnotation: confirm,
				liqojanitor.MarkedByAnnotation: by, liqojanitor.MarkedAtAnnotation: at} {
				if v != "" {
					m[k] = v
				}
			}
			return m
		}
		cond := apiServer(liqov1beta1.ConditionStatusType(status), time.Duration(sinceSeconds)*time.Second)
		r := inputs{
			Old: fc(id, ann(oldMark, oldConfirm, oldBy, ""), cond), New: fc(id, ann(newMark, newConfirm, newBy, newAt), cond),
			User: alice, LocalClusterID: localID, permission: permission{Allowed: permitted}, Now: now,
		}
		if localErr {
			r.LocalClusterIDErr = context.DeadlineExceeded
		}
		set, remove := stamp(r.Old, r.New, alice.Username, false, now)
		for k, v := range set {
			r.New.Annotations[k] = v
		}
		for _, k := range remove {
			delete(r.New.Annotations, k)
		}
		v := decide(&r, opts)
		assertDenialsExplained(t, &v, r.New)
	})
}

func assertDenialsExplained(t *testing.T, v *verdict, f *liqov1beta1.ForeignCluster) {
	t.Helper()
	for _, e := range v.Errors {
		if e.Detail == "" || e.Field == "" {
			t.Fatalf("denial without a message or field: %#v", e)
		}
	}
	if err := v.Err(f); (err != nil) == v.Allowed() {
		t.Fatalf("Err() = %v for allowed = %v", err, v.Allowed())
	}
}

// FuzzAdmissionReview posts arbitrary AdmissionReview bodies to both webhooks' HTTP handlers: they never
// panic, always answer a well-formed AdmissionReview, and every refusal carries a message.
func FuzzAdmissionReview(f *testing.F) {
	for _, seed := range seedReviews(f) {
		f.Add(seed)
	}
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x"}}`))
	f.Add([]byte(`not json`))
	mutating, validating := newFuzzGate(f).webhooks()
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, h := range []http.Handler{mutating, validating} {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				continue // the server refuses a body it cannot read as a review, with an HTTP error
			}
			review := admissionv1.AdmissionReview{}
			if err := json.Unmarshal(rec.Body.Bytes(), &review); err != nil || review.Response == nil {
				t.Fatalf("answer is not an AdmissionReview: %v: %s", err, rec.Body.String())
			}
			if !review.Response.Allowed && (review.Response.Result == nil || review.Response.Result.Message == "") {
				t.Fatalf("refusal without a message: %s", rec.Body.String())
			}
		}
	})
}

// newFuzzGate is a gate over a fake client (pure logic under test; the real API server tests are in
// gate_test.go): the cluster-ID ConfigMap exists and SubjectAccessReviews allow only alice.
func newFuzzGate(tb testing.TB) *gate {
	tb.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "liqo-clusterid-configmap", Namespace: "liqo",
		Labels: map[string]string{liqojanitor.ClusterIDConfigMapNameLabel: liqojanitor.ClusterIDConfigMapNameValue}},
		Data: map[string]string{liqojanitor.ClusterIDConfigMapKey: "local"}}
	c := fake.NewClientBuilder().WithScheme(liqojanitor.NewScheme()).WithObjects(cm).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if sar, ok := obj.(*authorizationv1.SubjectAccessReview); ok {
				sar.Status.Allowed = sar.Spec.User == alice.Username
				return nil
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	o := opts.Default()
	o.LiqoUninstallerUsers = []string{uninstaller}
	return &gate{client: c, reader: c, apiReader: c, options: o, clock: clocktesting.NewFakePassiveClock(now)}
}

// uninstaller is the identity of Liqo's uninstaller the fuzz gate names (rule 18; its requests carry no
// pod binding, so the gate judges them as anyone's).
const uninstaller = "system:serviceaccount:liqo:liqo-pre-delete"

// seedReviews are well-formed reviews for the main paths: marking (allowed and refused), unmarking,
// deleting a marked ForeignCluster and a mark by Liqo's uninstaller.
func seedReviews(tb testing.TB) [][]byte {
	tb.Helper()
	down := apiServer(liqov1beta1.ConditionStatusError, time.Hour)
	pairs := []struct {
		op       admissionv1.Operation
		old, new *liqov1beta1.ForeignCluster
		user     string
	}{
		{admissionv1.Update, fc(id, confirmed, down), fc(id, with(confirmed, liqojanitor.MarkAnnotation, "true"), down), "alice"},
		{admissionv1.Update, fc(id, nil, down), fc(id, with(nil, liqojanitor.MarkAnnotation, "true"), down), "bob"},
		{admissionv1.Update, fc(id, marked, down), fc(id, without(marked, liqojanitor.MarkAnnotation), down), "alice"},
		{admissionv1.Create, nil, fc("local", with(nil, liqojanitor.MarkAnnotation, "true", liqojanitor.ConfirmAnnotation, "local")), "alice"},
		// DELETE carries the old object only (rules 16 and 17)
		{admissionv1.Delete, fc(id, with(marked, liqojanitor.UnpeeringAnnotation, `{"phase":"InProgress"}`), down), nil, "bob"},
		{admissionv1.Delete, fc(id, with(marked, liqojanitor.AllowDeleteAnnotation, id), down), nil, "alice"},
		{admissionv1.Update, fc(id, nil, down), fc(id, with(nil, liqojanitor.MarkAnnotation, "true"), down), uninstaller},
	}
	var out [][]byte
	for _, p := range pairs {
		named := p.new
		if named == nil {
			named = p.old
		}
		req := &admissionv1.AdmissionRequest{UID: "seed", Operation: p.op, Name: named.Name,
			Kind:     metav1.GroupVersionKind{Group: "core.liqo.io", Version: "v1beta1", Kind: "ForeignCluster"},
			Resource: metav1.GroupVersionResource{Group: "core.liqo.io", Version: "v1beta1", Resource: "foreignclusters"}}
		req.UserInfo.Username = p.user
		if p.new != nil {
			req.Object.Raw = mustJSON(tb, withTypeMeta(p.new))
		}
		if p.old != nil {
			req.OldObject.Raw = mustJSON(tb, withTypeMeta(p.old))
		}
		review := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req}
		out = append(out, mustJSON(tb, review))
	}
	return out
}

func withTypeMeta(f *liqov1beta1.ForeignCluster) *liqov1beta1.ForeignCluster {
	f.APIVersion, f.Kind = "core.liqo.io/v1beta1", "ForeignCluster"
	return f
}

func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}
