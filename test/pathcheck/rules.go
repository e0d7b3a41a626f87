package main

import (
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The rule citations (issue 39): four packages number their rules in their doc.go, and a tracked Go file
// cites one as "rule N" only inside the package that owns it; anywhere else it says whose rule it is —
// "gate rule N", "janitor rule N", "fence rule N", "renew rule N" — and N is a rule that package's doc.go
// defines. The owner may end the line before ("janitor\n// rule 18"): a comment's lines are read as one.
// Plural citations ("rules 16 and 17", "rules 14, 16, 17", "rules 16–21") check every number.

// owner is a package whose doc.go numbers rules, and how others cite them.
type owner struct {
	dir  string // the package's directory, with a trailing slash; its subdirectories cite its rules too
	name string // the word that qualifies a citation from elsewhere
	doc  string // the doc.go that numbers the rules
}

// owners, the more specific directory first: janitor/providerfence is not the janitor's.
var owners = []owner{
	{dir: "janitor/providerfence/", name: "fence", doc: "janitor/providerfence/doc.go"},
	{dir: "janitor/fencerenew/", name: "renew", doc: "janitor/fencerenew/doc.go"},
	{dir: "janitor/", name: "janitor", doc: "janitor/doc.go"},
	{dir: "webhook/", name: "gate", doc: "webhook/doc.go"},
}

// asserted are bare citations that a test asserts on verbatim (issue 39: no test changes its
// assertions); the owner is named before them.
var asserted = []string{"the gate refuses such a mark too (rule 20)"}

// citation is "rule N" or "rules N, M and K" with what qualifies it: group 1 the owner, if any, group 2
// the first number, group 3 the rest of a plural's list.
var citation = regexp.MustCompile(`(?i)\b(?:(gate|janitor|fence|renew)(?:'s)?\s+)?rule(?:s\s+(\d+)((?:\s*(?:,|and|or|–|-)\s*\d+\b)*)|[\s-](\d+))\b`)

var ruleNumber = regexp.MustCompile(`(?m)^//\s{1,2}(\d+)\.\s`)

var number = regexp.MustCompile(`\d+`)

// RuleProblem is a bare citation outside its package, or a citation of a rule that does not exist.
type RuleProblem struct {
	File string
	Line int
	Text string
	Why  string
}

func (p RuleProblem) String() string {
	return fmt.Sprintf("%s:%d: %q %s", p.File, p.Line, p.Text, p.Why)
}

// rules returns the rule citations of the tracked Go files among files that are bare outside their
// package or name a rule the owner does not define, in file and line order.
func rules(fsys fs.FS, files []string) ([]RuleProblem, error) {
	defined, err := definedRules(fsys)
	if err != nil {
		return nil, err
	}
	var problems []RuleProblem
	for _, f := range files {
		if strings.HasPrefix(f, self) || !strings.HasSuffix(f, ".go") {
			continue
		}
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		problems = append(problems, citations(f, string(data), defined)...)
	}
	return problems, nil
}

// definedRules reads the numbers each owner's doc.go gives its rules.
func definedRules(fsys fs.FS) (map[string]map[int]bool, error) {
	defined := map[string]map[int]bool{}
	for _, o := range owners {
		data, err := fs.ReadFile(fsys, o.doc)
		if err != nil {
			return nil, err
		}
		defined[o.name] = map[int]bool{}
		for _, m := range ruleNumber.FindAllStringSubmatch(string(data), -1) {
			n, _ := strconv.Atoi(m[1])
			defined[o.name][n] = true
		}
	}
	return defined, nil
}

// citations returns the problems of the rule citations in file f, whose text is src.
func citations(f, src string, defined map[string]map[int]bool) []RuleProblem {
	home := ""
	for _, o := range owners {
		if strings.HasPrefix(f, o.dir) {
			home = o.name
			break
		}
	}
	var problems []RuleProblem
	text, starts := joinComments(src)
	for _, m := range citation.FindAllStringSubmatchIndex(text, -1) {
		cited := text[m[0]:m[1]]
		line := sort.SearchInts(starts, m[0]+1)
		who := strings.ToLower(group(text, m, 1))
		switch {
		case who == "" && home == "":
			if !isAsserted(text, m[0], m[1]) {
				problems = append(problems, RuleProblem{File: f, Line: line, Text: cited,
					Why: "cites a rule without saying whose: gate, janitor, fence or renew rule N"})
			}
			continue
		case who == "":
			who = home
		}
		for _, n := range number.FindAllString(group(text, m, 2)+" "+group(text, m, 3)+" "+group(text, m, 4), -1) {
			if k, _ := strconv.Atoi(n); !defined[who][k] {
				problems = append(problems, RuleProblem{File: f, Line: line, Text: cited,
					Why: fmt.Sprintf("cites %s rule %s, which %s does not define", who, n, docOf(who))})
			}
		}
	}
	return problems
}

// group is submatch i of match m in text, or "".
func group(text string, m []int, i int) string {
	if m[2*i] < 0 {
		return ""
	}
	return text[m[2*i]:m[2*i+1]]
}

func docOf(name string) string {
	for _, o := range owners {
		if o.name == name {
			return o.doc
		}
	}
	return ""
}

// isAsserted says whether the citation text[from:to] is inside one of the asserted texts.
func isAsserted(text string, from, to int) bool {
	for _, a := range asserted {
		for i := 0; i <= len(a); i++ {
			if i <= from && strings.HasPrefix(text[from-i:], a) && from-i+len(a) >= to {
				return true
			}
		}
	}
	return false
}

// comment is a line's comment continuation: the "//" that starts it and the spaces around.
var comment = regexp.MustCompile(`^[ \t]*//[ \t]*`)

// joinComments returns src with each line that continues a comment joined to the one before by a space,
// and the offset in it where each line of src starts (line n+1 starts at starts[n]).
func joinComments(src string) (string, []int) {
	var b strings.Builder
	var starts []int
	for i, line := range strings.Split(src, "\n") {
		if i > 0 {
			if c := comment.FindString(line); c != "" {
				b.WriteString(" ")
				starts = append(starts, b.Len())
				b.WriteString(line[len(c):])
				continue
			}
			b.WriteString("\n")
		}
		starts = append(starts, b.Len())
		b.WriteString(line)
	}
	return b.String(), starts
}
