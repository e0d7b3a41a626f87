// Command image builds liqo-janitor's container image, and on a release publishes it: `make image` in CI
// and `make image PUSH=1` in the release workflow run this same code, so the image CI builds and tests is
// byte for byte the one a release pushes. ko's build library (github.com/google/ko/pkg/build) compiles the
// static binary for every platform (linux/amd64 and linux/arm64 by default) in the product's module at the
// repository root and puts it on Base, an index built here from code rather than pulled: no daemon and no
// registry are needed to build, and the same commit and platform give the same digest on any machine with
// the same Go toolchain. The index is written as an OCI image layout, the host's image as a tarball that
// `docker load` and `podman load` read, its digest to a file; --push publishes the index, with ko's SPDX
// SBOMs, through ko's publisher.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/ko/pkg/build"
	"github.com/google/ko/pkg/publish"
)

// MainPackage is the command the image runs, relative to the repository root.
const MainPackage = "./cmd/liqo-janitor"

// Entrypoint is where ko puts the binary: /ko-app/<the command's name>.
const Entrypoint = "/ko-app/liqo-janitor"

// koVersion names ko in the SBOMs it writes (the version go.mod pins).
const koVersion = "v0.19.1"

// options are the command's flags.
type options struct {
	root, out, tag, tarballArch, version, revision, source string
	platforms                                              []v1.Platform
	created                                                time.Time
	push                                                   bool
}

func main() {
	var o options
	var created int64
	var platforms string
	flag.StringVar(&o.root, "root", "..", "the repository root: the product's module, where the binary is built")
	flag.StringVar(&o.out, "out", "../bin/image", "directory for the OCI layout (oci/), the tarball (liqo-janitor.tar) and the index digest (digest)")
	flag.StringVar(&o.tag, "tag", "ghcr.io/liqo-janitor/liqo-janitor:dev", "the image reference: the tarball's tag, the layout's ref.name, where --push publishes")
	flag.StringVar(&platforms, "platform", "linux/amd64,linux/arm64", "the platforms of the index")
	flag.StringVar(&o.tarballArch, "tarball-arch", runtime.GOARCH, "the architecture of the image written as a docker-loadable tarball")
	flag.StringVar(&o.version, "version", "dev", "org.opencontainers.image.version")
	flag.StringVar(&o.revision, "revision", "", "org.opencontainers.image.revision (the git commit)")
	flag.StringVar(&o.source, "source", "https://github.com/liqo-janitor/liqo-janitor", "org.opencontainers.image.source")
	flag.Int64Var(&created, "created", 0, "creation time, seconds since the epoch (the commit's time; 0: the epoch)")
	flag.BoolVar(&o.push, "push", false, "also publish the index (and its SBOMs) to --tag, with docker's credentials (the release)")
	flag.Parse()
	o.created = time.Unix(created, 0).UTC()
	var err error
	if o.platforms, err = ParsePlatforms(platforms); err != nil {
		fmt.Fprintf(os.Stderr, "image: --platform: %v\n", err)
		os.Exit(2)
	}
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	tag, err := name.NewTag(o.tag)
	if err != nil {
		return fmt.Errorf("--tag: %w", err)
	}
	idx, err := Build(ctx, o)
	if err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	if err := write(o.out, tag, idx, o.tarballArch); err != nil {
		return err
	}
	fmt.Printf("image %s@%s (%d platforms) written to %s\n", tag, digest, len(o.platforms), o.out)
	if !o.push {
		return nil
	}
	pushed, err := Push(ctx, tag, idx)
	if err != nil {
		return err
	}
	fmt.Printf("image pushed: %s\n", pushed)
	return nil
}

