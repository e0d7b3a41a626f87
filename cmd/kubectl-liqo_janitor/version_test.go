package main

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/install"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// TestVersionShowsTheJanitorsDeployment: version prints the plugin's version and liqo-janitor's, from
// its Deployment's labels; when it cannot tell, it says why and still prints the plugin's.
func TestVersionShowsTheJanitorsDeployment(t *testing.T) {
	testEnv := harness.Require(t)
	g := NewWithT(t)
	ns := testEnv.Namespace(t)
	labels := map[string]string{install.NameLabel: install.AppName, "app.kubernetes.io/instance": "liqo-janitor"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "liqo-janitor", Namespace: ns, Labels: map[string]string{
			install.NameLabel: install.AppName, "app.kubernetes.io/instance": "liqo-janitor", install.VersionLabel: "v0.9.1"}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: "liqo-janitor", Image: "ghcr.io/liqo-janitor/liqo-janitor:v0.9.1"},
				}},
			},
		},
	}
	g.Expect(testEnv.Client.Create(t.Context(), d)).To(Succeed())
	t.Cleanup(func() { _ = testEnv.Client.Delete(context.Background(), d) })

	out, _, err := kubectl(t, alice, "", "--as-group", "system:masters", "version")
	g.Expect(err).NotTo(HaveOccurred())
	t.Log("version:\n" + out)
	g.Expect(out).To(HavePrefix("kubectl-liqo_janitor dev\n"))
	g.Expect(out).To(ContainSubstring("liqo-janitor v0.9.1 (Deployment " + ns + "/liqo-janitor, image ghcr.io/liqo-janitor/liqo-janitor:v0.9.1)\n"))

	out, _, err = kubectl(t, alice, "", "--as-group", "system:masters", "version", "-o", "yaml")
	g.Expect(err).NotTo(HaveOccurred())
	var report install.Report
	g.Expect(yaml.UnmarshalStrict([]byte(out), &report)).To(Succeed())
	g.Expect(report.TypeMeta).To(Equal(output.TypeMeta("VersionReport")))
	g.Expect(report.ClientVersion).To(Equal("dev"))
	g.Expect(report.Servers).To(ContainElement(install.Server{Version: "v0.9.1", Deployment: ns + "/liqo-janitor",
		Image: "ghcr.io/liqo-janitor/liqo-janitor:v0.9.1"}))

	out, _, err = kubectl(t, bob, "", "version")
	g.Expect(err).NotTo(HaveOccurred(), "the server's version unknown is not a failure of version")
	g.Expect(out).To(HavePrefix("kubectl-liqo_janitor dev\nliqo-janitor on the cluster: version unknown: " +
		"listing the Deployments labelled app.kubernetes.io/name=liqo-janitor in every namespace: "))
	g.Expect(out).To(ContainSubstring("forbidden"))

	out, _, err = kubectl(t, alice, "", "--server", "https://127.0.0.1:1", "version")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HavePrefix("kubectl-liqo_janitor dev\nliqo-janitor on the cluster: version unknown: "))
	g.Expect(out).To(ContainSubstring("connection refused"))
}

func TestImageTag(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ image, want string }{
		"a tag":                          {"ghcr.io/liqo-janitor/liqo-janitor:v0.2.0", "v0.2.0"},
		"a registry with a port":         {"registry.local:5000/liqo-janitor:v0.2.0", "v0.2.0"},
		"a registry with a port, no tag": {"registry.local:5000/liqo-janitor", "unknown"},
		"a tag and a digest":             {"ghcr.io/x/liqo-janitor:v0.2.0@sha256:0123", "v0.2.0"},
		"a digest only":                  {"ghcr.io/x/liqo-janitor@sha256:0123", "unknown"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			NewWithT(t).Expect(install.ImageTag(tc.image)).To(Equal(tc.want))
		})
	}
}
