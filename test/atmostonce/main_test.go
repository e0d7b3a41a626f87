// Package atmostonce_test is issue 37's end-to-end test, "at most once": a consumer partitioned from a
// provider that fences it by itself takes no step that replaces a workload before the provider has stopped
// that workload's copies — measured on this machine's one clock, for Liqo v1.0.3 and v1.2.0 consumers.
//
// The package's control plane (harness.Run) is the provider, whose Liqo cluster ID is providerID; each
// test starts a consumer's control plane of its own, with a Liqo version's CRDs and the gate's generated
// webhooks.
package atmostonce_test

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

func TestMain(m *testing.M) {
	SetDefaultEventuallyTimeout(time.Minute)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	os.Exit(harness.Run(m, harness.Options{}, func(e *harness.Env) error {
		return e.InstallLocalClusterID(context.Background(), liqoNamespace, providerID)
	}))
}
