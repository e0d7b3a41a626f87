package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// The labels the chart puts on liqo-janitor's Deployment (manifests/chart: liqo-janitor.labels).
const (
	nameLabel    = "app.kubernetes.io/name"
	versionLabel = "app.kubernetes.io/version"
	appName      = "liqo-janitor"
)

// serverVersionTimeout bounds the look-up of the server's version: an API server that does not answer
// must not keep version from printing the client's.
const serverVersionTimeout = 10 * time.Second

// versionReport is `version -o json|yaml`, kind VersionReport.
type versionReport struct {
	metav1.TypeMeta `json:",inline"`
	// ClientVersion is the plugin's.
	ClientVersion string `json:"clientVersion"`
	// Servers are the liqo-janitor Deployments of the cluster (the chart installs one), found by their
	// app.kubernetes.io/name=liqo-janitor label in every namespace; none with --client.
	Servers []serverVersion `json:"servers,omitempty"`
	// ServerUnknown says why Servers is empty: the cluster could not be asked, or it has no such Deployment.
	ServerUnknown string `json:"serverUnknown,omitempty"`
}

// serverVersion is one liqo-janitor install.
type serverVersion struct {
	// Version is the Deployment's app.kubernetes.io/version label, or else its image's tag.
	Version    string `json:"version"`
	Deployment string `json:"deployment"`
	Image      string `json:"image,omitempty"`
}

// DeepCopyObject makes versionReport a runtime.Object, for cli-runtime's printers.
func (r *versionReport) DeepCopyObject() runtime.Object { return output.DeepCopyJSON(r) }

func (e *env) versionCommand() *cobra.Command {
	var clientOnly bool
	var format *output.Flag
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version and that of liqo-janitor on the cluster",
		Example: `  kubectl liqo-janitor version

  # without asking the cluster
  kubectl liqo-janitor version --client`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r := &versionReport{TypeMeta: output.TypeMeta("VersionReport"), ClientVersion: version}
			if !clientOnly {
				r.Servers, r.ServerUnknown = e.serverVersions(cmd.Context())
			}
			if format.Document() {
				return format.Print(e.Out, r.escaped())
			}
			printVersion(e.Out, r.escaped(), clientOnly)
			return nil
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "print the plugin's version only, without asking the cluster")
	format = output.AddFlag(cmd)
	return cmd
}

// serverVersions finds liqo-janitor's Deployments, or says why it cannot.
func (e *env) serverVersions(ctx context.Context) ([]serverVersion, string) {
	c, err := e.Client()
	if err != nil {
		return nil, err.Error()
	}
	ctx, cancel := context.WithTimeout(ctx, serverVersionTimeout)
	defer cancel()
	var list appsv1.DeploymentList
	if err := c.List(ctx, &list, client.MatchingLabels{nameLabel: appName}); err != nil {
		return nil, fmt.Sprintf("listing the Deployments labelled %s=%s in every namespace: %v", nameLabel, appName, err)
	}
	var servers []serverVersion
	for _, d := range list.Items {
		s := serverVersion{Deployment: d.Namespace + "/" + d.Name, Version: d.Labels[versionLabel]}
		if cs := d.Spec.Template.Spec.Containers; len(cs) > 0 {
			s.Image = cs[0].Image
			if i := slices.IndexFunc(cs, func(c corev1.Container) bool { return c.Name == appName }); i >= 0 {
				s.Image = cs[i].Image
			}
		}
		if s.Version == "" {
			s.Version = imageTag(s.Image)
		}
		servers = append(servers, s)
	}
	if len(servers) == 0 {
		return nil, fmt.Sprintf("no Deployment labelled %s=%s in any namespace: liqo-janitor is not installed on this cluster", nameLabel, appName)
	}
	return servers, ""
}

// imageTag is the tag of an image reference ("unknown" for one by digest only or without a tag).
func imageTag(image string) string {
	name, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		return name[i+1:]
	}
	return "unknown"
}

// escaped is r with the cluster's text passed through output.Printable.
func (r *versionReport) escaped() *versionReport {
	out := *r
	out.Servers = slices.Clone(r.Servers)
	for i, s := range out.Servers {
		out.Servers[i] = serverVersion{Version: output.Printable(s.Version), Deployment: output.Printable(s.Deployment), Image: output.Printable(s.Image)}
	}
	out.ServerUnknown = output.Printable(r.ServerUnknown)
	return &out
}

func printVersion(out io.Writer, r *versionReport, clientOnly bool) {
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
