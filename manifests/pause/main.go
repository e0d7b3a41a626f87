// Command pause is the pod sandbox of the node lane (`make e2e`, test/e2e/node), which pulls no image: run
// without arguments, it blocks until SIGTERM or SIGINT, as the registry.k8s.io/pause image's program does
// for the process that holds a pod's namespaces; run with --image FILE, it writes a docker-loadable
// tarball of an image whose only file is its own (static) executable, for `ctr images import` and
// containerd's sandbox_image.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Path is where the executable lives in the image, its entrypoint.
const Path = "/pause"

func main() {
	var out, tag string
	flag.StringVar(&out, "image", "", "write the image to this tarball instead of pausing")
	flag.StringVar(&tag, "tag", "liqo-janitor.invalid/pause:node-lane", "the image's reference in the tarball")
	flag.Parse()
	if out == "" {
		pause()
		return
	}
	if err := write(out, tag); err != nil {
		fmt.Fprintln(os.Stderr, "pause:", err)
		os.Exit(1)
	}
}

// pause returns on SIGTERM or SIGINT. As PID 1 of its namespace the process gets no default signal
// handling from the kernel, hence the explicit handler.
func pause() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}

// write builds the image: one layer holding this executable at Path, the entrypoint, run as nobody.
func write(out, tag string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	data, err := os.ReadFile(self)
	if err != nil {
		return fmt.Errorf("reading its own executable: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{Name: Path[1:], Mode: 0o755, Size: int64(len(data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := tw.Write(data); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	img, err = mutate.Config(img, v1.Config{Entrypoint: []string{Path}, User: "65534:65534"})
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(out, ref, img)
}
