package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// StartControllers starts a kube-controller-manager of its own running exactly the named controllers (its
// --controllers names, e.g. "replicaset-controller"), with flags after the harness's own (a later flag
// wins), until Stop; it returns the path of its log. It runs beside the one of Options.ControllerManager, if
// any: a test asks for the controllers whose work it measures (a ReplicaSet's replacement of a deleted pod),
// and no more.
func (e *Env) StartControllers(controllers []string, flags ...string) (logPath string, err error) {
	if len(controllers) == 0 {
		return "", fmt.Errorf("StartControllers: name the controllers to run")
	}
	dir, err := os.MkdirTemp(e.dir, "kube-controller-manager-")
	if err != nil {
		return "", err
	}
	args := append([]string{"--controllers=" + strings.Join(controllers, ",")}, flags...)
	kcm, err := startControllerManager(filepath.Join(e.env.BinaryAssetsDirectory, "kube-controller-manager"),
		e.KubeconfigPath, dir, e.detached, args)
	if err != nil {
		return "", err
	}
	e.onStop = append(e.onStop, kcm.stop)
	return kcm.logPath, nil
}
