package harness

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// TestLiqoChartObjects renders the templates of Liqo's chart that the harness writes out (liqo_chart.go),
// from the release the tools module test/liqo builds the webhook of, with the chart's default values, and
// checks that the harness's objects are those, but for the clientConfig: each webhook calls the local
// process at its Service's path.
func TestLiqoChartObjects(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	root, err := RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	dir, _, err := LiqoModule(root)
	g.Expect(err).NotTo(HaveOccurred())
	chart := filepath.Join(dir, "deployments", "liqo")
	const base = "https://127.0.0.1:1234"
	ca := []byte("a CA")
	mutating, validating := LiqoWebhookConfigurations(base, ca)

	wantMutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
	g.Expect(renderLiqoTemplate(t, chart, "webhooks/liqo-mutating-webhook.yaml", wantMutating)).To(Succeed())
	wantMutating.TypeMeta = metav1.TypeMeta{}
	for i := range wantMutating.Webhooks {
		localClientConfig(g, &wantMutating.Webhooks[i].ClientConfig, base, ca)
	}
	g.Expect(mutating).To(BeComparableTo(wantMutating))

	wantValidating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	g.Expect(renderLiqoTemplate(t, chart, "webhooks/liqo-validating-webhook.yaml", wantValidating)).To(Succeed())
	wantValidating.TypeMeta = metav1.TypeMeta{}
	for i := range wantValidating.Webhooks {
		localClientConfig(g, &wantValidating.Webhooks[i].ClientConfig, base, ca)
	}
	g.Expect(validating).To(BeComparableTo(wantValidating))

	wantSecret := &corev1.Secret{}
	g.Expect(renderLiqoTemplate(t, chart, "webhooks/liqo-webhook-secret.yaml", wantSecret)).To(Succeed())
	wantSecret.TypeMeta = metav1.TypeMeta{}
	wantSecret.Namespace = "liqo" // the release's namespace, which the chart leaves to Helm
	g.Expect(LiqoWebhookSecretFor("liqo", nil)).To(BeComparableTo(wantSecret))

	deployment, err := os.ReadFile(filepath.Join(chart, "templates", "liqo-webhook-deployment.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(deployment)).To(And(
		ContainSubstring(`- --secret-name={{ include "liqo.prefixedName" $webhookConfig }}-certs`),
		ContainSubstring(`- --vk-options-default-template={{ .Release.Namespace }}/{{ printf "%s-default" $kubeletConfig.name }}`),
		ContainSubstring(`$kubeletConfig := (merge (dict "name" "virtual-kubelet"`),
		ContainSubstring("{{- if .Values.controllerManager.config.enableResourceEnforcement }}\n          - --enable-resource-enforcement"),
		ContainSubstring("mountPath: /tmp/k8s-webhook-server")), "the arguments and the certificates' directory StartLiqoWebhook gives the webhook")
	values, err := os.ReadFile(filepath.Join(chart, "values.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(values)).To(MatchRegexp(`(?m)^controllerManager:\n(?:  .*\n|\n)*?  config:\n(?:    .*\n)*?    enableResourceEnforcement: true\n`),
		"the chart enforces resources by default: StartLiqoWebhook passes --enable-resource-enforcement")
	g.Expect(liqoVKOptionsTemplate).To(Equal("virtual-kubelet-default"))
}

// localClientConfig turns the chart's clientConfig (its Service, at a path) into the harness's: the URL
// base+path, trusting ca.
func localClientConfig(g Gomega, cc *admissionregistrationv1.WebhookClientConfig, base string, ca []byte) {
	g.Expect(cc.Service).NotTo(BeNil())
	g.Expect(cc.Service.Name).To(Equal(LiqoWebhookName))
	g.Expect(cc.Service.Path).NotTo(BeNil())
	url := base + *cc.Service.Path
	*cc = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}
}

// renderLiqoTemplate renders templates/<name> of Liqo's chart with the chart's default values.yaml and
// release name and namespace liqo, and reads the result into obj, strictly (an unknown field fails). It
// stands in for Helm with the few functions these templates call: include of liqo.prefixedName (as
// _helpers.tpl defines it) and of liqo.labels (the common labels, left out), dict, merge (of a dict with
// the root: the dict, which is all the templates read of it) and nindent.
func renderLiqoTemplate(t *testing.T, chart, name string, obj any) error {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(chart, "templates", name))
	if err != nil {
		return err
	}
	valuesYAML, err := os.ReadFile(filepath.Join(chart, "values.yaml"))
	if err != nil {
		return err
	}
	values := map[string]any{}
	if err := yaml.Unmarshal(valuesYAML, &values); err != nil {
		return err
	}
	funcs := template.FuncMap{
		"dict": func(kv ...any) map[string]any {
			d := map[string]any{}
			for i := 0; i+1 < len(kv); i += 2 {
				d[fmt.Sprint(kv[i])] = kv[i+1]
			}
			return d
		},
		"merge": func(d map[string]any, _ any) map[string]any { return d },
		"include": func(name string, data map[string]any) (string, error) {
			switch name {
			case "liqo.prefixedName":
				return fmt.Sprintf("liqo-%s", data["name"]), nil // liqo.name is the chart's name
			case "liqo.labels":
				return "", nil
			}
			return "", fmt.Errorf("include %q: not in the harness's stand-in for Helm", name)
		},
		"nindent": func(n int, s string) string {
			pad := strings.Repeat(" ", n)
			return "\n" + pad + strings.ReplaceAll(s, "\n", "\n"+pad)
		},
	}
	tmpl, err := template.New(name).Funcs(funcs).Option("missingkey=error").Parse(string(text))
	if err != nil {
		return err
	}
	var out bytes.Buffer
	root := map[string]any{"Values": values, "Release": map[string]any{"Name": "liqo", "Namespace": "liqo"}}
	if err := tmpl.Execute(&out, root); err != nil {
		return err
	}
	return yaml.UnmarshalStrict(out.Bytes(), obj)
}
