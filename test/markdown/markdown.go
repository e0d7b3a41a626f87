// Package markdown reads Markdown as GitHub renders it: the anchors of a document's headings, which the
// path checker (test/pathcheck) and the alerts' runbook test (test/e2e/monitoring) check links against.
package markdown

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Anchors returns the anchors GitHub gives the headings of a Markdown document (outside code blocks),
// a repeated one numbered as GitHub numbers it (section, section-1, …), and those of <a id|name="…">.
func Anchors(doc string) map[string]bool {
	anchors := map[string]bool{}
	inCode := false
	for line := range strings.SplitSeq(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inCode = !inCode
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		heading, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if inCode || !ok || !strings.HasPrefix(line, "#") {
			continue
		}
		a := GitHubAnchor(heading)
		for i := 1; anchors[a]; i++ {
			a = fmt.Sprintf("%s-%d", GitHubAnchor(heading), i)
		}
		anchors[a] = true
	}
	return anchors
}

// htmlAnchor is an explicit anchor in a Markdown file.
var htmlAnchor = regexp.MustCompile(`<a (?:id|name)="([^"]+)"`)

// GitHubAnchor is the anchor GitHub gives a Markdown heading: lower case, spaces as hyphens, punctuation
// other than hyphens and underscores dropped (backticks and other inline markup included).
func GitHubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
