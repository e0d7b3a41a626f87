package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"

	. "github.com/onsi/gomega"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/yaml"

	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// krewPlugin mirrors krew's index.krew.dev Plugin manifest (sigs.k8s.io/krew pkg/index: Plugin,
// PluginSpec, Platform, FileOperation; apiVersion krew.googlecontainertools.github.com/v1alpha2), as far
// as a plugin's manifest may fill it: decoded strictly, a field krew does not know fails.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string         `json:"version"`
		ShortDescription string         `json:"shortDescription"`
		Description      string         `json:"description"`
		Caveats          string         `json:"caveats"`
		Homepage         string         `json:"homepage"`
		Platforms        []krewPlatform `json:"platforms"`
	} `json:"spec"`
}

type krewPlatform struct {
	URI      string `json:"uri"`
	Sha256   string `json:"sha256"`
	Selector *struct {
		MatchLabels      map[string]string `json:"matchLabels,omitempty"`
		MatchExpressions []struct {
			Key      string   `json:"key"`
			Operator string   `json:"operator"`
			Values   []string `json:"values"`
		} `json:"matchExpressions,omitempty"`
	} `json:"selector"`
	Files []struct {
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"files"`
	License string `json:"license,omitempty"`
	Bin     string `json:"bin"`
}

// The patterns of krew's validation (internal/index/validation).
var (
	krewSafeName = regexp.MustCompile(`^[\w-]+$`)
	krewSHA256   = regexp.MustCompile(`^[a-f0-9]{64}$`)
)

// renderKrewManifest renders .krew.yaml as krew-release-bot does for tag: its TagName, and addURIAndSha,
// which the bot answers with the archive's uri and the sha256 of the archive it downloads from there
// (here the sum of the uri, as the bot writes it: 64 lower-case hex digits, unquoted).
func renderKrewManifest(t *testing.T, tag string) []byte {
	t.Helper()
	g := NewWithT(t)
	root, err := harness.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(filepath.Join(root, ".krew.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Count(string(data), "{{addURIAndSha ")).To(Equal(strings.Count(string(data), "- selector:")),
		"every platform's uri and sha256 are the release bot's")
	tmpl, err := template.New(".krew.yaml").Option("missingkey=error").Funcs(template.FuncMap{
		"addURIAndSha": func(uri, tag string) string {
			uri = strings.ReplaceAll(uri, "{{ .TagName }}", tag)
			return fmt.Sprintf("uri: %s\n    sha256: %x", uri, sha256.Sum256([]byte(uri)))
		},
	}).Parse(string(data))
	g.Expect(err).NotTo(HaveOccurred())
	var rendered bytes.Buffer
	g.Expect(tmpl.Execute(&rendered, map[string]string{"TagName": tag})).To(Succeed())
	return rendered.Bytes()
}

// validateKrewPlugin is krew's ValidatePlugin (internal/index/validation/validate.go) for a manifest of
// the plugin named name, and the rule krew's install applies after copying the files: bin is one of them.
func validateKrewPlugin(name string, p *krewPlugin) error {
	switch {
	case p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2":
		return fmt.Errorf("apiVersion %q is not krew's", p.APIVersion)
	case p.Kind != "Plugin":
		return fmt.Errorf("kind %q is not Plugin", p.Kind)
	case !krewSafeName.MatchString(name) || slices.Contains([]string{"CON", "PRN", "AUX", "NUL"}, strings.ToUpper(name)):
		return fmt.Errorf("the plugin name %q is not allowed", name)
	case p.Metadata.Name != name:
		return fmt.Errorf("plugin should be named %q, not %q", name, p.Metadata.Name)
	case p.Spec.ShortDescription == "" || strings.ContainsAny(p.Spec.ShortDescription, "\r\n"):
		return fmt.Errorf("shortDescription %q: one line, not empty", p.Spec.ShortDescription)
	case len(p.Spec.Platforms) == 0:
		return fmt.Errorf("no platform")
	case !strings.HasPrefix(p.Spec.Version, "v"):
		return fmt.Errorf("version %q does not start with v", p.Spec.Version)
	}
	if _, err := utilversion.ParseSemantic(p.Spec.Version); err != nil {
		return fmt.Errorf("version %q: %w", p.Spec.Version, err)
	}
	for i, pl := range p.Spec.Platforms {
		if err := validateKrewPlatform(pl); err != nil {
			return fmt.Errorf("platform %d: %w", i, err)
		}
	}
	return nil
}

func validateKrewPlatform(p krewPlatform) error {
	switch {
	case p.URI == "":
		return fmt.Errorf("uri has to be set")
	case !krewSHA256.MatchString(p.Sha256):
		return fmt.Errorf("sha256 %q is not a sha256 sum", p.Sha256)
	case p.Bin == "":
		return fmt.Errorf("bin has to be set")
	}
	if err := validateKrewSelector(p); err != nil {
		return err
	}
	return validateKrewFiles(p)
}

func validateKrewSelector(p krewPlatform) error {
	if p.Selector == nil || (len(p.Selector.MatchLabels) == 0 && len(p.Selector.MatchExpressions) == 0) {
		return fmt.Errorf("the selector is empty")
	}
	for k := range p.Selector.MatchLabels {
		if k != "os" && k != "arch" {
			return fmt.Errorf("selector key %q not supported", k)
		}
	}
	for _, e := range p.Selector.MatchExpressions {
		if e.Key != "os" && e.Key != "arch" {
			return fmt.Errorf("selector key %q not supported", e.Key)
		}
	}
	return nil
}

// validateKrewFiles: files unspecified (krew copies the whole archive), or each with from and to, one
// of them installing bin.
func validateKrewFiles(p krewPlatform) error {
	if p.Files == nil {
		return nil
	}
	if len(p.Files) == 0 {
		return fmt.Errorf("files has to be unspecified or non-empty")
	}
	installed := false
	for _, f := range p.Files {
		if f.From == "" || f.To == "" {
			return fmt.Errorf("files: from and to have to be set")
		}
		installed = installed || path.Clean(f.To) == path.Clean(p.Bin) || (f.To == "." && path.Base(f.From) == path.Clean(p.Bin))
	}
	if !installed {
		return fmt.Errorf("bin %s is none of the files installed", p.Bin)
	}
	return nil
}

// TestKrewAcceptsTheManifestTheReleaseRenders: .krew.yaml, rendered as krew-release-bot renders it,
// decodes strictly into krew's Plugin and passes krew's validation; each platform is an archive the
// release workflow builds, holding the files the manifest installs.
func TestKrewAcceptsTheManifestTheReleaseRenders(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	var plugin krewPlugin
	g.Expect(yaml.UnmarshalStrict(renderKrewManifest(t, "v0.1.0"), &plugin)).To(Succeed())
	g.Expect(validateKrewPlugin("liqo-janitor", &plugin)).To(Succeed(), "kubectl liqo-janitor")
	g.Expect(plugin.Spec.Version).To(Equal("v0.1.0"))
	g.Expect(plugin.Spec.Caveats).To(ContainSubstring(completionHelper), "how to turn completion on")

	root, err := harness.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	release, err := os.ReadFile(filepath.Join(root, ".github", "workflows", "release.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	tar := regexp.MustCompile(`tar -czf "dist/kubectl-liqo_janitor_\$\{VERSION\}_\$\{os\}_\$\{arch\}\.tar\.gz" -C "\$dir" (.*)`).
		FindSubmatch(release)
	g.Expect(tar).NotTo(BeNil(), "the release workflow packs the plugin's archives")
	archived := strings.Fields(string(tar[1]))
	var platforms []string
	for _, p := range plugin.Spec.Platforms {
		goos, arch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		platforms = append(platforms, goos+"/"+arch)
		g.Expect(p.URI).To(Equal(fmt.Sprintf("https://github.com/liqo-janitor/liqo-janitor/releases/download/v0.1.0/kubectl-liqo_janitor_v0.1.0_%s_%s.tar.gz", goos, arch)))
		g.Expect(p.Bin).To(Equal("kubectl-liqo_janitor"))
		var from []string
		for _, f := range p.Files {
			from = append(from, f.From)
		}
		g.Expect(from).To(ConsistOf(archived), "the files of the archive, %s/%s", goos, arch)
		g.Expect(string(release)).To(ContainSubstring(goos+"/"+arch), "the release builds the archive %s/%s", goos, arch)
	}
	g.Expect(platforms).To(ConsistOf("linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"))
	g.Expect(archived).To(ContainElements("kubectl-liqo_janitor", completionHelper))
}

// TestKrewValidationRefusesWhatKrewRefuses: the checks above are not vacuous.
func TestKrewValidationRefusesWhatKrewRefuses(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		edit func(*krewPlugin)
		want string
	}{
		"another name":                      {func(p *krewPlugin) { p.Metadata.Name = "janitor" }, "should be named"},
		"a version without v":               {func(p *krewPlugin) { p.Spec.Version = "0.1.0" }, "does not start with v"},
		"a version that is no semver":       {func(p *krewPlugin) { p.Spec.Version = "v0.1" }, "version"},
		"the release bot's sha256 left out": {func(p *krewPlugin) { p.Spec.Platforms[0].Sha256 = "" }, "not a sha256"},
		"a bin not installed":               {func(p *krewPlugin) { p.Spec.Platforms[1].Bin = "kubectl-janitor" }, "none of the files"},
		"a selector key krew does not know": {func(p *krewPlugin) { p.Spec.Platforms[2].Selector.MatchLabels["libc"] = "musl" }, "not supported"},
		"a short description of two lines":  {func(p *krewPlugin) { p.Spec.ShortDescription += "\nmore" }, "one line"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			var p krewPlugin
			g.Expect(yaml.UnmarshalStrict(renderKrewManifest(t, "v0.1.0"), &p)).To(Succeed())
			tc.edit(&p)
			g.Expect(validateKrewPlugin("liqo-janitor", &p)).To(MatchError(ContainSubstring(tc.want)))
		})
	}
	var p krewPlugin
	NewWithT(t).Expect(yaml.UnmarshalStrict([]byte("apiVersion: x\nkind: Plugin\nspec:\n  platforms:\n  - bin: x\n    binary: y\n"), &p)).
		To(MatchError(ContainSubstring(`unknown field "binary"`)), "a field krew does not know")
}
