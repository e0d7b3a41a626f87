package harness

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// PauseAPIServer stops the Env's kube-apiserver process (SIGSTOP) until resume (SIGCONT) is called: a
// provider's control plane that does not answer — connections are accepted by the kernel and hang, as
// they do with a frozen or overloaded API server, unlike an Outage's refusals. etcd runs on. resume may
// be called more than once; Env.Stop resumes it first.
func (e *Env) PauseAPIServer() (resume func() error, err error) {
	pid, err := e.apiServerPID()
	if err != nil {
		return nil, err
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("stopping kube-apiserver (pid %d): %w", pid, err)
	}
	resumed := false
	resume = func() error {
		if resumed {
			return nil
		}
		resumed = true
		return syscall.Kill(pid, syscall.SIGCONT)
	}
	e.onStop = append(e.onStop, resume)
	return resume, nil
}

// apiServerPID finds the Env's kube-apiserver among this machine's processes by the port it serves on:
// envtest does not expose the process.
func (e *Env) apiServerPID() (int, error) {
	port := e.env.ControlPlane.APIServer.Port
	want := []byte("--secure-port=" + port)
	entries, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		return 0, err
	}
	for _, f := range entries {
		cmdline, err := os.ReadFile(f)
		if err != nil {
			continue // the process ended
		}
		args := bytes.Split(cmdline, []byte{0})
		if len(args) == 0 || filepath.Base(string(args[0])) != "kube-apiserver" {
			continue
		}
		for _, a := range args {
			if bytes.Equal(a, want) {
				return strconv.Atoi(filepath.Base(filepath.Dir(f)))
			}
		}
	}
	return 0, errors.New("no kube-apiserver process serving on port " + port)
}
