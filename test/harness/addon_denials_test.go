package harness

import "testing"

// TestRBACDenialsAreReadFromLogsAndAnswers: the refusals by RBAC of the product's ServiceAccount are found
// in a JSON log line and in an answer's body, once each; an admission refusal, or another user's, is not one.
func TestRBACDenialsAreReadFromLogsAndAnswers(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		user, text string
		want       []string
	}{
		"a cluster-scoped refusal in a JSON log line": {user: "system:serviceaccount:liqo-janitor-system:liqo-janitor",
			text: `{"level":"error","msg":"Failed to watch","error":"pods is forbidden: User \"system:serviceaccount:liqo-janitor-system:liqo-janitor\" cannot list resource \"pods\" in API group \"\" at the cluster scope"}`,
			want: []string{`User "system:serviceaccount:liqo-janitor-system:liqo-janitor" cannot list resource "pods" in API group "" at the cluster scope`},
		},
		"a namespaced refusal in an answer's body": {user: "system:serviceaccount:ns:sa",
			text: `{"kind":"Status","message":"configmaps \"x\" is forbidden: User \"system:serviceaccount:ns:sa\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"liqo\"","code":403}`,
			want: []string{`User "system:serviceaccount:ns:sa" cannot get resource "configmaps" in API group "" in the namespace "liqo"`},
		},
		"a non-resource path": {user: "system:serviceaccount:ns:sa",
			text: `forbidden: User "system:serviceaccount:ns:sa" cannot get path "/metrics"`,
			want: []string{`User "system:serviceaccount:ns:sa" cannot get path "/metrics"`},
		},
		"an admission webhook's refusal is not RBAC's": {user: "system:serviceaccount:ns:sa",
			text: `admission webhook "vforeigncluster.liqo-janitor.io" denied the request: User "system:serviceaccount:ns:sa" may not write liqo-janitor.io/cleanup`,
		},
		"a person's refusal is not the product's": {user: "system:serviceaccount:ns:sa",
			text: `pods is forbidden: User "alice" cannot list resource "pods" in API group "" at the cluster scope`,
		},
		"another ServiceAccount's refusal is not the product's": {user: "system:serviceaccount:ns:sa",
			text: `pods is forbidden: User "system:serviceaccount:ns:stranger" cannot list resource "pods" in API group "" at the cluster scope`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := &Env{}
			e.recordDenials(tc.user, []byte(tc.text))
			got := e.RBACDenials()
			if len(got) != len(tc.want) {
				t.Fatalf("RBACDenials() = %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("RBACDenials() = %q, want %q", got, tc.want)
				}
			}
		})
	}
}
