package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// StartBinary runs the liqo-janitor binary (bin/liqo-janitor, from `make build`) against this control
// plane until Stop, serving the webhook configurations registered through Options.WebhookPaths, with the
// given extra flags; it returns once the binary reports ready. Its log is BinaryLog.
func (e *Env) StartBinary(args ...string) error {
	binary := filepath.Join(e.Root, "bin", "liqo-janitor")
	if _, err := os.Stat(binary); err != nil {
		return fmt.Errorf("%s is missing: run `make build` first", binary)
	}
	probe, err := FreeLocalAddr()
	if err != nil {
		return err
	}
	wo := e.WebhookOptions()
	logFile, err := os.Create(e.BinaryLog())
	if err != nil {
		return err
	}
	cmd := exec.Command(binary, append([]string{"--kubeconfig=" + e.KubeconfigPath,
		"--webhook-port=" + strconv.Itoa(wo.Port), "--webhook-cert-dir=" + wo.CertDir,
		"--health-probe-bind-address=" + probe, "--metrics-bind-address=0"}, args...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if !e.detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive this process
	}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("starting %s: %w", binary, err)
	}
	e.Go(func(ctx context.Context) error {
		<-ctx.Done()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		err := cmd.Wait()
		_ = logFile.Close()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return nil // stopped by our signal
		}
		return err
	})
	return waitHTTPOK(context.Background(), "http://"+probe+"/readyz")
}

// FreeLocalAddr returns a loopback address with a port nothing listens on at the moment.
func FreeLocalAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func waitHTTPOK(ctx context.Context, url string) error {
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil //nolint:nilerr // not listening yet
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// BinaryLog is the path of the log of the binary StartBinary started.
func (e *Env) BinaryLog() string { return filepath.Join(e.dir, "liqo-janitor.log") }
