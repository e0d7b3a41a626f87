package manifests_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

var env *harness.Env

func TestMain(m *testing.M) {
	os.Exit(harness.Run(m, harness.Options{}, func(e *harness.Env) error {
		env = e
		return installCertManagerCRDs(e)
	}))
}

// installCertManagerCRDs installs the CRDs shipped inside the pinned cert-manager module (deploy/crds), read
// in place like the Liqo CRDs, so that the Issuer and Certificate of the install are validated by their
// real schemas.
func installCertManagerCRDs(e *harness.Env) error {
	moduleDir, err := harness.ModuleDir(e.Root, "github.com/cert-manager/cert-manager")
	if err != nil {
		return err
	}
	dir := filepath.Join(moduleDir, "deploy", "crds")
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{dir}, ErrorIfPathMissing: true}); err != nil {
		return fmt.Errorf("installing the cert-manager CRDs from %s: %w", dir, err)
	}
	return nil
}
