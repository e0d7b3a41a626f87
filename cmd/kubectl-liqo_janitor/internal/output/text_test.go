package output

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
)

func TestPrintableEscapesWhatCouldRewriteTheTerminal(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"plain text, quotes and backslashes stay as they are": {`provider-a "x" \n 'y'`, `provider-a "x" \n 'y'`},
		"other Unicode stays as it is":                        {"Zürich ☃ 東京 ü", "Zürich ☃ 東京 ü"},
		"an escape sequence that clears the screen":           {"\x1b[2Jgone", `\x1b[2Jgone`},
		"a terminal title set by OSC and BEL":                 {"\x1b]0;pwned\x07", `\x1b]0;pwned\a`},
		"line breaks that would forge a line of output":       {"a\nGate: accepted\rb", `a\nGate: accepted\rb`},
		"tabs, NUL, DEL and the other C0 controls":            {"\t\x00\x7f\x01\x1f", `\t\x00\x7f\x01\x1f`},
		"C1 controls: CSI and NEL":                            {"\u009b2J\u0085\u0080\u009f", `\u009b2J\u0085\u0080\u009f`},
		"bidi embeddings and overrides":                       {"\u202aa\u202bb\u202cc\u202dd\u202ee", `\u202aa\u202bb\u202cc\u202dd\u202ee`},
		"bidi isolates":                                       {"\u2066a\u2067b\u2068c\u2069", `\u2066a\u2067b\u2068c\u2069`},
		"bidi marks and line separators":                      {"\u200e\u200f\u061c\u2028\u2029", `\u200e\u200f\u061c\u2028\u2029`},
		"bytes that are not UTF-8":                            {"a\xffb\xc3", `a\xffb\xc3`},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got := Printable(tc.in)
			g.Expect(got).To(Equal(tc.want))
			g.Expect(Printable(got)).To(Equal(got), "escaping twice changes nothing")
		})
	}
}

func TestPrintErrorEscapesTheClustersTextAndKeepsThePluginsLines(t *testing.T) {
	g := NewWithT(t)
	var b bytes.Buffer
	PrintError(&b, fmt.Errorf("patching: %w", errors.New("admission webhook denied the request: \x1b[2J\nerror: forged")))
	g.Expect(b.String()).To(Equal(`error: patching: admission webhook denied the request: \x1b[2J\nerror: forged` + "\n"))

	b.Reset()
	PrintError(&b, Lines{"the gate did not answer", "  kubectl get \x1b[2Jpods"})
	g.Expect(b.String()).To(Equal("error: the gate did not answer\n" + `  kubectl get \x1b[2Jpods` + "\n"))
}
