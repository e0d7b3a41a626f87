// Package manifests renders liqo-janitor's Helm chart (manifests/chart/liqo-janitor), the single source of
// the install, with Helm's own engine: `make manifests` writes the rendered install and the kustomize
// bases from it, and the tests render it with any values.
package manifests

import (
	"cmp"
	"context"
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
)

// ChartDir is the chart's directory, relative to the repository root.
const ChartDir = "manifests/chart/liqo-janitor"

// MinKubeVersion is the oldest Kubernetes the chart supports (Chart.yaml kubeVersion).
const MinKubeVersion = "v1.30.0"

// The release the rendered install (install.yaml) stands for. The name is the product's (liqojanitor.Name),
// spelt here because this tools module does not import the product; test/e2e/manifests checks they agree.
const (
	ReleaseName      = "liqo-janitor"
	ReleaseNamespace = ReleaseName + "-system"
)

//go:embed all:chart/liqo-janitor
var chartFiles embed.FS

// Chart loads the chart as it is built into this package.
func Chart() (*chart.Chart, error) {
	var files []*archive.BufferedFile
	root := "chart/liqo-janitor"
	err := fs.WalkDir(chartFiles, root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := chartFiles.ReadFile(path)
		if err != nil {
			return err
		}
		files = append(files, &archive.BufferedFile{Name: strings.TrimPrefix(path, root+"/"), Data: data})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return loader.LoadFiles(files)
}

// Rendered is a rendering of the chart: its objects by template and the release notes.
type Rendered struct {
	// Manifest is every object, as `helm template` prints it (with "# Source:" comments).
	Manifest string
	// Notes is NOTES.txt rendered.
	Notes string
	// byTemplate holds the documents by template path (templates/rbac.yaml, …).
	byTemplate map[string][]string
}

// Template returns the documents the template at path (relative to the chart, e.g. "templates/policy.yaml")
// rendered, as one YAML stream, or "" if it rendered none.
func (r *Rendered) Template(path string) string {
	docs := r.byTemplate[path]
	if len(docs) == 0 {
		return ""
	}
	return "---\n" + strings.Join(docs, "\n---\n") + "\n"
}

var sourceLine = regexp.MustCompile(`(?m)^# Source: [^/]+/(.+)$`)

// Render renders the chart client-side, as `helm template` does, into namespace with the given values
// (merged over values.yaml, and checked against values.schema.json).
func Render(ctx context.Context, namespace string, values map[string]any) (*Rendered, error) {
	ch, err := Chart()
	if err != nil {
		return nil, fmt.Errorf("loading the chart: %w", err)
	}
	return RenderChart(ctx, ch, namespace, values)
}

// RenderChart renders ch as Render renders this chart: the tests render a parent chart that has this one
// as a dependency with it.
func RenderChart(ctx context.Context, ch *chart.Chart, namespace string, values map[string]any) (*Rendered, error) {
	return renderChart(ctx, ch, namespace, values, Cluster{})
}

// Cluster is what a client-side render is told of the cluster, as `helm template --kube-version
// --api-versions` is.
type Cluster struct {
	// KubeVersion is the cluster's Kubernetes version; "" for MinKubeVersion.
	KubeVersion string
	// APIVersions are served, beside Helm's defaults (API groups only): "group/version" or, as Helm lists
	// them when it asks a cluster, "group/version/Kind".
	APIVersions []string
}

// RenderForCluster renders the chart as Render does, for the given cluster.
func RenderForCluster(ctx context.Context, namespace string, values map[string]any, cluster Cluster) (*Rendered, error) {
	ch, err := Chart()
	if err != nil {
		return nil, fmt.Errorf("loading the chart: %w", err)
	}
	return renderChart(ctx, ch, namespace, values, cluster)
}

func renderChart(ctx context.Context, ch *chart.Chart, namespace string, values map[string]any, cluster Cluster) (*Rendered, error) {
	var err error
	install := action.NewInstall(action.NewConfiguration())
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName = ReleaseName
	install.Namespace = namespace
	install.Replace = true
	// Helm takes the Kubernetes version of client-only renders from the binary's client-go module, which
	// a test binary does not record: render for the oldest Kubernetes the chart supports unless told.
	kubeVersion := cmp.Or(cluster.KubeVersion, MinKubeVersion)
	if install.KubeVersion, err = common.ParseKubeVersion(kubeVersion); err != nil {
		return nil, err
	}
	install.APIVersions = cluster.APIVersions
	rel, err := install.RunWithContext(ctx, ch, values)
	if err != nil {
		return nil, fmt.Errorf("rendering the chart: %w", err)
	}
	r, ok := rel.(*release.Release)
	if !ok {
		return nil, fmt.Errorf("rendering the chart: unexpected release type %T", rel)
	}
	out := &Rendered{Manifest: strings.TrimSpace(r.Manifest) + "\n", Notes: r.Info.Notes, byTemplate: map[string][]string{}}
	split := releaseutil.SplitManifests(r.Manifest)
	keys := make([]string, 0, len(split))
	for k := range split {
		keys = append(keys, k)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	for _, k := range keys {
		doc := split[k]
		m := sourceLine.FindStringSubmatch(doc)
		if m == nil {
			continue
		}
		out.byTemplate[m[1]] = append(out.byTemplate[m[1]], strings.TrimSpace(doc))
	}
	return out, nil
}

// InstallFile is the rendered install, relative to the repository root: the chart with InstallValues in
// ReleaseNamespace. It lives in the kustomize base that applies it (kustomize reads no file outside a
// kustomization's directory) and is attached to every release as install.yaml.
const InstallFile = "manifests/default/install.yaml"

// InstallValues are the values the rendered install is made with: the chart's defaults, and the namespace
// created with its Pod Security labels (Helm users pass --create-namespace instead).
func InstallValues() map[string]any {
	return map[string]any{"namespace": map[string]any{"create": true}}
}

// ProviderFenceInstallFile is the rendered install of the provider fence alone, for a provider
// (`kubectl apply -k manifests/provider-fence`): the chart with ProviderFenceInstallValues.
const ProviderFenceInstallFile = "manifests/provider-fence/install.yaml"

// ProviderFenceInstallValues are InstallValues with the consumer's side off and the provider fence on.
func ProviderFenceInstallValues() map[string]any {
	v := InstallValues()
	v["consumer"] = map[string]any{"enabled": false}
	v["providerFence"] = map[string]any{"enabled": true}
	return v
}

// InstallCertManagerFile is the rendered install for clusters that run cert-manager: the chart with
// InstallCertManagerValues, attached to every release as install-cert-manager.yaml.
const InstallCertManagerFile = "manifests/default/install-cert-manager.yaml"

// InstallCertManagerValues are InstallValues with certManager.enabled=true: cert-manager issues the
// serving certificate and its CA injector fills the caBundle (the binary runs --cert-management=cert-manager).
func InstallCertManagerValues() map[string]any {
	v := InstallValues()
	v["certManager"] = map[string]any{"enabled": true}
	return v
}
