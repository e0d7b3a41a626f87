// Command image builds liqo-janitor's container image without a Docker daemon or a registry
// (`make image`): go-containerregistry puts the static binary on an empty base, as ko does
// (/ko-app/liqo-janitor, user 65532), and writes it as an OCI image layout and as a tarball that
// `docker load` and `podman load` read. Releases build with ko on distroless static instead (.ko.yaml).
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Where the binary goes and who runs it: ko's layout, distroless's nonroot user.
const (
	Entrypoint = "/ko-app/liqo-janitor"
	User       = "65532:65532"
)

// options are the command's flags.
type options struct {
	binary, out, tag, arch, version, revision, source string
	created                                           time.Time
}

func main() {
	var o options
	var created int64
	flag.StringVar(&o.binary, "binary", "bin/liqo-janitor", "the static linux binary to put in the image")
	flag.StringVar(&o.out, "out", "bin/image", "directory for the OCI layout (oci/) and the tarball (liqo-janitor.tar)")
	flag.StringVar(&o.tag, "tag", "ghcr.io/liqo-janitor/liqo-janitor:dev", "the image reference the tarball is tagged with")
	flag.StringVar(&o.arch, "arch", "amd64", "the binary's architecture")
	flag.StringVar(&o.version, "version", "dev", "org.opencontainers.image.version")
	flag.StringVar(&o.revision, "revision", "", "org.opencontainers.image.revision (the git commit)")
	flag.StringVar(&o.source, "source", "https://github.com/liqo-janitor/liqo-janitor", "org.opencontainers.image.source")
	flag.Int64Var(&created, "created", 0, "creation time, seconds since the epoch (SOURCE_DATE_EPOCH; 0: the epoch, for reproducible images)")
	flag.Parse()
	o.created = time.Unix(created, 0).UTC()
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
}

func run(o options) error {
	img, err := build(o)
	if err != nil {
		return err
	}
	ref, err := name.NewTag(o.tag)
	if err != nil {
		return fmt.Errorf("--tag: %w", err)
	}
	if err := os.RemoveAll(filepath.Join(o.out, "oci")); err != nil {
		return err
	}
	p, err := layout.Write(filepath.Join(o.out, "oci"), empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref.String()})); err != nil {
		return err
	}
	tarPath := filepath.Join(o.out, "liqo-janitor.tar")
	if err := tarball.WriteToFile(tarPath, ref, img); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("image %s (%s) written to %s and %s\n", ref, digest, filepath.Join(o.out, "oci"), tarPath)
	return nil
}

// build puts the binary on an empty base with the config a Kubernetes pod needs.
func build(o options) (v1.Image, error) {
	binary, err := os.ReadFile(o.binary)
	if err != nil {
		return nil, err
	}
	layerTar, err := binaryLayer(binary, o.created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: o.created}, CreatedBy: "manifests/image: " + Entrypoint, Comment: "the static liqo-janitor binary"}})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Created = "linux", o.arch, v1.Time{Time: o.created}
	cfg.Config.User = User
	cfg.Config.Entrypoint = []string{Entrypoint}
	cfg.Config.WorkingDir = "/"
	cfg.Config.Env = []string{"PATH=/ko-app", "KO_DATA_PATH=/var/run/ko"}
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title":       "liqo-janitor",
		"org.opencontainers.image.description": "The gate and the finalizer janitor for Liqo consumers whose provider is gone for good",
		"org.opencontainers.image.source":      o.source,
		"org.opencontainers.image.url":         o.source,
		"org.opencontainers.image.version":     o.version,
		"org.opencontainers.image.revision":    o.revision,
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.created":     o.created.Format(time.RFC3339),
	}
	return mutate.ConfigFile(img, cfg)
}

// binaryLayer is the tar of the image's only layer: /ko-app/liqo-janitor, root-owned, mode 0755.
func binaryLayer(binary []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Typeflag: tar.TypeDir, Name: "ko-app/", Mode: 0o755, ModTime: mtime},
		{Typeflag: tar.TypeReg, Name: Entrypoint[1:], Mode: 0o755, Size: int64(len(binary)), ModTime: mtime},
	} {
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(binary); err != nil {
				return nil, err
			}
		}
	}
	return buf.Bytes(), tw.Close()
}
