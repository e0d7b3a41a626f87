// Command kubectl-liqo_janitor is the kubectl plugin `kubectl liqo-janitor`: it shows what declaring a
// Liqo provider dead would release (the janitor's own selection, janitor.PlanCluster), marks it with the
// typed confirmation through the real gate, and follows the clean-up. Flags and wiring only: the rules
// are the gate's (webhook) and the janitor's (janitor).
package main

import (
	"context"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// version is set at build time (-ldflags "-X main.version=v0.1.0").
var version = "dev"

func main() {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	if err := run(context.Background(), newRootCommand(streams)); err != nil {
		os.Exit(1)
	}
}
