package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// StartControllers starts a kube-controller-manager of its own running exactly the named controllers (its
// --controllers names, e.g. "replicaset-controller"), with flags after the harness's own (a later flag
// wins), until Stop; it returns the path of its log. It runs beside the one of Options.ControllerManager, if
// any: a test asks for the controllers whose work it measures (a ReplicaSet's replacement of a deleted pod),
// and no more.
func (e *Env) StartControllers(controllers []string, flags ...string) (logPath string, err error) {
	kcm, err := e.startControllers(controllers, flags)
	if err != nil {
		return "", err
	}
	e.onStop = append(e.onStop, kcm.stop)
	return kcm.logPath, nil
}

// StartControllersFor is StartControllers for one test of a package that shares its API server: the
// controllers stop when tb ends, so that the package's other tests run without them (a garbage collector
// or a StatefulSet controller they do not expect). It fails tb if they do not start.
func (e *Env) StartControllersFor(tb testing.TB, controllers []string, flags ...string) (logPath string) {
	tb.Helper()
	kcm, err := e.startControllers(controllers, flags)
	if err != nil {
		tb.Fatalf("starting kube-controller-manager: %v", err)
	}
	tb.Cleanup(func() { _ = kcm.stop() })
	return kcm.logPath
}

func (e *Env) startControllers(controllers, flags []string) (*controllerManager, error) {
	if len(controllers) == 0 {
		return nil, fmt.Errorf("StartControllers: name the controllers to run")
	}
	dir, err := os.MkdirTemp(e.dir, "kube-controller-manager-")
	if err != nil {
		return nil, err
	}
	args := append([]string{"--controllers=" + strings.Join(controllers, ",")}, flags...)
	return startControllerManager(filepath.Join(e.env.BinaryAssetsDirectory, "kube-controller-manager"),
		e.KubeconfigPath, dir, e.detached, args)
}
