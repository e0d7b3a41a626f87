package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// width is the terminal width the demo writes for.
const width = 80

// screen writes the narration: readable on an 80-column terminal, redrawing progress bars in place on a
// terminal and printing plain periodic lines otherwise (CI logs, pipes).
type screen struct {
	w      io.Writer
	tty    bool
	failed bool
}

func newScreen(f *os.File) *screen {
	st, err := f.Stat()
	return &screen{w: f, tty: err == nil && st.Mode()&os.ModeCharDevice != 0}
}

func (s *screen) line(text string) { fmt.Fprintln(s.w, text) }

func (s *screen) color(code, text string) string {
	if !s.tty {
		return text
	}
	return "\033[" + code + "m" + text + "\033[0m"
}

func (s *screen) title(text string) {
	s.line(s.color("1", text))
	s.line(strings.Repeat("=", min(len(text), width)))
}

func (s *screen) step(i, n int, name string) {
	s.line("")
	s.line(s.color("1;36", fmt.Sprintf("[%d/%d] %s", i, n, name)))
}

func (s *screen) done(text string)    { s.wrapped("  ✓ ", "    ", text, "") }
func (s *screen) note(text string)    { s.wrapped("  ", "  ", text, "") }
func (s *screen) command(text string) { s.wrapped("  $ ", "      ", text, "33") }
func (s *screen) refused(text string) { s.wrapped("  ✗ refused: ", "    ", text, "31") }

// shown prints a command's own output as it is, indented.
func (s *screen) shown(text string) {
	for line := range strings.SplitSeq(strings.TrimRight(text, "\n"), "\n") {
		s.line("    " + line)
	}
}

// wrapped prints text word-wrapped to the width, with a first-line and a continuation prefix, each line
// in the given color (none if empty).
func (s *screen) wrapped(first, rest, text, color string) {
	paint := func(t string) string {
		if color == "" {
			return t
		}
		return s.color(color, t)
	}
	prefix, line := first, ""
	for _, word := range strings.Fields(text) {
		if line != "" && len([]rune(prefix+line+" "+word)) > width {
			s.line(prefix + paint(line))
			prefix, line = rest, ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	s.line(prefix + paint(line))
}

func (s *screen) fail(err error, logs []string) {
	s.failed = true
	s.line("")
	s.wrapped("✗ demo failed: ", "  ", err.Error(), "31")
	for _, l := range logs {
		s.line("  log: " + l)
	}
}

func (s *screen) kept(kubeconfig, provider, fencer string) {
	s.line("The control planes and liqo-janitor are still running. Explore with:")
	s.line("  export KUBECONFIG=" + kubeconfig)
	s.line("  kubectl get foreignclusters")
	s.line("The provider's side (directly: the partition's proxy ended with the demo):")
	s.line("  kubectl --kubeconfig " + provider + " get shadowpods -A")
	s.line("  kubectl --kubeconfig " + fencer + " get tenants,leases -A   # the provider that fenced itself")
	s.line("Stop everything with: make demo-stop")
}

// bars draws one progress bar per kind.
type bars struct {
	s     *screen
	drawn int
	next  time.Time
}

func (s *screen) bars() *bars { return &bars{s: s} }

func (b *bars) draw(pr []progress, elapsed time.Duration) {
	if !b.s.tty {
		if time.Now().Before(b.next) {
			return
		}
		b.next = time.Now().Add(time.Second)
		parts := make([]string, 0, len(pr))
		for _, k := range pr {
			parts = append(parts, fmt.Sprintf("%s %d/%d", k.kind, k.gone, k.total))
		}
		b.s.line(fmt.Sprintf("  %5.1fs  %s", elapsed.Seconds(), strings.Join(parts, ", ")))
		return
	}
	if b.drawn > 0 {
		fmt.Fprintf(b.s.w, "\033[%dA", b.drawn)
	}
	for _, k := range pr {
		b.s.line("\033[2K" + bar(k))
	}
	b.s.line(fmt.Sprintf("\033[2K  %.1fs since the mark", elapsed.Seconds()))
	b.drawn = len(pr) + 1
}

func (b *bars) finish(pr []progress, elapsed time.Duration) {
	b.next = time.Time{}
	if pr != nil {
		b.draw(pr, elapsed)
	}
}

// bar renders "  pods            [#########.....]  120/200  (1 blocked)" within the width.
func bar(k progress) string {
	const cells = 40
	filled := 0
	if k.total > 0 {
		filled = k.gone * cells / k.total
	}
	text := fmt.Sprintf("  %-15s [%s%s] %4d/%-4d", k.kind, strings.Repeat("#", filled), strings.Repeat(".", cells-filled), k.gone, k.total)
	if k.blocked > 0 {
		text += fmt.Sprintf(" %d blocked", k.blocked)
	}
	return text
}

// waiter shows how long a wait has lasted: one line redrawn in place on a terminal, a plain line a
// second otherwise.
type waiter struct {
	s     *screen
	what  string
	start time.Time
	next  time.Time
	drawn bool
	// every is how often a plain line is printed when not on a terminal.
	every time.Duration
}

func (s *screen) waiter(what string) *waiter {
	return &waiter{s: s, what: what, start: time.Now(), every: time.Second}
}

func (w *waiter) tick() {
	text := fmt.Sprintf("  %5.1fs  %s", time.Since(w.start).Seconds(), w.what)
	if !w.s.tty {
		if time.Now().After(w.next) {
			w.next = time.Now().Add(w.every)
			w.s.line(text)
		}
		return
	}
	if w.drawn {
		fmt.Fprint(w.s.w, "\033[1A")
	}
	w.s.line("\033[2K" + text)
	w.drawn = true
}

// table prints the final result.
func (s *screen) table(pr []progress, intact, live int) {
	s.line("")
	s.line(fmt.Sprintf("  %-16s %10s %9s", "dead provider", "released", "blocked"))
	for _, k := range pr {
		s.line(fmt.Sprintf("  %-16s %10s %9d", k.kind, fmt.Sprintf("%d/%d", k.gone, k.total), k.blocked))
	}
	s.line("")
	s.line(fmt.Sprintf("  live providers: %d/%d objects untouched (resourceVersions unchanged)", intact, live))
}
