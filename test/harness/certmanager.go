package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// CertManagerBinaries is the directory `make cert-manager` builds cert-manager's controller and cainjector
// into (from the tools module test/certmanager), relative to the repository root.
const CertManagerBinaries = "bin/cert-manager"

// certManagerControllers are the controllers of cert-manager's controller that issue a Certificate from an
// Issuer (cert-manager's own names: internal/apis/config/controller/v1alpha1/defaults.go, AllControllers):
// the Issuers' readiness, the approver of CertificateRequests (without it none is signed), the selfSigned
// and CA issuers, and the six that carry a Certificate from trigger to Ready. ACME, Vault, ClusterIssuers,
// the ingress and Gateway shims and the experimental CertificateSigningRequest controllers stay off.
var certManagerControllers = []string{"issuers", "certificaterequests-approver",
	"certificaterequests-issuer-selfsigned", "certificaterequests-issuer-ca",
	"certificates-trigger", "certificates-issuing", "certificates-key-manager",
	"certificates-request-manager", "certificates-readiness", "certificates-revision-manager"}

// CertManager is cert-manager's controller and CA injector (cainjector), the real binaries, running against
// the Env's API server: what an admin's cluster runs for an install in cert-manager mode.
type CertManager struct {
	// ControllerLog and CAInjectorLog are the paths of their logs, in the harness's directory.
	ControllerLog, CAInjectorLog string

	controller, cainjector *process
}

// StartCertManager starts cert-manager's controller and cainjector (CertManagerBinaries) with an admin
// kubeconfig, as one replica each (no leader election), and returns once both listen (the controller's
// health and metrics servers, the cainjector's metrics server). cert-manager's CRDs must be installed: the
// test module that pins cert-manager installs them from its module (test/e2e/manifests,
// installCertManagerCRDs). clusterResourceNamespace is the controller's --cluster-resource-namespace,
// where ClusterIssuers keep their Secrets (cert-manager's chart always sets it; its ClusterIssuer controller
// is off here). The cainjector injects into Mutating- and ValidatingWebhookConfigurations only (not into
// CRDs or APIServices). Stop, or else Env.Stop, ends both.
func (e *Env) StartCertManager(ctx context.Context, clusterResourceNamespace string) (*CertManager, error) {
	dir := filepath.Join(e.Root, CertManagerBinaries)
	for _, b := range []string{"controller", "cainjector"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return nil, fmt.Errorf("no cert-manager %s to run: run make cert-manager: %w", b, err)
		}
	}
	addrs, err := freeLocalAddrs(3)
	if err != nil {
		return nil, err
	}
	healthz, metrics, injectorMetrics := addrs[0], addrs[1], addrs[2]
	cm := &CertManager{ControllerLog: filepath.Join(e.dir, "cert-manager-controller.log"),
		CAInjectorLog: filepath.Join(e.dir, "cert-manager-cainjector.log")}
	// cert-manager's flag names: cmd/controller/app/options/options.go and cmd/cainjector/app/options/options.go
	// (copied into test/certmanager); the cainjector finds its kubeconfig through controller-runtime
	// (ctrl.GetConfigOrDie: --kubeconfig or KUBECONFIG), so both are given.
	controller := exec.Command(filepath.Join(dir, "controller"), "--kubeconfig="+e.KubeconfigPath,
		"--leader-elect=false", "--cluster-resource-namespace="+clusterResourceNamespace,
		"--controllers="+strings.Join(certManagerControllers, ","),
		"--internal-healthz-listen-address="+healthz, "--metrics-listen-address="+metrics, "--v=2")
	cainjector := exec.Command(filepath.Join(dir, "cainjector"), "--kubeconfig="+e.KubeconfigPath,
		"--leader-elect=false", "--enable-customresourcedefinitions-injectable=false",
		"--enable-apiservices-injectable=false", "--metrics-listen-address="+injectorMetrics, "--v=2")
	for _, cmd := range []*exec.Cmd{controller, cainjector} {
		cmd.Env = append(os.Environ(), "KUBECONFIG="+e.KubeconfigPath)
	}
	if cm.controller, err = e.startProcess("cert-manager's controller", cm.ControllerLog, controller); err != nil {
		return nil, err
	}
	if cm.cainjector, err = e.startProcess("cert-manager's cainjector", cm.CAInjectorLog, cainjector); err != nil {
		return nil, errors.Join(err, cm.Stop())
	}
	if err := cm.awaitListening(ctx, map[string]string{healthz: cm.ControllerLog, metrics: cm.ControllerLog,
		injectorMetrics: cm.CAInjectorLog}); err != nil {
		return nil, errors.Join(err, cm.Stop())
	}
	return cm, nil
}

// awaitListening returns once every address listens, or with an error naming the log of the process that
// does not (or exited).
func (cm *CertManager) awaitListening(ctx context.Context, addrs map[string]string) error {
	for addr, log := range addrs {
		if err := waitListening(ctx, addr); err != nil {
			return fmt.Errorf("cert-manager did not listen on %s (log: %s): %w", addr, log, err)
		}
	}
	for _, p := range []*process{cm.controller, cm.cainjector} {
		select {
		case <-p.exited:
			err := p.err
			if err == nil {
				err = errors.New("exit status 0")
			}
			return fmt.Errorf("%s exited (log: %s): %w", p.what, p.log, err)
		default:
		}
	}
	return nil
}

// Stop ends the controller and the cainjector (SIGTERM, then SIGKILL after 30 s) and waits for them. It may
// be called more than once.
func (cm *CertManager) Stop() error {
	var errs []error
	for _, p := range []*process{cm.cainjector, cm.controller} {
		if p == nil {
			continue
		}
		select {
		case <-p.exited:
			continue
		default:
		}
		errs = append(errs, p.Terminate(30*time.Second))
	}
	return errors.Join(errs...)
}

// freeLocalAddrs returns n distinct loopback addresses nothing listens on at the moment.
func freeLocalAddrs(n int) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		addr, err := FreeLocalAddr()
		if err != nil {
			return nil, err
		}
		if !seen[addr] {
			seen[addr] = true
			out = append(out, addr)
		}
	}
	return out, nil
}
