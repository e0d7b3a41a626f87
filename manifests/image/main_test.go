package main

import (
	"archive/tar"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	. "github.com/onsi/gomega"

	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// TestImageTarballHoldsTheStaticBinaryRunAsNonroot builds the image from liqo-janitor built as `make build`
// builds it (harness.RequireBinary: from this checkout, never a stale bin/), reads the docker-loadable
// tarball back, and checks what a kubelet would run: the config's user and entrypoint, a static ELF at the
// entrypoint, and — as root, where it can switch users — that the binary extracted from the layer runs
// `--help` as uid 65532.
func TestImageTarballHoldsTheStaticBinaryRunAsNonroot(t *testing.T) {
	binary := harness.RequireBinary(t, "liqo-janitor")
	g := NewWithT(t)
	out := t.TempDir()
	tag := "ghcr.io/liqo-janitor/liqo-janitor:test"
	g.Expect(run(options{binary: binary, out: out, tag: tag, arch: "amd64", version: "v0.1.0", revision: "abc",
		source: "https://github.com/liqo-janitor/liqo-janitor"})).To(Succeed())

	ref, err := name.NewTag(tag)
	g.Expect(err).NotTo(HaveOccurred())
	img, err := tarball.ImageFromPath(filepath.Join(out, "liqo-janitor.tar"), &ref)
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := img.ConfigFile()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Config.User).To(Equal("65532:65532"))
	g.Expect(cfg.Config.Entrypoint).To(Equal([]string{"/ko-app/liqo-janitor"}))
	g.Expect(cfg.OS).To(Equal("linux"))
	g.Expect(cfg.Config.Labels).To(HaveKeyWithValue("org.opencontainers.image.version", "v0.1.0"))
	g.Expect(cfg.Config.Labels).To(HaveKeyWithValue("org.opencontainers.image.revision", "abc"))
	g.Expect(cfg.Config.Labels).To(HaveKeyWithValue("org.opencontainers.image.licenses", "Apache-2.0"))
	g.Expect(cfg.Config.Labels).To(HaveKey("org.opencontainers.image.source"))

	// the OCI layout holds the same image
	index, err := layout.ImageIndexFromPath(filepath.Join(out, "oci"))
	g.Expect(err).NotTo(HaveOccurred())
	manifest, err := index.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(manifest.Manifests).To(HaveLen(1))
	fromLayout, err := index.Image(manifest.Manifests[0].Digest)
	g.Expect(err).NotTo(HaveOccurred())
	want, err := fromLayout.ConfigName()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(img.ConfigName()).To(Equal(want), "the tarball's docker manifest differs, its config does not")

	layers, err := img.Layers()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(layers).To(HaveLen(1))
	rc, err := layers[0].Uncompressed()
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = rc.Close() }()
	root := t.TempDir()
	extracted := extract(t, rc, root)
	g.Expect(extracted).To(HaveKeyWithValue("ko-app/liqo-janitor", int64(0o755)))

	entry := filepath.Join(root, "ko-app", "liqo-janitor")
	f, err := elf.Open(entry)
	g.Expect(err).NotTo(HaveOccurred(), "an ELF binary")
	defer func() { _ = f.Close() }()
	for _, p := range f.Progs {
		g.Expect(p.Type).NotTo(Equal(elf.PT_INTERP), "static: no dynamic loader")
	}
	libs, err := f.ImportedLibraries()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(libs).To(BeEmpty(), "static: no shared libraries")

	if os.Geteuid() != 0 {
		t.Log("not root: running the binary as uid 65532 is skipped")
		return
	}
	for _, dir := range []string{filepath.Dir(root), root} { // t.TempDir makes them 0700
		g.Expect(os.Chmod(dir, 0o755)).To(Succeed())
	}
	cmd := exec.Command(entry, "--help")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65532, Gid: 65532}}
	output, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Fatalf("--help as uid 65532 exited %d: %s", exit.ExitCode(), output)
	}
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(output)).To(ContainSubstring("liqo-janitor guards and cleans up"))
}

// extract writes the layer's regular files under root and returns their modes by path.
func extract(t *testing.T, r io.Reader, root string) map[string]int64 {
	t.Helper()
	g := NewWithT(t)
	modes := map[string]int64{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return modes
		}
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(h.Uid).To(BeZero(), "root-owned, so the nonroot user cannot change it")
		path := filepath.Join(root, filepath.FromSlash(h.Name))
		g.Expect(strings.HasPrefix(path, root)).To(BeTrue())
		switch h.Typeflag {
		case tar.TypeDir:
			g.Expect(os.MkdirAll(path, 0o755)).To(Succeed())
		case tar.TypeReg:
			data, err := io.ReadAll(tr)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(os.WriteFile(path, data, os.FileMode(h.Mode))).To(Succeed())
			modes[h.Name] = h.Mode
		}
	}
}
