package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// modulePath is the project's Go module; the harness finds the repository root by looking for its go.mod.
const modulePath = "github.com/liqo-janitor/liqo-janitor"

// RepoRoot returns the repository root: the nearest parent of the working directory whose go.mod declares
// the project's module (go test runs each package in its own directory).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(data, []byte("module "+modulePath+"\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod for module %s above the working directory", modulePath)
		}
		dir = parent
	}
}

// binaryDir returns the directory holding kube-apiserver, etcd and kube-controller-manager:
// KUBEBUILDER_ASSETS if set, otherwise bin/k8s under the repository root, as `make control-plane` builds it.
func binaryDir(root string) (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = filepath.Join(root, "bin", "k8s")
	}
	var missing []string
	for _, b := range []string{"kube-apiserver", "etcd", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("control-plane binaries %s missing from %s: run `make control-plane` (or `make test`) first",
			strings.Join(missing, ", "), dir)
	}
	return dir, nil
}

// LiqoCRDDir returns the directory of the Liqo CRDs shipped inside the pinned Liqo module
// (deployments/liqo/charts/liqo-crds/crds), or LIQO_CRDS if set. They are read in place, never copied.
func LiqoCRDDir(root string) (string, error) {
	if dir := os.Getenv("LIQO_CRDS"); dir != "" {
		return dir, nil
	}
	moduleDir, err := ModuleDir(root, "github.com/liqotech/liqo")
	if err != nil {
		return "", err
	}
	return filepath.Join(moduleDir, "deployments", "liqo", "charts", "liqo-crds", "crds"), nil
}

// SupportedLiqoVersions are the Liqo releases whose CRDs the version-dependent tests run against, oldest
// first: the newest patch of each supported minor (design.md "Supported").
var SupportedLiqoVersions = []string{"v1.0.3", "v1.1.0", "v1.2.0"}

// LiqoCRDDirOf returns the CRD directory of Liqo release version, downloading the module into the module
// cache if needed (`go mod download`: the module proxy serves every release).
func LiqoCRDDirOf(version string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", "github.com/liqotech/liqo@"+version)
	cmd.Dir = os.TempDir() // outside any module: the download does not touch go.mod
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("downloading Liqo %s for its CRDs: %w: %s", version, err, out)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return "", fmt.Errorf("downloading Liqo %s for its CRDs: %w", version, err)
	}
	if mod.Dir == "" {
		return "", fmt.Errorf("downloading Liqo %s for its CRDs: %s", version, mod.Error)
	}
	return filepath.Join(mod.Dir, "deployments", "liqo", "charts", "liqo-crds", "crds"), nil
}

// ModuleDir returns the directory of a module the repository (at root) depends on, as pinned in go.mod
// (`go list -m`), in the read-only module cache.
func ModuleDir(root, module string) (string, error) {
	dir, _, err := listModule(root, module)
	return dir, err
}

// LiqoModuleDir is the tools module that builds Liqo's webhook (`make liqo-webhook`), relative to the
// repository root: the Liqo release its go.mod requires is the one whose webhook the tests run.
const LiqoModuleDir = "test/liqo"

// LiqoModule returns the directory, in the module cache, and the version of the Liqo release the tools
// module LiqoModuleDir requires: the release whose webhook LiqoWebhookBinary is.
func LiqoModule(root string) (dir, version string, err error) {
	return listModule(filepath.Join(root, LiqoModuleDir), "github.com/liqotech/liqo")
}

// listModule returns the directory, in the module cache, and the version of a module the Go module in
// modDir depends on (`go list -m`).
func listModule(modDir, module string) (dir, version string, err error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}} {{.Version}}", module)
	cmd.Dir = modDir
	out, err := cmd.Output()
	if err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return "", "", fmt.Errorf("resolving the directory of module %s: %w: %s", module, err, exitErr.Stderr)
		}
		return "", "", fmt.Errorf("resolving the directory of module %s: %w", module, err)
	}
	dir, version, _ = strings.Cut(strings.TrimSpace(string(out)), " ")
	if dir == "" {
		return "", "", fmt.Errorf("module %s is not downloaded: run `go mod download` in %s", module, modDir)
	}
	return dir, version, nil
}
