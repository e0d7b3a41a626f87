package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// NeedsBinary is the message a test that builds and runs one of the project's binaries without a control
// plane skips with in the unit lane.
const NeedsBinary = "builds and runs the binary: run make test"

// Build compiles the command ./cmd/<name> of the repository at root into dir and returns its path. It
// builds as `make build` does (static, trimmed, stripped), so the binary is the one the image ships and
// the Go build cache is the one `make build` fills: after the first build only the link runs. The tests
// build what they run, from the checkout they test, so none can run a binary an older `make build` left
// in bin/.
func Build(root, name, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./cmd/"+name)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if output, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building ./cmd/%s: %w: %s", name, err, output)
	}
	return out, nil
}

// built is one command Env.Binary builds, once per Env.
type built struct {
	once sync.Once
	path string
	err  error
}

// Binary returns the command ./cmd/<name> (liqo-janitor, kubectl-liqo_janitor) built by Build into the
// Env's directory, the first call building it: once per Env, that is once per test process.
func (e *Env) Binary(name string) (string, error) {
	e.mu.Lock()
	b, ok := e.binaries[name]
	if !ok {
		b = &built{}
		e.binaries[name] = b
	}
	e.mu.Unlock()
	b.once.Do(func() { b.path, b.err = Build(e.Root, name, filepath.Join(e.dir, "bin")) })
	return b.path, b.err
}

// RequireBinary returns the command ./cmd/<name> built by Build into a directory of the test's own, for a
// test that runs the binary without a control plane (the image's test); under `go test -short` (make
// test-unit) it skips the test with NeedsBinary instead.
func RequireBinary(tb testing.TB, name string) string {
	tb.Helper()
	if testing.Short() {
		tb.Skip(NeedsBinary)
	}
	root, err := RepoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	path, err := Build(root, name, tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	return path
}
