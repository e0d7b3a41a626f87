// Command kubectl-liqo_janitor is the kubectl plugin `kubectl liqo-janitor`: it shows what declaring a
// Liqo provider dead would release (the janitor's own selection, janitor.PlanCluster), marks it with the
// typed confirmation through the real gate, and follows the clean-up. Flags and wiring only: the rules
// are the gate's (webhook) and the janitor's (janitor).
package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	// The kubeconfig auth providers client-go still ships (oidc; azure and gcp, which only say to move to
	// their exec plugins kubelogin and gke-gcloud-auth-plugin), as kubectl links them. exec credential
	// plugins are built into client-go and need no import.
	_ "k8s.io/client-go/plugin/pkg/client/auth"
)

// version is set at build time (-ldflags "-X main.version=v0.1.0").
var version = "dev"

// completionHelper is the name kubectl runs to complete the plugin's command line. Run under that name
// (a link to the plugin, as under krew, which puts only the plugin on PATH), the plugin answers as
// cmd/kubectl_complete-liqo_janitor does.
const completionHelper = "kubectl_complete-liqo_janitor"

func main() {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	root := newRootCommand(streams)
	if name := strings.TrimSuffix(filepath.Base(os.Args[0]), ".exe"); name == completionHelper {
		root.SetArgs(append([]string{cobra.ShellCompRequestCmd}, os.Args[1:]...))
	}
	if err := run(context.Background(), root); err != nil {
		os.Exit(1)
	}
}
