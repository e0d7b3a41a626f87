package install

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// The labels the chart puts on liqo-janitor's Deployment (manifests/chart: liqo-janitor.labels).
const (
	// NameLabel is app.kubernetes.io/name, AppName its value.
	NameLabel = "app.kubernetes.io/name"
	AppName   = "liqo-janitor"
	// VersionLabel is app.kubernetes.io/version: the version the chart installed.
	VersionLabel = "app.kubernetes.io/version"
)

// serverVersionTimeout bounds the look-up of the server's version: an API server that does not answer
// must not keep version from printing the client's.
const serverVersionTimeout = 10 * time.Second

// Report is `version -o json|yaml`, kind VersionReport.
type Report struct {
	metav1.TypeMeta `json:",inline"`
	// ClientVersion is the plugin's.
	ClientVersion string `json:"clientVersion"`
	// Servers are the liqo-janitor Deployments of the cluster (the chart installs one), found by their
	// app.kubernetes.io/name=liqo-janitor label in every namespace; none with --client.
	Servers []Server `json:"servers,omitempty"`
	// ServerUnknown says why Servers is empty: the cluster could not be asked, or it has no such Deployment.
	ServerUnknown string `json:"serverUnknown,omitempty"`
}

// Server is one liqo-janitor install.
type Server struct {
	// Version is the Deployment's app.kubernetes.io/version label, or else its image's tag.
	Version    string `json:"version"`
	Deployment string `json:"deployment"`
	Image      string `json:"image,omitempty"`
}

// DeepCopyObject makes Report a runtime.Object, for cli-runtime's printers.
func (r *Report) DeepCopyObject() runtime.Object { return output.DeepCopyJSON(r) }

// NewReport is the report of the plugin's version clientVersion, without the cluster's.
func NewReport(clientVersion string) *Report {
	return &Report{TypeMeta: output.TypeMeta("VersionReport"), ClientVersion: clientVersion}
}

// Servers finds liqo-janitor's Deployments on the cluster of f, or says why it cannot.
func Servers(ctx context.Context, f *cli.Factory) ([]Server, string) {
	c, err := f.Client()
	if err != nil {
		return nil, err.Error()
	}
	ctx, cancel := context.WithTimeout(ctx, serverVersionTimeout)
	defer cancel()
	var list appsv1.DeploymentList
	if err := c.List(ctx, &list, client.MatchingLabels{NameLabel: AppName}); err != nil {
		return nil, fmt.Sprintf("listing the Deployments labelled %s=%s in every namespace: %v", NameLabel, AppName, err)
	}
	var servers []Server
	for _, d := range list.Items {
		s := Server{Deployment: d.Namespace + "/" + d.Name, Version: d.Labels[VersionLabel]}
		if cs := d.Spec.Template.Spec.Containers; len(cs) > 0 {
			s.Image = cs[0].Image
			if i := slices.IndexFunc(cs, func(c corev1.Container) bool { return c.Name == AppName }); i >= 0 {
				s.Image = cs[i].Image
			}
		}
		if s.Version == "" {
			s.Version = ImageTag(s.Image)
		}
		servers = append(servers, s)
	}
	if len(servers) == 0 {
		return nil, fmt.Sprintf("no Deployment labelled %s=%s in any namespace: liqo-janitor is not installed on this cluster", NameLabel, AppName)
	}
	return servers, ""
}

// ImageTag is the tag of an image reference ("unknown" for one by digest only or without a tag).
func ImageTag(image string) string {
	name, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		return name[i+1:]
	}
	return "unknown"
}

// Escaped is r with the cluster's text passed through output.Printable.
func (r *Report) Escaped() *Report {
	out := *r
	out.Servers = slices.Clone(r.Servers)
	for i, s := range out.Servers {
		out.Servers[i] = Server{Version: output.Printable(s.Version), Deployment: output.Printable(s.Deployment), Image: output.Printable(s.Image)}
	}
	out.ServerUnknown = output.Printable(r.ServerUnknown)
	return &out
}

// Print prints r for a person: the plugin's version, and unless clientOnly the cluster's.
func Print(out io.Writer, r *Report, clientOnly bool) {
	fmt.Fprintf(out, "kubectl-liqo_janitor %s\n", r.ClientVersion)
	if clientOnly {
		return
	}
	for _, s := range r.Servers {
		fmt.Fprintf(out, "liqo-janitor %s (Deployment %s, image %s)\n", s.Version, s.Deployment, s.Image)
	}
	if r.ServerUnknown != "" {
		fmt.Fprintf(out, "liqo-janitor on the cluster: version unknown: %s\n", r.ServerUnknown)
	}
}
