package main

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// version and revision are the release and the commit the binary was built from: `make build` and the
// image builder (manifests/image) set them with -X main.version=… -X main.revision=…. Left empty, they
// come from what the Go toolchain recorded (the module's version, the VCS revision of a go build in a
// checkout).
var version, revision string

// buildInfo is liqo_janitor_build_info: always 1, its labels say what runs (the kubectl plugin's version
// command and dashboards read it; one series per process, so the labels stay bounded).
var buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "liqo_janitor_build_info",
	Help: "Always 1; the labels name the liqo-janitor version, the git revision and the Go version it was built with.",
}, []string{"version", "revision", "go_version"})

func init() {
	ctrlmetrics.Registry.MustRegister(buildInfo)
	v, r, goVersion := buildVersions(version, revision)
	buildInfo.WithLabelValues(v, r, goVersion).Set(1)
}

// buildVersions returns the version, revision and Go version to report: the stamped ones, else the
// toolchain's records, else "unknown".
func buildVersions(stampedVersion, stampedRevision string) (v, r, goVersion string) {
	v, r, goVersion = stampedVersion, stampedRevision, runtime.Version()
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && r == "" {
				r = s.Value
			}
		}
	}
	if v == "" {
		v = "unknown"
	}
	if r == "" {
		r = "unknown"
	}
	return v, r, goVersion
}
