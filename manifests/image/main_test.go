package main

import (
	"archive/tar"
	"debug/elf"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	. "github.com/onsi/gomega"
	specsv1 "github.com/opencontainers/image-spec/specs-go/v1"
)

// TestCIBuildsTheImageAReleasePushes runs the command twice from scratch, as CI's `make image` and as the
// release's `make image PUSH=1` (to an in-process registry): the same index digest both times and in the
// registry, an index for linux/amd64 and linux/arm64 whose every image runs that platform's static binary
// as the nonroot user on Base, and an SPDX SBOM pushed beside every image.
func TestCIBuildsTheImageAReleasePushes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the image (go build for every platform): run make test")
	}
	g := NewWithT(t)
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	platforms, err := ParsePlatforms("linux/amd64,linux/arm64")
	g.Expect(err).NotTo(HaveOccurred())
	o := options{root: "../..", platforms: platforms, tarballArch: runtime.GOARCH,
		tag:     strings.TrimPrefix(srv.URL, "http://") + "/liqo-janitor/liqo-janitor:v0.1.0",
		version: "v0.1.0", revision: "abc", source: "https://github.com/liqo-janitor/liqo-janitor",
		created: time.Unix(1700000000, 0).UTC()}

	ci := o
	ci.out = t.TempDir()
	g.Expect(run(t.Context(), ci)).To(Succeed())
	release := o
	release.out, release.push = t.TempDir(), true
	g.Expect(run(t.Context(), release)).To(Succeed())

	digest := readDigest(t, ci.out)
	g.Expect(readDigest(t, release.out)).To(Equal(digest), "a second build of the same commit")
	tag, err := name.NewTag(o.tag)
	g.Expect(err).NotTo(HaveOccurred())
	pushed, err := remote.Get(tag, remote.WithContext(t.Context()))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pushed.Digest).To(Equal(digest), "the release pushed what CI built")
	g.Expect(pushed.MediaType.IsIndex()).To(BeTrue())

	idx, err := layout.ImageIndexFromPath(filepath.Join(ci.out, "oci"))
	g.Expect(err).NotTo(HaveOccurred())
	outer, err := idx.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(outer.Manifests).To(HaveLen(1))
	g.Expect(outer.Manifests[0].Digest).To(Equal(digest))
	g.Expect(outer.Manifests[0].Annotations).To(HaveKeyWithValue("org.opencontainers.image.ref.name", tag.String()))
	built, err := idx.ImageIndex(digest)
	g.Expect(err).NotTo(HaveOccurred())
	m, err := built.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())

	base, err := Base(platforms)
	g.Expect(err).NotTo(HaveOccurred())
	baseManifest, err := base.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	var got []string
	for i, d := range m.Manifests {
		g.Expect(d.Platform).NotTo(BeNil())
		got = append(got, d.Platform.String())
		img, err := built.Image(d.Digest)
		g.Expect(err).NotTo(HaveOccurred())
		manifest, err := img.Manifest()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(manifest.Annotations).To(HaveKeyWithValue(specsv1.AnnotationBaseImageName, BaseName))
		g.Expect(manifest.Annotations).To(HaveKeyWithValue(specsv1.AnnotationBaseImageDigest, baseManifest.Manifests[i].Digest.String()),
			"on Base's image of the same platform")
		checkConfig(t, img, *d.Platform)
		root := t.TempDir()
		files := extractAll(t, img, root)
		g.Expect(files).To(HaveKey("etc/passwd"))
		g.Expect(files).To(HaveKey("tmp/"))
		g.Expect(files["tmp/"]&0o1777).To(Equal(int64(0o1777)), "a world-writable, sticky /tmp")
		g.Expect(files).To(HaveKey(Entrypoint[1:]))
		checkStatic(t, filepath.Join(root, filepath.FromSlash(Entrypoint[1:])), d.Platform.Architecture)

		sbom, err := remote.Image(tag.Context().Tag(strings.Replace(d.Digest.String(), ":", "-", 1)+".sbom"), remote.WithContext(t.Context()))
		g.Expect(err).NotTo(HaveOccurred(), "the %s image's SBOM is pushed", d.Platform)
		sbomLayers, err := sbom.Layers()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(sbomLayers).To(HaveLen(1))
		mt, err := sbomLayers[0].MediaType()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(mt)).To(Equal("text/spdx+json"))
	}
	g.Expect(got).To(ConsistOf("linux/amd64", "linux/arm64"))

	runsAsNonroot(t, ci.out, tag)
}

