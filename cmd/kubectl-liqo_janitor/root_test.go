package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// offline runs the plugin with a kubeconfig that names no cluster: what it prints before it asks one.
func offline(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newRootCommand(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append([]string{"--kubeconfig", "/nonexistent/kubeconfig"}, args...))
	err = run(context.Background(), cmd)
	return out.String(), errOut.String(), err
}

// TestUsageErrorsSaySoWithTheUsageLine: cobra's errors about the command line are printed once, with
// the command's usage line and where its help is; nothing goes to stdout.
func TestUsageErrorsSaySoWithTheUsageLine(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"a missing argument": {[]string{"mark"}, "error: accepts 1 arg(s), received 0\n" +
			"Usage: kubectl liqo-janitor mark <cluster-id|foreigncluster> --reason \"…\" [flags]\n" +
			"Run 'kubectl liqo-janitor mark --help' for more information.\n"},
		"an argument too many": {[]string{"status", "a", "b"}, "error: accepts at most 1 arg(s), received 2\n" +
			"Usage: kubectl liqo-janitor status [<cluster-id|foreigncluster>] [flags]\n" +
			"Run 'kubectl liqo-janitor status --help' for more information.\n"},
		"an unknown command": {[]string{"nosuch"}, "error: unknown command \"nosuch\" for \"kubectl liqo-janitor\"\n" +
			"Run 'kubectl liqo-janitor --help' for more information.\n"},
		"a mistyped command, with cobra's suggestion": {[]string{"statsu"}, "error: unknown command \"statsu\" for \"kubectl liqo-janitor\"\n" +
			"Did you mean this?\n  status\n" +
			"Run 'kubectl liqo-janitor --help' for more information.\n"},
		"an unknown flag": {[]string{"status", "--bogus"}, "error: unknown flag: --bogus\n" +
			"Usage: kubectl liqo-janitor status [<cluster-id|foreigncluster>] [flags]\n" +
			"Run 'kubectl liqo-janitor status --help' for more information.\n"},
		"an output format without a printer": {[]string{"version", "-o", "table"},
			"error: invalid argument \"table\" for \"-o, --output\" flag: use -o json, -o yaml, -o kyaml, or leave it out for tables\n" +
				"Usage: kubectl liqo-janitor version [flags]\n" +
				"Run 'kubectl liqo-janitor version --help' for more information.\n"},
		"-n, which nothing would honour": {[]string{"status", "-n", "liqo"}, "error: " + namespaceIgnored + "\n" +
			"Usage: kubectl liqo-janitor status [<cluster-id|foreigncluster>] [flags]\n" +
			"Run 'kubectl liqo-janitor status --help' for more information.\n"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			stdout, stderr, err := offline(t, tc.args...)
			g.Expect(err).To(HaveOccurred(), "exit status 1")
			g.Expect(stderr).To(Equal(tc.want))
			g.Expect(stdout).To(BeEmpty())
		})
	}
}

// TestACommandsErrorIsPrintedOnceWithoutTheUsage: an error of the command itself, before and after it
// asks the cluster, is printed once, without the usage line.
func TestACommandsErrorIsPrintedOnceWithoutTheUsage(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"an invalid --dry-run": {[]string{"mark", "x", "--reason", "gone", "--dry-run=client"},
			"error: --dry-run=client: use --dry-run=server to send the mark through the gate without storing it\n"},
		"a kubeconfig that is not there": {[]string{"status"},
			"error: reading the kubeconfig: stat /nonexistent/kubeconfig: no such file or directory (set --kubeconfig or --context as for kubectl)\n"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			_, stderr, err := offline(t, tc.args...)
			g.Expect(err).To(HaveOccurred())
			g.Expect(stderr).To(Equal(tc.want))
			g.Expect(strings.Count(stderr, "error:")).To(Equal(1))
		})
	}
}

// TestEveryCommandHasAnExample: `kubectl liqo-janitor <cmd> --help` shows how it is run.
func TestEveryCommandHasAnExample(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	root := newRootCommand(genericiooptions.NewTestIOStreamsDiscard())
	g.Expect(root.Example).NotTo(BeEmpty())
	for _, cmd := range root.Commands() {
		g.Expect(cmd.Example).To(ContainSubstring("kubectl liqo-janitor "+cmd.Name()), "the Example of %s", cmd.Name())
	}
	g.Expect(root.PersistentFlags().Lookup("namespace").Hidden).To(BeTrue(), "-n is not shown")
}
