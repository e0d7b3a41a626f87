package node

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// process is a child process of the lane, logging to a file under the node's directory.
type process struct {
	name    string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
	logPath string
}

// start runs binary with args, its output in dir/name.log. The process dies with the test binary
// (Pdeathsig), even when that one is killed, so that a crashed run leaves no kubelet behind.
func start(dir, name, binary string, args ...string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, binary, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{}), logPath: logPath}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exited returns an error naming the process and its log if it has exited.
func (p *process) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited (%w): see %s", p.name, p.err, p.logPath)
	default:
		return nil
	}
}

// running says whether the process was started and has not exited.
func (p *process) running() bool { return p != nil && p.exited() == nil }

// stop sends SIGTERM and waits for the process; it kills the process if it has not exited after
// grace.
func (p *process) stop(grace time.Duration) error {
	if p == nil {
		return nil
	}
	select {
	case <-p.done:
		return nil // it already ended; exited reported that
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("%s ignored SIGTERM for %s and was killed", p.name, grace)
	}
}

// run runs a short command and returns its combined output in the error when it fails.
func run(binary string, args ...string) (string, error) {
	out, err := exec.Command(binary, args...).CombinedOutput()
	if err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) || len(out) > 0 {
			return string(out), fmt.Errorf("%s %v: %w: %s", binary, args, err, out)
		}
		return string(out), fmt.Errorf("%s %v: %w", binary, args, err)
	}
	return string(out), nil
}
