package main

import (
	"sort"
	"strconv"
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

// TestRulesCatchesBareAndUnknownCitations: a package cites its own rules bare, anywhere else a citation
// says whose rule it is (its owner may end the comment's line before), and names a rule the owner's doc.go
// numbers; the provider fence's rules are not the janitor's.
func TestRulesCatchesBareAndUnknownCitations(t *testing.T) {
	g := NewWithT(t)
	doc := func(pkg string, n int) *fstest.MapFile {
		s := "// Package " + pkg + ".\n//\n"
		for i := 1; i <= n; i++ {
			s += "//  " + strconv.Itoa(i) + ". A rule.\n"
		}
		return &fstest.MapFile{Data: []byte(s + "package " + pkg + "\n")}
	}
	fsys := fstest.MapFS{
		"webhook/doc.go":               doc("webhook", 32),
		"janitor/doc.go":               doc("janitor", 23),
		"janitor/providerfence/doc.go": doc("providerfence", 7),
		"janitor/fencerenew/doc.go":    doc("fencerenew", 6),
		// must pass: bare in its own package, qualified elsewhere, a plural, an owner on the line before,
		// the text a test asserts on
		"webhook/gate.go":              {Data: []byte("package webhook\n\n// rule 5's verb (rules 16 and 17; janitor rule 14).\n")},
		"janitor/verdict.go":           {Data: []byte("package janitor\n\n// rule 22, as gate rule 31 holds a mark.\n")},
		"janitor/providerfence/lat.go": {Data: []byte("package providerfence\n\n// Latched (rule 6).\n")},
		"cmd/ok.go": {Data: []byte("package main\n\n// the gate (gate rules 16–21) and the janitor\n// (gate rule 21, janitor\n" +
			"// rule 18), the fence (fence rule 1) and its renewer (renew rule 5).\n" +
			"var s = \"Nothing was written; the gate refuses such a mark too (rule 20)\"\n")},
		// must fail: bare outside its package, an owner without that rule, the fence's rule 9 in its own package
		"cmd/bare.go":                  {Data: []byte("package main\n\n// the gate keeps it (rule 16)\n// and rules 14, 16.\n")},
		"root.go":                      {Data: []byte("package root\n\n// (gate rule 99, janitor\n// rule 24, fence rule 7)\n")},
		"janitor/providerfence/bad.go": {Data: []byte("package providerfence\n\n// rule 9 and rule 5\n")},
	}
	var names []string
	for f := range fsys {
		names = append(names, f)
	}
	sort.Strings(names)
	problems, err := rules(fsys, names)
	g.Expect(err).NotTo(HaveOccurred())
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	g.Expect(got).To(Equal([]string{
		`cmd/bare.go:3: "rule 16" cites a rule without saying whose: gate, janitor, fence or renew rule N`,
		`cmd/bare.go:4: "rules 14, 16" cites a rule without saying whose: gate, janitor, fence or renew rule N`,
		`janitor/providerfence/bad.go:3: "rule 9" cites fence rule 9, which janitor/providerfence/doc.go does not define`,
		`root.go:3: "gate rule 99" cites gate rule 99, which webhook/doc.go does not define`,
		`root.go:3: "janitor rule 24" cites janitor rule 24, which janitor/doc.go does not define`,
	}))
}