// Build compiles the binary for every platform with ko's builder and puts it on Base: the one code path of
// `make image` and of the release.
func Build(ctx context.Context, o options) (v1.ImageIndex, error) {
	root, err := filepath.Abs(o.root)
	if err != nil {
		return nil, err
	}
	base, err := Base(o.platforms)
	if err != nil {
		return nil, fmt.Errorf("the base: %w", err)
	}
	ref, err := baseRef()
	if err != nil {
		return nil, err
	}
	var platforms []string
	for _, p := range o.platforms {
		platforms = append(platforms, p.String())
	}
	created := v1.Time{Time: o.created}
	opts := []build.Option{
		build.WithBaseImages(func(context.Context, string) (name.Reference, build.Result, error) { return ref, base, nil }),
		build.WithPlatforms(platforms...),
		build.WithCreationTime(created),
		build.WithKoDataCreationTime(created),
		build.WithTrimpath(true),
		// -buildvcs=false: the binary must not depend on the checkout's state (a dirty tree, a tarball without
		// .git) or on GOFLAGS; the commit is in the revision label. CGO off: a static binary for a base
		// without a libc.
		build.WithDefaultFlags([]string{"-buildvcs=false"}),
		// The version and the commit the binary reports (liqo_janitor_build_info): -buildvcs=false leaves
		// the toolchain nothing to record.
		build.WithDefaultLdflags([]string{"-s", "-w", "-X", "main.version=" + o.version, "-X", "main.revision=" + o.revision}),
		build.WithDefaultEnv([]string{"CGO_ENABLED=0"}),
		build.WithSPDX(koVersion),
	}
	for k, v := range map[string]string{
		"org.opencontainers.image.title":       "liqo-janitor",
		"org.opencontainers.image.description": "The gate and the finalizer janitor for Liqo consumers whose provider is gone for good",
		"org.opencontainers.image.source":      o.source,
		"org.opencontainers.image.url":         o.source,
		"org.opencontainers.image.version":     o.version,
		"org.opencontainers.image.revision":    o.revision,
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.created":     o.created.Format(time.RFC3339),
	} {
		opts = append(opts, build.WithLabel(k, v))
	}
	b, err := build.NewGo(ctx, root, opts...)
	if err != nil {
		return nil, err
	}
	importPath, err := b.QualifyImport(MainPackage)
	if err != nil {
		return nil, err
	}
	result, err := b.Build(ctx, importPath)
	if err != nil {
		return nil, err
	}
	idx, ok := result.(v1.ImageIndex)
	if !ok {
		return nil, errors.New("ko built an image, not an index: the base must be an index")
	}
	return idx, nil
}

// Push publishes the index under the tag with ko's publisher (its SBOMs beside it, as `ko build --bare`
// does) and returns the pushed reference by digest.
func Push(ctx context.Context, tag name.Tag, idx v1.ImageIndex) (name.Reference, error) {
	repo := tag.Context().Name()
	p, err := publish.NewDefault(repo, publish.WithTags([]string{tag.TagStr()}),
		publish.WithNamer(func(base, _ string) string { return base })) // the repository itself, as --bare
	if err != nil {
		return nil, err
	}
	ref, err := p.Publish(ctx, idx, "ko://"+MainPackage)
	if err != nil {
		return nil, fmt.Errorf("pushing %s: %w", tag, err)
	}
	return ref, p.Close()
}

// write puts the index in out/oci (replacing what was there), the image of arch in out/liqo-janitor.tar and
// the index's digest in out/digest.
func write(out string, tag name.Tag, idx v1.ImageIndex, arch string) error {
	if err := os.RemoveAll(filepath.Join(out, "oci")); err != nil {
		return err
	}
	p, err := layout.Write(filepath.Join(out, "oci"), empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag.String()})); err != nil {
		return err
	}
	img, err := ImageFor(idx, arch)
	if err != nil {
		return err
	}
	if err := tarball.WriteToFile(filepath.Join(out, "liqo-janitor.tar"), tag, img); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "digest"), []byte(digest.String()+"\n"), 0o644)
}

// ImageFor returns the index's linux image for arch.
func ImageFor(idx v1.ImageIndex, arch string) (v1.Image, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == arch {
			return idx.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("the index has no linux/%s image (see --platform)", arch)
}
