package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// completions runs cobra's completion request, as kubectl_complete-liqo_janitor does, as user: the
// candidates, one per line, and the directive line.
func completions(t *testing.T, user string, words ...string) []string {
	t.Helper()
	out, _, err := kubectl(t, user, "", append([]string{"__complete"}, words...)...)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}

// TestCompletionOffersForeignClusterNamesAndClusterIDs: each command's argument completes to the
// ForeignClusters it applies to, by name and by cluster ID, listed from the API server.
func TestCompletionOffersForeignClusterNamesAndClusterIDs(t *testing.T) {
	testEnv := harness.Require(t)
	g := NewWithT(t)
	dead, live := deadAndLive(t)
	deadName, liveName := dead.ForeignCluster.Name, live.ForeignCluster.Name
	// Liqo names a ForeignCluster by its cluster ID; one made by hand may be named otherwise
	n := fixture.Prefix("")
	other := &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: "by-hand-" + n},
		Spec: liqov1beta1.ForeignClusterSpec{ClusterID: liqov1beta1.ClusterID("id-" + n + "-of-by-hand")}}
	g.Expect(testEnv.Client.Create(t.Context(), other)).To(Succeed())
	t.Cleanup(func() { _ = testEnv.Client.Delete(context.Background(), other) })
	both := func(name string) string { return name + "\tForeignCluster and cluster ID" }
	otherName := other.Name + "\tForeignCluster, cluster ID " + string(other.Spec.ClusterID)
	otherID := string(other.Spec.ClusterID) + "\tcluster ID of ForeignCluster " + other.Name

	got := completions(t, alice, "mark", "")
	t.Log("__complete mark \"\":\n" + strings.Join(got, "\n"))
	g.Expect(got).To(ContainElements(both(deadName), both(liveName), otherName, otherID))
	g.Expect(got[len(got)-1]).To(Equal(":4"), "ShellCompDirectiveNoFileComp: no file names")

	g.Expect(completions(t, alice, "plan", deadName[:len(deadName)-1])).To(ContainElement(both(deadName)), "the prefix typed")
	g.Expect(completions(t, alice, "plan", deadName)).To(Equal([]string{both(deadName), ":4"}))
	g.Expect(completions(t, alice, "plan", "id-"+n)).To(Equal([]string{otherID, ":4"}))
	g.Expect(completions(t, alice, "plan", deadName, "")).To(Equal([]string{":4"}), "one argument only")

	_, _, err := kubectl(t, alice, "", "mark", deadName, "--reason", "gone", "--yes")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(completions(t, alice, "mark", "")).NotTo(ContainElement(HavePrefix(deadName+"\t")), "mark offers the unmarked ones")
	for _, cmd := range []string{"unmark", "status", "fence", "release-volumes"} {
		got := completions(t, alice, cmd, "")
		g.Expect(got).To(ContainElement(both(deadName)), "%s offers the marked ones", cmd)
		g.Expect(got).NotTo(ContainElements(HavePrefix(liveName+"\t"), otherName), "%s offers the marked ones", cmd)
	}
	g.Expect(completions(t, alice, "status", "-o", "")).To(Equal([]string{"json", "yaml", "kyaml", ":4"}))
}

// TestTheCompletionHelperRunsThePlugin: kubectl_complete-liqo_janitor, as kubectl runs it (the words
// after the plugin's name, the kubeconfig from KUBECONFIG), prints the plugin's completions; beside it
// or on PATH.
func TestTheCompletionHelperRunsThePlugin(t *testing.T) {
	testEnv := harness.Require(t)
	g := NewWithT(t)
	dead, _ := deadAndLive(t)
	root, err := harness.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	dir, elsewhere := t.TempDir(), t.TempDir()
	plugin, err := harness.Build(root, "kubectl-liqo_janitor", dir)
	g.Expect(err).NotTo(HaveOccurred())
	helper, err := harness.Build(root, "kubectl_complete-liqo_janitor", elsewhere)
	g.Expect(err).NotTo(HaveOccurred())

	complete := func(path string, words ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		cmd := exec.CommandContext(t.Context(), helper, words...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+testEnv.KubeconfigPath, "PATH="+path)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		return out.String(), errOut.String(), err
	}
	out, stderr, err := complete(dir, "mark", dead.ID)
	g.Expect(err).NotTo(HaveOccurred(), stderr)
	g.Expect(out).To(Equal(dead.ID + "\tForeignCluster and cluster ID\n:4\n"))

	_, stderr, err = complete(t.TempDir(), "mark", "")
	g.Expect(err).To(HaveOccurred(), "no plugin beside it or on PATH")
	g.Expect(stderr).To(ContainSubstring("kubectl-liqo_janitor is neither beside this helper nor on PATH"))

	// the archive's layout, which krew unpacks into its store: the helper beside the plugin, reached
	// through a link (as one made into krew's bin directory), with nothing on PATH
	helper, err = harness.Build(root, "kubectl_complete-liqo_janitor", dir)
	g.Expect(err).NotTo(HaveOccurred())
	link := filepath.Join(t.TempDir(), "kubectl_complete-liqo_janitor")
	g.Expect(os.Symlink(helper, link)).To(Succeed())
	helper = link
	out, stderr, err = complete(t.TempDir(), "plan", dead.ForeignCluster.Name)
	g.Expect(err).NotTo(HaveOccurred(), stderr)
	g.Expect(out).To(Equal(dead.ForeignCluster.Name + "\tForeignCluster and cluster ID\n:4\n"))

	// kubectl itself, when there is one: it finds kubectl_complete-liqo_janitor on PATH (1.26 or later)
	if kubectlPath, err := exec.LookPath("kubectl"); err == nil {
		var out, errOut bytes.Buffer
		cmd := exec.CommandContext(t.Context(), kubectlPath, "__complete", "liqo-janitor", "plan", dead.ForeignCluster.Name)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+testEnv.KubeconfigPath, "PATH="+dir)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		g.Expect(cmd.Run()).To(Succeed(), errOut.String())
		t.Log("kubectl __complete liqo-janitor plan " + dead.ForeignCluster.Name + ":\n" + out.String())
		g.Expect(out.String()).To(HavePrefix(dead.ForeignCluster.Name + "\tForeignCluster and cluster ID\n"))
	}

	// the plugin itself, linked under the helper's name (what krew's caveats say to do)
	link = filepath.Join(t.TempDir(), "kubectl_complete-liqo_janitor")
	g.Expect(os.Symlink(plugin, link)).To(Succeed())
	helper = link
	out, stderr, err = complete(t.TempDir(), "status", "-o", "")
	g.Expect(err).NotTo(HaveOccurred(), stderr)
	g.Expect(out).To(Equal("json\nyaml\nkyaml\n:4\n"))
}

// TestThePluginBinaryExitsOneAndSaysWhy: the built plugin prints a usage error once and exits 1.
func TestThePluginBinaryExitsOneAndSaysWhy(t *testing.T) {
	g := NewWithT(t)
	plugin := harness.RequireBinary(t, "kubectl-liqo_janitor")
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(t.Context(), plugin, "mark")
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	g.Expect(err).To(BeAssignableToTypeOf(exit))
	g.Expect(err.(*exec.ExitError).ExitCode()).To(Equal(1)) //nolint:errorlint // checked above
	g.Expect(errOut.String()).To(Equal("error: accepts 1 arg(s), received 0\n" +
		"Usage: kubectl liqo-janitor mark <cluster-id|foreigncluster> --reason \"…\" [flags]\n" +
		"Run 'kubectl liqo-janitor mark --help' for more information.\n"))
	g.Expect(out.String()).To(BeEmpty())
}
