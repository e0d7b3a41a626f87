// Package output is how the plugin prints: the cluster's text escaped (Printable), the errors it words
// itself on several lines (Lines, PrintError), the -o flag and the documents it prints (Flag, TypeMeta),
// and where the lines that are not the document go (Flag.Progress).
package output

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable is what the plugin prints of any text that comes from the cluster — names, annotations,
// reasons, event notes, the API server's and the gate's messages: s with its control characters escaped
// as strconv.Quote writes them (\n, \x1b, \u0085, \u202e), so that a hostile annotation can neither move
// the cursor, clear or retitle the terminal, nor forge or reorder the lines around it. Escaped are the C0
// controls and DEL (U+0000–U+001F, U+007F), the C1 controls (U+0080–U+009F), the bidirectional controls
// (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), the line and paragraph separators (U+2028,
// U+2029), and bytes that are not UTF-8 (\xNN). Everything else, quotes and backslashes included, is left
// as it is. Printable(Printable(s)) == Printable(s).
func Printable(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, unprintable) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unprintable(r):
			q := strconv.QuoteRuneToASCII(r) // '\x1b', '\n', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func unprintable(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029'
}

// Lines is an error of several lines that the plugin words itself (what was refused, why, the command to
// run next), the cluster's text in it already passed through Printable: PrintError keeps its line breaks.
type Lines []string

func (l Lines) Error() string { return strings.Join(l, "\n") }

// PrintError prints a command's error: one line, escaped with Printable, or the lines of a Lines error.
func PrintError(w io.Writer, err error) {
	msg, ok := err.(Lines) //nolint:errorlint // only the plugin's own, unwrapped, keeps its line breaks
	if !ok {
		msg = Lines{err.Error()}
	}
	for i, line := range msg {
		if i == 0 {
			fmt.Fprintln(w, "error:", Printable(line))
			continue
		}
		fmt.Fprintln(w, Printable(line))
	}
}
