// Command pathcheck fails when a tracked Go or Markdown file names a path of this repository that does not
// exist, or a Markdown file links to one (`make verify` runs it from the repository root). Paths rot
// silently when files move: nothing compiles comments and prose.
//
// What counts as a path of ours: a word of the form a/b[/c…] (a slash inside it) whose first segment is
// one of the repository's top-level directories (cmd, janitor, manifests, test, webhook, docs, …, as
// `git ls-files` lists them), or that starts with the module path github.com/liqo-janitor/liqo-janitor/;
// a leading "./", a trailing "/" or "/...", and a module version (@v1.2.3) are dropped, and a brace list
// (files/{role,webhooks}.yaml) stands for each of its paths. A relative link of a Markdown file,
// [text](target#anchor), is resolved against that file's directory and checked likewise whatever its
// first segment, and its anchor against the target's headings as GitHub names them. So is a link to this
// repository on GitHub (https://github.com/liqo-janitor/liqo-janitor/blob/main/<path>#<anchor>) in
// any tracked Go, Markdown, YAML, JSON or text file: the alerts' runbook_url, the chart's NOTES.txt.
//
// What is skipped, so that other projects' paths cited in comments are not taken for ours:
//   - a word that continues another path or a URL (preceded by "/", "." or a word character, or by
//     "://"), e.g. k8s.io/kubernetes/cmd/kubelet or github.com/liqotech/liqo/cmd/webhook;
//   - a word preceded on its line by another project's name and a possessive or "of" within the few
//     words before it ("Liqo's cmd/webhook", "cert-manager's cmd/controller", "Kubernetes'
//     cmd/kube-apiserver/…", "cmd/webhook of Liqo" after it), see qualified;
//   - a word with a placeholder or a glob in it (<id>, *), which names no one file;
//   - this command's own files, whose examples are stale on purpose.
//
// The same word may exist in another project too; when a path of ours is meant, the check holds it to
// exist here, and when another project's is meant, its line names that project.
//
// It also fails on a rule citation in a tracked Go file that does not say whose rule it is outside the
// package that numbers it, or that cites a rule its package does not define (rules.go).
package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strings"

	"github.com/liqo-janitor/liqo-janitor/test/markdown"
)

// self is this command's directory, whose doc and tests name paths that do not exist on purpose.
const self = "test/pathcheck/"

// modulePath is the root module; a path spelled with it is a path of this repository.
const modulePath = "github.com/liqo-janitor/liqo-janitor/"

func main() {
	files, err := trackedFiles()
	if err != nil {
		fmt.Fprintf(os.Stderr, "pathcheck: %v\n", err)
		os.Exit(2)
	}
	problems, err := check(os.DirFS("."), files)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pathcheck: %v\n", err)
		os.Exit(2)
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "pathcheck: %d path(s) that do not exist in the repository: fix or qualify them "+
			"(another project's path: name the project on its line, see go doc ./test/pathcheck)\n", len(problems))
	}
	cited, err := rules(os.DirFS("."), files)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pathcheck: %v\n", err)
		os.Exit(2)
	}
	for _, p := range cited {
		fmt.Fprintln(os.Stderr, p)
	}
	if len(cited) > 0 {
		fmt.Fprintf(os.Stderr, "pathcheck: %d rule citation(s) bare outside their package or of no such rule "+
			"(see test/pathcheck/rules.go)\n", len(cited))
	}
	if len(problems) > 0 || len(cited) > 0 {
		os.Exit(1)
	}
}

// trackedFiles lists the repository's files as git does.
func trackedFiles() ([]string, error) {
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	var files []string
	for f := range bytes.SplitSeq(bytes.TrimRight(out, "\x00"), []byte{0}) {
		files = append(files, string(f))
	}
	return files, nil
}

// repo is what the check knows of the repository: its files and directories, and its top-level directories.
type repo struct {
	paths map[string]bool // every tracked file and every directory above one
	tops  map[string]bool // the top-level directories
}

func newRepo(files []string) repo {
	r := repo{paths: map[string]bool{}, tops: map[string]bool{}}
	for _, f := range files {
		r.paths[f] = true
		for d := path.Dir(f); d != "."; d = path.Dir(d) {
			r.paths[d] = true
			if path.Dir(d) == "." {
				r.tops[d] = true
			}
		}
	}
	return r
}

// Problem is a path that does not exist, where it was found.
type Problem struct {
	File string
	Line int
	Path string
	Link bool // a link (Markdown, or a URL of this repository on GitHub), not a path named in prose
}

func (p Problem) String() string {
	what := "names"
	if p.Link {
		what = "links to"
	}
	return fmt.Sprintf("%s:%d: %s %s, which does not exist", p.File, p.Line, what, p.Path)
}

