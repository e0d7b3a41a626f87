package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// printable is what the plugin prints of any text that comes from the cluster — names, annotations,
// reasons, event notes, the API server's and the gate's messages: s with its control characters escaped
// as strconv.Quote writes them (\n, \x1b, \u0085, \u202e), so that a hostile annotation can neither move
// the cursor, clear or retitle the terminal, nor forge or reorder the lines around it. Escaped are the C0
// controls and DEL (U+0000–U+001F, U+007F), the C1 controls (U+0080–U+009F), the bidirectional controls
// (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), the line and paragraph separators (U+2028,
// U+2029), and bytes that are not UTF-8 (\xNN). Everything else, quotes and backslashes included, is left
// as it is. printable(printable(s)) == printable(s).
func printable(s string) string {
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

// lines is an error of several lines that the plugin words itself (what was refused, why, the command to
// run next), the cluster's text in it already passed through printable: printError keeps its line breaks.
type lines []string

func (l lines) Error() string { return strings.Join(l, "\n") }

// printError prints a command's error: one line, escaped with printable, or the lines of a lines error.
func printError(w io.Writer, err error) {
	msg, ok := err.(lines) //nolint:errorlint // only the plugin's own, unwrapped, keeps its line breaks
	if !ok {
		msg = lines{err.Error()}
	}
	for i, line := range msg {
		if i == 0 {
			fmt.Fprintln(w, "error:", printable(line))
			continue
		}
		fmt.Fprintln(w, printable(line))
	}
}