// runsAsNonroot reads the docker-loadable tarball of the host's platform back, as `docker load` would,
// and — as root, where it can switch users — runs the binary from its layers as uid 65532 (distroless's
// nonroot, the chart's runAsUser) with --help.
func runsAsNonroot(t *testing.T, out string, tag name.Tag) {
	t.Helper()
	g := NewWithT(t)
	img, err := tarball.ImageFromPath(filepath.Join(out, "liqo-janitor.tar"), &tag)
	g.Expect(err).NotTo(HaveOccurred())
	checkConfig(t, img, v1.Platform{OS: "linux", Architecture: runtime.GOARCH})
	root := t.TempDir()
	extractAll(t, img, root)
	entry := filepath.Join(root, filepath.FromSlash(Entrypoint[1:]))
	checkStatic(t, entry, runtime.GOARCH)

	if os.Geteuid() != 0 {
		t.Log("not root: running the binary as uid 65532 is skipped")
		return
	}
	for _, dir := range []string{filepath.Dir(root), root} { // t.TempDir makes them 0700
		g.Expect(os.Chmod(dir, 0o755)).To(Succeed())
	}
	cmd := exec.Command(entry, "--help")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: NonrootUID, Gid: NonrootUID}}
	output, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Fatalf("--help as uid 65532 exited %d: %s", exit.ExitCode(), output)
	}
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(output)).To(ContainSubstring("liqo-janitor guards and cleans up"))
}

func readDigest(t *testing.T, out string) v1.Hash {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(out, "digest"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	h, err := v1.NewHash(strings.TrimSpace(string(data)))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return h
}

// checkConfig checks what a kubelet reads from the image's config.
func checkConfig(t *testing.T, img v1.Image, p v1.Platform) {
	t.Helper()
	g := NewWithT(t)
	cfg, err := img.ConfigFile()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.OS).To(Equal(p.OS))
	g.Expect(cfg.Architecture).To(Equal(p.Architecture))
	g.Expect(cfg.Config.User).To(Equal("65532:65532"))
	g.Expect(cfg.Config.Entrypoint).To(Equal([]string{Entrypoint}))
	g.Expect(cfg.Config.Labels).To(HaveKeyWithValue("org.opencontainers.image.licenses", "Apache-2.0"))
	g.Expect(cfg.Config.Labels).To(HaveKey("org.opencontainers.image.version"))
	g.Expect(cfg.Config.Labels).To(HaveKey("org.opencontainers.image.revision"))
	g.Expect(cfg.Config.Labels).To(HaveKey("org.opencontainers.image.source"))
}

// checkStatic checks that the file is a static ELF executable for the architecture.
func checkStatic(t *testing.T, path, arch string) {
	t.Helper()
	g := NewWithT(t)
	f, err := elf.Open(path)
	g.Expect(err).NotTo(HaveOccurred(), "an ELF binary")
	defer func() { _ = f.Close() }()
	g.Expect(f.Machine).To(Equal(map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]), "built for %s", arch)
	for _, p := range f.Progs {
		g.Expect(p.Type).NotTo(Equal(elf.PT_INTERP), "static: no dynamic loader")
	}
	libs, err := f.ImportedLibraries()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(libs).To(BeEmpty(), "static: no shared libraries")
}

// extractAll writes the image's layers, in order, under root and returns the modes of what they hold by
// path. Only the nonroot user's home belongs to someone other than root.
func extractAll(t *testing.T, img v1.Image, root string) map[string]int64 {
	t.Helper()
	g := NewWithT(t)
	layers, err := img.Layers()
	g.Expect(err).NotTo(HaveOccurred())
	modes := map[string]int64{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		g.Expect(err).NotTo(HaveOccurred())
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			g.Expect(err).NotTo(HaveOccurred())
			if h.Name != "home/nonroot/" {
				g.Expect(h.Uid).To(BeZero(), "%s is root-owned, so the nonroot user cannot change it", h.Name)
			}
			path := filepath.Join(root, filepath.FromSlash(h.Name))
			g.Expect(strings.HasPrefix(path, root)).To(BeTrue())
			modes[strings.TrimPrefix(h.Name, "/")] = h.Mode
			switch h.Typeflag {
			case tar.TypeDir:
				g.Expect(os.MkdirAll(path, 0o755)).To(Succeed())
			case tar.TypeReg:
				g.Expect(os.MkdirAll(filepath.Dir(path), 0o755)).To(Succeed())
				data, err := io.ReadAll(tr)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(os.WriteFile(path, data, os.FileMode(h.Mode)&os.ModePerm)).To(Succeed())
			}
		}
		g.Expect(rc.Close()).To(Succeed())
	}
	return modes
}
