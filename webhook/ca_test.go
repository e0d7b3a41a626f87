package webhook_test

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// TestOnlyTheProvidersCertificateVetoes (rule 4): where the consumer holds the provider's CA (its
// control-plane Identity's authParams.ca), an answer at the provider's address vetoes the mark only when the
// server's certificate verifies against that CA: a server of another CA there (an HTTPS proxy, a recycled
// address) does not make the provider unmarkable.
func TestOnlyTheProvidersCertificateVetoes(t *testing.T) {
	for name, providersCA := range map[string]bool{"the provider's CA": true, "another CA": false} {
		t.Run(name, func(t *testing.T) {
			env := harness.Require(t)
			g := NewWithT(t)
			ctx := t.Context()
			server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusUnauthorized)
			}))
			t.Cleanup(server.Close)
			ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})
			if !providersCA {
				ca = harness.AnotherCA(t)
			}
			fc := newProvider(t, liqov1beta1.ConditionStatusError, time.Hour)
			ns := env.Namespace(t)
			g.Expect(env.Client.Create(ctx, &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{Name: "controlplane", Namespace: ns},
				Spec: authv1beta1.IdentitySpec{ClusterID: fc.Spec.ClusterID, Type: authv1beta1.ControlPlaneIdentityType,
					AuthParams: authv1beta1.AuthParams{CA: ca, APIServer: server.URL}}})).To(Succeed())
			latest := get(t, fc)
			latest.Status.APIServerURL, latest.Status.TenantNamespace.Local = server.URL, ns
			g.Expect(env.Client.Status().Update(ctx, latest)).To(Succeed())

			err := fixture.Annotate(ctx, alice, fc, markAndConfirm(fc))
			if providersCA {
				expectDenied(t, err, http.StatusUnprocessableEntity, "status.conditions", fc, "the provider answers at "+server.URL)
				return
			}
			g.Expect(err).NotTo(HaveOccurred(), "an answer with another CA's certificate is not the provider's")
		})
	}
}
