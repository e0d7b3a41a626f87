package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// BaseName names the base in the images' org.opencontainers.image.base.name annotation. The base is built
// here, from this file, and never pushed on its own (.invalid is the reserved top-level domain, so nobody
// mistakes it for a pullable image); the annotation's base.digest says which base it was.
const BaseName = "liqo-janitor.invalid/base:static-nonroot"

// NonrootUID is the user the image runs as: distroless's nonroot, and the chart's runAsUser.
const NonrootUID = 65532

// The base's files: what the distroless static image gives a static Go binary that the binary can use.
// It has no CA bundle and no time zones: the binary trusts only the API server's CA (its ServiceAccount's
// ca.crt), probes providers without verifying them (probe.go) and writes times in UTC.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"
)

// Base is the image index the binary is put on: for each platform, an image of one layer (the passwd and
// group files, /tmp, the nonroot user's home) run as the nonroot user. It is a function of the platforms
// alone — fixed times, owners and order — so CI and a release, on any machine and without a registry,
// start from the same bytes, and the same commit gives the same digest.
func Base(platforms []v1.Platform) (v1.ImageIndex, error) {
	layer, err := baseLayer()
	if err != nil {
		return nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
		img, err = mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer, History: v1.History{
			Created: v1.Time{Time: time.Unix(0, 0).UTC()}, CreatedBy: "manifests/image: Base",
			Comment: "/etc/passwd, /etc/group, /tmp, /home/nonroot"}})
		if err != nil {
			return nil, err
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		cfg = cfg.DeepCopy()
		cfg.OS, cfg.Architecture, cfg.Variant = p.OS, p.Architecture, p.Variant
		cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
		cfg.Config.User = fmt.Sprintf("%d:%d", NonrootUID, NonrootUID)
		cfg.Config.WorkingDir = "/"
		if img, err = mutate.ConfigFile(img, cfg); err != nil {
			return nil, err
		}
		platform := p
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &platform}})
	}
	return idx, nil
}

// ParsePlatforms reads "linux/amd64,linux/arm64" as ko's --platform does.
func ParsePlatforms(s string) ([]v1.Platform, error) {
	var out []v1.Platform
	for _, spec := range strings.Split(s, ",") {
		p, err := v1.ParsePlatform(strings.TrimSpace(spec))
		if err != nil {
			return nil, fmt.Errorf("platform %q: %w", spec, err)
		}
		if p.OS != "linux" {
			return nil, fmt.Errorf("platform %q: the image is for Linux nodes only", spec)
		}
		out = append(out, *p)
	}
	return out, nil
}

// baseLayer is the tar of the base's only layer.
func baseLayer() (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0).UTC()
	for _, f := range []struct {
		hdr  tar.Header
		body string
	}{
		{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "etc/", Mode: 0o755}},
		{hdr: tar.Header{Typeflag: tar.TypeReg, Name: "etc/group", Mode: 0o644}, body: group},
		{hdr: tar.Header{Typeflag: tar.TypeReg, Name: "etc/passwd", Mode: 0o644}, body: passwd},
		{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "home/", Mode: 0o755}},
		{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "home/nonroot/", Mode: 0o700, Uid: NonrootUID, Gid: NonrootUID}},
		{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777}},
	} {
		hdr := f.hdr
		hdr.ModTime, hdr.Size = epoch, int64(len(f.body))
		if err := tw.WriteHeader(&hdr); err != nil {
			return nil, err
		}
		if _, err := io.WriteString(tw, f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
}

// baseRef parses BaseName.
func baseRef() (name.Reference, error) { return name.ParseReference(BaseName) }
