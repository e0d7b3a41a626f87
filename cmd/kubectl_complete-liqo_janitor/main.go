// Command kubectl_complete-liqo_janitor is the shell-completion helper of `kubectl liqo-janitor`: to
// complete `kubectl liqo-janitor <TAB>`, kubectl (1.26 or later) runs kubectl_complete-liqo_janitor from
// PATH with the words typed after the plugin's name, and hands what it prints to the shell. It runs
// `kubectl-liqo_janitor __complete <words>` (cobra's completion protocol), taking the plugin beside its
// own resolved path (the release archive and krew's store unpack both into one directory), or else from
// PATH.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

func main() {
	plugin, err := pluginPath()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubectl_complete-liqo_janitor:", err)
		os.Exit(1)
	}
	cmd := exec.Command(plugin, append([]string{"__complete"}, os.Args[1:]...)...) //nolint:gosec // the plugin, with what kubectl passes
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			os.Exit(exit.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "kubectl_complete-liqo_janitor:", err)
		os.Exit(1)
	}
}

// pluginPath is the plugin beside this executable (symbolic links resolved: krew links only the plugin
// into its bin directory, and a link made by hand for this helper leads back to the store), or else the
// one on PATH.
func pluginPath() (string, error) {
	name := "kubectl-liqo_janitor"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	if self, err := os.Executable(); err == nil {
		if self, err = filepath.EvalSymlinks(self); err == nil {
			beside := filepath.Join(filepath.Dir(self), name)
			if info, err := os.Stat(beside); err == nil && !info.IsDir() {
				return beside, nil
			}
		}
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("the plugin %s is neither beside this helper nor on PATH: %w", name, err)
	}
	return path, nil
}
