package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestWebhookCertificateIsHotReloaded starts the binary's wiring, as the chart's ServiceAccount, with a
// certificate directory, replaces tls.crt and tls.key there (as cert-manager does when it renews the
// Secret), and checks that the webhook server serves the new certificate without a restart.
func TestWebhookCertificateIsHotReloaded(t *testing.T) {
	g := NewWithT(t)
	asTheServiceAccount(t)
	dir := t.TempDir()
	writeCert(t, dir, "first")
	_, port, err := net.SplitHostPort(freeAddr(t))
	g.Expect(err).NotTo(HaveOccurred())

	o := parseFlags(t, "--namespace=liqo-janitor-system", "--metrics-bind-address=0", "--health-probe-bind-address=0", "--enable-janitor=false",
		"--webhook-port="+port, "--webhook-cert-dir="+dir)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx, o) }()
	t.Cleanup(func() { cancel(); NewWithT(t).Expect(<-done).To(Succeed()) })

	served := func() string {
		conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", port), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reading the served certificate only
		if err != nil {
			return ""
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	g.Eventually(served).WithTimeout(30 * time.Second).Should(Equal("first"))
	writeCert(t, dir, "renewed")
	g.Eventually(served).WithTimeout(30*time.Second).Should(Equal("renewed"), "served without a restart")
}

// writeCert writes a self-signed certificate for 127.0.0.1 with the given common name as tls.crt and
// tls.key in dir, each file replaced atomically.
func writeCert(t *testing.T, dir, cn string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for name, block := range map[string]*pem.Block{
		"tls.key": {Type: "EC PRIVATE KEY", Bytes: keyDER},
		"tls.crt": {Type: "CERTIFICATE", Bytes: der},
	} {
		var buf bytes.Buffer
		if err := pem.Encode(&buf, block); err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(dir, "."+name+".tmp")
		if err := os.WriteFile(tmp, buf.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}
