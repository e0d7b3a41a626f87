package release

import (
	"errors"
	"regexp"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// webhookRefusal matches the API server's two errors for a write an admission webhook stopped: one that
// could not be called under failurePolicy Fail ("failed calling webhook %q: …", k8s.io/apiserver
// pkg/util/webhook/error.go ErrCallingWebhook.Error) and one that denied it ("admission webhook %q denied
// the request", pkg/admission/plugin/webhook/errors/statuserror.go ToStatusErr).
var webhookRefusal = regexp.MustCompile(`(?:failed calling webhook|admission webhook) "([^"]+)"`)

// RefusingWebhook names the admission webhook that stopped a write, when that is why err happened.
//
// Another admission webhook may refuse the janitor's writes: Liqo's own webhooks use failurePolicy Fail
// (deployments/liqo/templates/webhooks in Liqo v1.2.0), so while Liqo's webhook pod is down every change
// of a ForeignCluster's metadata fails on fc.mutate.liqo.io and every ResourceSlice finalizer patch on
// resourceslice.validate.liqo.io, while pods, NamespaceMaps and Renews are still released. The janitor
// tells that apart from any other failure to name the webhook and wait for it (janitor rule 11).
func RefusingWebhook(err error) (string, bool) {
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) {
		return "", false
	}
	m := webhookRefusal.FindStringSubmatch(status.Status().Message)
	if m == nil {
		return "", false
	}
	return m[1], true
}