// check reads the tracked files among files from fsys (the repository root) and returns every path of
// ours that the Go and Markdown files name, or link to, and every link to this repository on GitHub in
// those and the other text files, that does not exist, in file and line order.
func check(fsys fs.FS, files []string) ([]Problem, error) {
	c := checker{repo: newRepo(files), fsys: fsys, anchors: map[string]map[string]bool{}}
	var problems []Problem
	for _, f := range files {
		if strings.HasPrefix(f, self) || !strings.HasSuffix(f, ".go") && !strings.HasSuffix(f, ".md") && !hasTextSuffix(f) {
			continue
		}
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		for n, line := range strings.Split(string(data), "\n") {
			found, err := c.line(f, line)
			if err != nil {
				return nil, err
			}
			for _, p := range found {
				p.File, p.Line = f, n+1
				problems = append(problems, p)
			}
		}
	}
	return problems, nil
}

// checker checks the lines of the repository's files.
type checker struct {
	repo
	fsys    fs.FS
	anchors map[string]map[string]bool // a Markdown file's anchors, read once
}

// line returns what a line of file names or links to that does not exist (File and Line left empty).
func (c checker) line(file, line string) ([]Problem, error) {
	var out []Problem
	urls, err := c.brokenURLs(line, c.anchorsOf)
	if err != nil {
		return nil, err
	}
	for _, p := range urls {
		out = append(out, Problem{Path: p, Link: true})
	}
	markdown := strings.HasSuffix(file, ".md")
	if !markdown && !strings.HasSuffix(file, ".go") {
		return out, nil // YAML and text: only their links to the repository
	}
	words := line
	if markdown { // a link's target is checked as a link, below
		words = link.ReplaceAllString(line, "]()")
	}
	for _, p := range c.missing(words) {
		out = append(out, Problem{Path: p})
	}
	if !markdown {
		return out, nil
	}
	links, err := c.brokenLinks(file, line, c.anchorsOf)
	if err != nil {
		return nil, err
	}
	for _, p := range links {
		out = append(out, Problem{Path: p, Link: true})
	}
	return out, nil
}

// anchorsOf returns the anchors of a tracked Markdown file.
func (c checker) anchorsOf(file string) (map[string]bool, error) {
	if a, ok := c.anchors[file]; ok {
		return a, nil
	}
	data, err := fs.ReadFile(c.fsys, file)
	if err != nil {
		return nil, err
	}
	c.anchors[file] = markdown.Anchors(string(data))
	return c.anchors[file], nil
}

// word is a candidate path: path characters with a slash inside. Group 1 is what precedes it (the start
// of the line or one character), group 2 the word.
var word = regexp.MustCompile(`(^|.)((?:\./)?[A-Za-z0-9_.@-]+(?:/(?:[A-Za-z0-9_.@<>*-]|\{[^}\s]*\})+)+/?)`)

// pattern marks a word that names no one file: a placeholder or a glob.
var pattern = regexp.MustCompile(`[<>*]`)

// missing returns the paths of ours that line names and that do not exist.
func (r repo) missing(line string) []string {
	var out []string
	for _, m := range word.FindAllStringSubmatchIndex(line, -1) {
		before, w := line[m[2]:m[3]], line[m[4]:m[5]]
		if continues(before, line[:m[4]]) || pattern.MatchString(brace.ReplaceAllString(w, "")) {
			continue
		}
		p, ours := r.ours(w)
		if !ours || qualified(line[:m[4]], line[m[5]:]) {
			continue
		}
		for _, q := range expand(p) {
			if !r.paths[q] {
				out = append(out, q)
			}
		}
	}
	return out
}

// brace is a brace list in a path: files/{role,webhooks}.yaml.
var brace = regexp.MustCompile(`\{([^{}]*)\}`)

// expand returns the paths a word with brace lists stands for (itself if it has none).
func expand(p string) []string {
	m := brace.FindStringIndex(p)
	if m == nil {
		return []string{p}
	}
	var out []string
	for alt := range strings.SplitSeq(p[m[0]+1:m[1]-1], ",") {
		out = append(out, expand(p[:m[0]]+alt+p[m[1]:])...)
	}
	return out
}

// continues reports whether a word is the tail of a longer path or of a URL, judged by the character
// before it and the line up to it.
func continues(before, upTo string) bool {
	if before == "" {
		return false
	}
	c := before[0]
	return c == '/' || c == '.' || c == '_' || c == '-' || c == ':' || c == '@' || c == '~' ||
		('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') || strings.HasSuffix(upTo, "://")
}

// ours returns the repository path a word names, and whether it names one: its first segment is a
// top-level directory of ours, or it starts with the module path.
func (r repo) ours(w string) (string, bool) {
	w, _, _ = strings.Cut(w, "@") // a module version: …/cmd/kubectl-liqo_janitor@v0.1.0
	w = strings.TrimPrefix(w, "./")
	w = strings.TrimSuffix(w, "...")
	w = strings.TrimRight(w, "/.")
	if rest, ok := strings.CutPrefix(w, modulePath); ok {
		return rest, rest != ""
	}
	first, _, ok := strings.Cut(w, "/")
	return w, ok && r.tops[first]
}

