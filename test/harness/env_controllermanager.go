package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// controllerManager is a kube-controller-manager child process running, against the envtest API server,
// the namespace and garbage-collector controllers, or those its caller names (Options.AdvertiseAddress).
type controllerManager struct {
	cmd     *exec.Cmd
	done    chan error
	logPath string
}

func startControllerManager(binary, kubeconfig, dir string, detached bool, controllers []string) (*controllerManager, error) {
	logPath := filepath.Join(dir, "kube-controller-manager.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := append([]string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--secure-port=0", // no HTTPS endpoint: no port clash, no delegated authn to set up
		"--concurrent-gc-syncs=5",
		// without it, kcm creates /usr/libexec/kubernetes/kubelet-plugins/volume/exec/ on the host
		"--flex-volume-plugin-dir=" + filepath.Join(dir, "flexvolume"),
		"--v=1",
	}, controllers...)
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Die with the test binary, even when it is killed (envtest's own processes lack this).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if detached {
		cmd.SysProcAttr.Pdeathsig = 0
	}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting kube-controller-manager: %w", err)
	}
	c := &controllerManager{cmd: cmd, done: make(chan error, 1), logPath: logPath}
	go func() {
		c.done <- cmd.Wait()
		_ = logFile.Close()
	}()
	return c, nil
}

// stop sends SIGTERM (a process started from a non-interactive shell may ignore SIGINT) and kills it if it
// has not exited after ten seconds.
func (c *controllerManager) stop() error {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-c.done:
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return nil // terminated by our signal
		}
		return err
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		return errors.Join(errors.New("kube-controller-manager ignored SIGTERM for 10s and was killed"), <-c.done)
	}
}
