package main

import (
	"testing"
	"testing/fstest"

	. "github.com/onsi/gomega"

	"github.com/liqo-janitor/liqo-janitor/test/markdown"
)

// files is a small repository: top-level directories cmd, janitor, manifests, test, docs, and files.
var files = []string{
	"README.md", "Makefile", "go.mod",
	"cmd/liqo-janitor/main.go",
	"janitor/podwatch.go",
	"manifests/chart/liqo-janitor/files/role.yaml",
	"manifests/chart/liqo-janitor/files/webhooks.yaml",
	"test/e2e/bench/REPORT.md",
	"docs/runbooks.md",
}

func TestMissingFindsOurPathsThatDoNotExist(t *testing.T) {
	r := newRepo(files)
	for name, tc := range map[string]struct {
		line    string
		missing []string
	}{
		"an existing file":                      {line: "// see janitor/podwatch.go for why", missing: nil},
		"an existing directory, trailing slash": {line: "into `manifests/chart/liqo-janitor/files/`.", missing: nil},
		"a package pattern":                     {line: "go test ./janitor/... and ./cmd/liqo-janitor", missing: nil},
		"a file at a sentence's end":            {line: "(report: test/e2e/bench/REPORT.md).", missing: nil},
		"a stale directory":                     {line: "// RBAC (generated into manifests/rbac by make)", missing: []string{"manifests/rbac"}},
		"a stale file":                          {line: "// (see test/bench/REPORT.md). So", missing: []string{"test/bench/REPORT.md"}},
		"a stale file in backticks":             {line: "`janitor/gone.go` and `janitor/podwatch.go`", missing: []string{"janitor/gone.go"}},
		"a brace list, each alternative checked": {line: "never edit manifests/chart/liqo-janitor/files/{role,webhooks,alerts}.yaml",
			missing: []string{"manifests/chart/liqo-janitor/files/alerts.yaml"}},
		"the module path, a package that is gone": {line: "import github.com/liqo-janitor/liqo-janitor/janitor/gone",
			missing: []string{"janitor/gone"}},
		"the module path with a version": {line: "go install github.com/liqo-janitor/liqo-janitor/cmd/liqo-janitor@v0.1.0", missing: nil},
		"a first segment that is not ours": {line: "pkg/liqo-controller-manager/x.go, internal/crdReplicator/y",
			missing: nil},
		"the tail of another module's path":    {line: "k8s.io/kubernetes/cmd/kubelet and github.com/liqotech/liqo/cmd/webhook", missing: nil},
		"the tail of a URL":                    {line: "https://example.com/cmd/nothing", missing: nil},
		"Liqo's path, possessive":              {line: "Liqo's `cmd/webhook` and `deployments/liqo/templates/x.yaml`", missing: nil},
		"Kubernetes' path, possessive":         {line: "buildServiceResolver in Kubernetes' cmd/kube-apiserver/app/server.go", missing: nil},
		"two paths after one possessive":       {line: "cert-manager's flag names: cmd/controller/a.go and cmd/cainjector/b.go", missing: nil},
		"another project's path, of after it":  {line: "the binary cmd/uninstaller of Liqo", missing: nil},
		"of after a path in backticks":         {line: "the binary `cmd/uninstaller` of Liqo", missing: nil},
		"in after it, a name ending in s":      {line: "buildServiceResolver, cmd/kube-apiserver/app/server.go in Kubernetes,", missing: nil},
		"of after it, not a project":           {line: "the part cmd/gone of the plugin", missing: []string{"cmd/gone"}},
		"a possessive too far back names ours": {line: "Liqo's chart does this, and so do we, as our own code in cmd/gone says", missing: []string{"cmd/gone"}},
		"a placeholder":                        {line: "docs/<page>.md and test/e2e/*/doc.go", missing: nil},
		"a word without a slash":               {line: "the janitor and the test suite", missing: nil},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(r.missing(tc.line)).To(Equal(tc.missing))
		})
	}
}

func TestAnchorsAreGitHubs(t *testing.T) {
	g := NewWithT(t)
	g.Expect(markdown.Anchors("# liqo-janitor\n## Install on a cluster\n### `--grace-period`\n```sh\n# a comment\n```\n" +
		"## Runbooks\n## Runbooks\n<a id=\"explicit\"></a>\n")).To(Equal(map[string]bool{
		"liqo-janitor": true, "install-on-a-cluster": true, "--grace-period": true, "runbooks": true, "runbooks-1": true,
		"explicit": true,
	}))
}

// TestCheckCatchesAPlantedStalePath: a repository whose Go comment names a file that moved, whose
// Markdown links to a page and a section that do not exist, and whose YAML links on GitHub to a section and
// a directory that do not exist; check names each, with file and line.
func TestCheckCatchesAPlantedStalePath(t *testing.T) {
	g := NewWithT(t)
	fsys := fstest.MapFS{
		"janitor/podwatch.go": {Data: []byte("package janitor\n\n// Measured in test/e2e/bench/REPORT.md,\n// once in test/bench/REPORT.md.\n")},
		"docs/runbooks.md":    {Data: []byte("# Runbooks\n\n## LiqoJanitorDown\n\nSee [install](../README.md#install) and [down](#liqojanitordown).\n")},
		"README.md": {Data: []byte("# liqo-janitor\n\n## Install\n\n[runbooks](docs/runbooks.md#liqojanitordown), " +
			"[gone](docs/gone.md), [no section](docs/runbooks.md#liqojanitorup), [Liqo](https://liqo.io/x/y)\n")},
		"cmd/liqo-janitor/main.go": {Data: []byte("package main\n")},
		"manifests/chart/liqo-janitor/files/role.yaml": {Data: []byte("# YAML: only its links to the repository are checked, not manifests/gone\n" +
			"runbook_url: https://github.com/liqo-janitor/liqo-janitor/blob/main/docs/runbooks.md#liqojanitordown\n" +
			"other: https://github.com/liqo-janitor/liqo-janitor/blob/main/docs/runbooks.md#liqojanitorup\n")},
		"manifests/chart/liqo-janitor/files/webhooks.yaml": {Data: []byte("# https://github.com/liqo-janitor/liqo-janitor/tree/main/manifests/gone\n")},
		"test/e2e/bench/REPORT.md":                         {Data: []byte("# Report\n")},
		"Makefile":                                         {},
		"go.mod":                                           {},
	}
	problems, err := check(fsys, files)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(problems).To(Equal([]Problem{
		{File: "README.md", Line: 5, Path: "docs/gone.md", Link: true},
		{File: "README.md", Line: 5, Path: "docs/runbooks.md#liqojanitorup", Link: true},
		{File: "janitor/podwatch.go", Line: 4, Path: "test/bench/REPORT.md"},
		{File: "manifests/chart/liqo-janitor/files/role.yaml", Line: 3, Path: "docs/runbooks.md#liqojanitorup", Link: true},
		{File: "manifests/chart/liqo-janitor/files/webhooks.yaml", Line: 1, Path: "manifests/gone", Link: true},
	}))
	g.Expect(problems[2].String()).To(Equal("janitor/podwatch.go:4: names test/bench/REPORT.md, which does not exist"))
}
