package manifests_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/cert-manager/cert-manager")
	cmd.Dir = e.Root
	out, err := cmd.Output()
	if err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return fmt.Errorf("resolving the cert-manager module directory: %w: %s", err, exitErr.Stderr)
		}
		return fmt.Errorf("resolving the cert-manager module directory: %w", err)
	}
	moduleDir := strings.TrimSpace(string(out))
	if moduleDir == "" {
		return errors.New("the cert-manager module is not downloaded: run `go mod download` in the repository root")
	}
	dir := filepath.Join(moduleDir, "deploy", "crds")
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: []string{dir}, ErrorIfPathMissing: true}); err != nil {
		return fmt.Errorf("installing the cert-manager CRDs from %s: %w", dir, err)
	}
	return nil
}
