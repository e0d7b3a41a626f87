package harness

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ServiceClusterIPRange is the range of Service ClusterIPs (envtest's own default, set explicitly so that
// kubernetesServiceIP follows from it): the API server's in-cluster Service, kubernetes.default, gets its
// first address.
const ServiceClusterIPRange = "10.0.0.0/24"

// kubernetesServiceIP is the ClusterIP of the kubernetes Service, which a pod's in-cluster config dials
// (KUBERNETES_SERVICE_HOST) and verifies the serving certificate against.
const kubernetesServiceIP = "10.0.0.1"

// Files of the PKI that servePods writes into the API server's certificate directory. envtest writes
// apiserver.crt and the service-account signer itself only when apiserver.crt is absent
// (controlplane.APIServer.populateAPIServerCerts), and its client CA (client-cert-auth-ca.crt) always.
const (
	caFile           = "ca.crt"
	servingCertFile  = "apiserver.crt"
	servingKeyFile   = "apiserver.key"
	saSignerKeyFile  = "sa-signer.key"
	saSignerCertFile = "sa-signer.crt"
	clientCAFile     = "client-cert-auth-ca.crt"
)

// servePods makes the API server one that pods reach, for Options.AdvertiseAddress: it listens on addr
// (which it advertises in the kubernetes Service's endpoints), serves a certificate valid for addr and
// for the kubernetes Service's ClusterIP and names (envtest's is for localhost and the listen address
// only, so a pod's client would refuse it), and admits pods with their ServiceAccount's token volume
// (envtest disables the ServiceAccount admission plugin). It returns the certificate directory, which
// the caller removes (envtest removes only a directory it created).
func servePods(env *envtest.Environment, addr string) (string, error) {
	port, err := freePort(addr)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", dirPrefix+"pki-")
	if err != nil {
		return "", err
	}
	caPEM, err := writeServingPKI(dir, addr)
	if err != nil {
		return dir, err
	}
	api := env.ControlPlane.GetAPIServer()
	api.CertDir = dir
	// SecureServing's address, port and CA, which envtest only defaults when they are unset (both of the
	// address and port, or it picks a loopback address) and the admin's rest.Config trusts
	api.Address, api.Port, api.CA = addr, strconv.Itoa(port), caPEM
	api.Configure().
		Disable("disable-admission-plugins").
		Set("service-cluster-ip-range", ServiceClusterIPRange).
		Set("advertise-address", addr)
	return dir, nil
}

// freePort returns a TCP port free on addr now.
func freePort(addr string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		return 0, fmt.Errorf("finding a free port on %s (is it an address of this machine?): %w", addr, err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// writeServingPKI writes a CA, the API server's serving certificate and key, and the service-account
// signing key into dir, and returns the CA's PEM.
func writeServingPKI(dir, addr string) ([]byte, error) {
	caKey, caCert, err := newCA("liqo-janitor test API server CA")
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(addr), net.ParseIP(kubernetesServiceIP)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("signing the API server's serving certificate: %w", err)
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caCert.Raw})
	files := map[string][]byte{caFile: caPEM, servingCertFile: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
	if files[servingKeyFile], err = keyPEM(key); err != nil {
		return nil, err
	}
	if files[saSignerKeyFile], err = keyPEM(saKey); err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	files[saSignerCertFile] = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	return caPEM, nil
}

// newCA returns a fresh self-signed CA named name, valid from an hour ago for a day.
func newCA(name string) (*ecdsa.PrivateKey, *x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the CA %q: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	return key, cert, err
}

func keyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ClientCAFile is the CA of the API server's client certificates (the admin's in Config), which a kubelet
// trusts to authenticate the API server's and the tests' requests.
func (e *Env) ClientCAFile() string {
	return filepath.Join(e.env.ControlPlane.APIServer.CertDir, clientCAFile)
}