// others are the projects whose paths this repository's comments and docs cite; their paths share first
// segments with ours (cmd/, test/, docs/, webhook/, manifests/).
var others = map[string]bool{"liqo": true, "kubernetes": true, "k8s": true, "cert-manager": true,
	"controller-runtime": true, "helm": true, "kubebuilder": true, "cluster-api": true, "trust-manager": true,
	"cmctl": true, "liqoctl": true, "kyverno": true, "prometheus": true, "ko": true, "kustomize": true,
	"containerd": true, "kubelet": true, "etcd": true, "gardener": true, "jobset": true, "krew": true}

// qualifierWords is how far before a path a project's possessive qualifies it: far enough for "Liqo's
// a/b and c/d" and "cert-manager's flag names: a/b and c/d", near enough not to reach across a sentence.
const qualifierWords = 6

// qualified reports whether the line says the path around which it is split is another project's: one
// of others in a possessive ("Liqo's", "Kubernetes'") within the qualifierWords words before the path,
// or "of <project>" / "in <project>" right after it.
func qualified(before, after string) bool {
	words := strings.Fields(strings.ToLower(before))
	if len(words) > qualifierWords {
		words = words[len(words)-qualifierWords:]
	}
	for _, w := range words {
		if base, ok := possessive(strings.Trim(w, "(`\"*[,;:")); ok && others[base] {
			return true
		}
	}
	next := strings.Fields(strings.ToLower(strings.TrimLeft(after, "`\"')*")))
	if len(next) < 2 || next[0] != "of" && next[0] != "in" {
		return false
	}
	project := strings.Trim(next[1], "`\",.;:)")
	if base, ok := possessive(project); ok {
		project = base
	}
	return others[project]
}

// possessive returns the word a possessive is made of ("liqo's", "kubernetes'"), and whether it is one.
func possessive(w string) (string, bool) {
	for _, suffix := range []string{"'s", "’s", "'", "’"} {
		if base, ok := strings.CutSuffix(w, suffix); ok {
			return base, true
		}
	}
	return w, false
}

// link is a Markdown inline link; group 1 is its target.
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// textSuffixes are the files besides Go and Markdown whose links to this repository's pages are checked:
// the chart's alerts (runbook_url), its NOTES.txt, workflows.
var textSuffixes = []string{".yaml", ".yml", ".txt", ".tpl", ".json"}

func hasTextSuffix(f string) bool {
	for _, s := range textSuffixes {
		if strings.HasSuffix(f, s) {
			return true
		}
	}
	return false
}

// repoURL is a link to a file of this repository on its main branch, as GitHub shows it; group 1 is the
// path, group 2 the anchor.
var repoURL = regexp.MustCompile(`https://github\.com/liqo-janitor/liqo-janitor/(?:blob|tree)/main/([A-Za-z0-9_./-]+)(?:#([A-Za-z0-9_-]+))?`)

// brokenURLs returns the links of a line to this repository's files (on main) whose file, or whose
// section in a Markdown file, does not exist.
func (r repo) brokenURLs(line string, anchors func(string) (map[string]bool, error)) ([]string, error) {
	var out []string
	for _, m := range repoURL.FindAllStringSubmatch(line, -1) {
		p := strings.TrimRight(m[1], "/.")
		if !r.paths[p] {
			out = append(out, p)
			continue
		}
		if m[2] == "" || !strings.HasSuffix(p, ".md") {
			continue
		}
		a, err := anchors(p)
		if err != nil {
			return nil, err
		}
		if !a[m[2]] {
			out = append(out, p+"#"+m[2])
		}
	}
	return out, nil
}

// brokenLinks returns the relative link targets of a line of the Markdown file that do not exist,
// resolved against its directory: a missing file, or an anchor (#section) that none of a Markdown
// target's headings has. URLs are not checked.
func (r repo) brokenLinks(file, line string, anchors func(string) (map[string]bool, error)) ([]string, error) {
	var out []string
	for _, m := range link.FindAllStringSubmatch(line, -1) {
		target, anchor, _ := strings.Cut(m[1], "#")
		if strings.Contains(target, ":") {
			continue
		}
		p := file
		if target != "" {
			p = path.Clean(path.Join(path.Dir(file), target))
		}
		if !r.paths[p] {
			out = append(out, p)
			continue
		}
		if anchor == "" || !strings.HasSuffix(p, ".md") {
			continue
		}
		a, err := anchors(p)
		if err != nil {
			return nil, err
		}
		if !a[anchor] {
			out = append(out, p+"#"+anchor)
		}
	}
	return out, nil
}
