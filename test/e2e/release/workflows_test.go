package release_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	yaml "sigs.k8s.io/yaml/goyaml.v3"

	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// workflow is the part of GitHub's workflow syntax the project uses; a key outside it fails decoding.
type workflow struct {
	Name        string            `yaml:"name"`
	On          map[string]any    `yaml:"on"`
	Permissions map[string]string `yaml:"permissions"`
	Concurrency map[string]any    `yaml:"concurrency"`
	Env         map[string]string `yaml:"env"`
	Jobs        map[string]job    `yaml:"jobs"`
}

type job struct {
	RunsOn         string            `yaml:"runs-on"`
	TimeoutMinutes int               `yaml:"timeout-minutes"`
	Env            map[string]string `yaml:"env"`
	Steps          []step            `yaml:"steps"`
}

type step struct {
	Name             string            `yaml:"name"`
	ID               string            `yaml:"id"`
	Uses             string            `yaml:"uses"`
	Run              string            `yaml:"run"`
	With             map[string]any    `yaml:"with"`
	Env              map[string]string `yaml:"env"`
	WorkingDirectory string            `yaml:"working-directory"`
}

func decodeStrict(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	NewWithT(t).Expect(dec.Decode(into)).To(Succeed(), path)
}

func root(t *testing.T) string {
	t.Helper()
	r, err := harness.RepoRoot()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return r
}

// readWorkflow decodes a workflow and checks what every job needs: a runner, a timeout, and steps that
// each either use a version-pinned action or run a script.
func readWorkflow(t *testing.T, name string) workflow {
	t.Helper()
	g := NewWithT(t)
	var w workflow
	decodeStrict(t, filepath.Join(root(t), ".github", "workflows", name), &w)
	g.Expect(w.Name).NotTo(BeEmpty())
	g.Expect(w.On).NotTo(BeEmpty())
	g.Expect(w.Jobs).NotTo(BeEmpty())
	pinned := regexp.MustCompile(`^[\w.-]+/[\w.-]+@v\d+(\.\d+)*$`)
	for id, j := range w.Jobs {
		g.Expect(j.RunsOn).NotTo(BeEmpty(), "job %s", id)
		g.Expect(j.TimeoutMinutes).To(BeNumerically(">", 0), "job %s", id)
		g.Expect(j.Steps).NotTo(BeEmpty(), "job %s", id)
		for i, s := range j.Steps {
			g.Expect((s.Uses == "") != (s.Run == "")).To(BeTrue(), "job %s step %d: uses or run, not both", id, i)
			if s.Uses != "" {
				g.Expect(s.Uses).To(MatchRegexp(pinned.String()), "job %s step %d: actions are pinned to a version", id, i)
			}
		}
	}
	return w
}

// script is every run step of the workflow, in order.
func script(w workflow) string {
	var b strings.Builder
	for _, j := range w.Jobs {
		for _, s := range j.Steps {
			b.WriteString(s.Run + "\n")
		}
	}
	return b.String()
}

func TestCIRunsTheChecksOfAPullRequest(t *testing.T) {
	g := NewWithT(t)
	w := readWorkflow(t, "ci.yaml")
	g.Expect(w.On).To(HaveKey("pull_request"))
	for _, cmd := range []string{"make test", "make lint", "make verify", "make image"} {
		g.Expect(script(w)).To(ContainSubstring(cmd))
	}
	g.Expect(w.Permissions).To(Equal(map[string]string{"contents": "read"}))
}

func TestReleaseOnATagPublishesSignedImagesChartAndInstall(t *testing.T) {
	g := NewWithT(t)
	w := readWorkflow(t, "release.yaml")
	g.Expect(w.On).To(HaveKeyWithValue("push", map[string]any{"tags": []any{"v*"}}))
	g.Expect(w.Permissions).To(HaveKeyWithValue("id-token", "write"), "keyless signing")
	g.Expect(w.Permissions).To(HaveKeyWithValue("packages", "write"))
	run := script(w)
	for what, want := range map[string]string{
		"the image CI builds, pushed": "make image PUSH=1",
		"its digest as built":         "digest=$(cat bin/image/digest)",
		"the image signed":            `cosign sign --yes "${IMAGE_REF}"`,
		"the chart pushed":            "helm push",
		"the chart signed":            `cosign sign --yes "${CHART_REPO#oci://}/liqo-janitor@`,
		"install.yaml pinned":         `--set image.digest="${IMAGE_DIGEST}"`,
		"checksums":                   "sha256sum install.yaml",
		"the release with its assets": "gh release create",
	} {
		g.Expect(run).To(ContainSubstring(want), what)
	}
	g.Expect(run).To(MatchRegexp(`gh release create [^\n]*dist/install\.yaml[^\n]*dist/checksums\.txt`))
}

// TestTheReleasePushesTheImageCIBuilds: one builder. CI runs `make image`, the release `make image PUSH=1`
// (manifests/image, whose tests build it twice to the same digest and push it to a registry), for both
// architectures; nothing else builds an image, and no second builder's configuration is left to drift.
func TestTheReleasePushesTheImageCIBuilds(t *testing.T) {
	g := NewWithT(t)
	ci, release := script(readWorkflow(t, "ci.yaml")), script(readWorkflow(t, "release.yaml"))
	g.Expect(ci).To(MatchRegexp(`(?m)^make image$`))
	g.Expect(release).To(MatchRegexp(`(?m)^\s*make image PUSH=1 `))
	for _, other := range []string{"ko build", "ko publish", "docker build", "buildx", "crane "} {
		g.Expect(ci + release).NotTo(ContainSubstring(other))
	}
	for _, w := range []string{"ci.yaml", "release.yaml"} {
		for _, j := range readWorkflow(t, w).Jobs {
			for _, s := range j.Steps {
				g.Expect(s.Uses).NotTo(HavePrefix("ko-build/"), "%s: ko's action would build with another base", w)
			}
		}
	}
	g.Expect(filepath.Join(root(t), ".ko.yaml")).NotTo(BeAnExistingFile(), "`ko build` would make another image")
	makefile, err := os.ReadFile(filepath.Join(root(t), "Makefile"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(makefile)).To(ContainSubstring("PLATFORMS ?= linux/amd64,linux/arm64"))
	g.Expect(string(makefile)).To(ContainSubstring("go run ./image --root $(CURDIR) --out $(BIN)/image --platform $(PLATFORMS)"))
}
