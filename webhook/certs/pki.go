package certs

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"time"
)

// backdate is how far before its issue a certificate becomes valid, for clocks a little behind ours.
const backdate = time.Minute

// keyPair is a certificate with its private key, parsed and as PEM.
type keyPair struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	keyPEM  []byte
}

// newCA makes a self-signed CA valid for validity from now. Its common name carries the time, as
// Kubernetes' own self-signed certificates do ("name@unix-time"), so that successive CAs are told apart.
func newCA(now time.Time, validity time.Duration) (*keyPair, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: fmt.Sprintf("liqo-janitor-webhook-ca@%d", now.Unix())},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	return sign(tmpl, nil)
}

// newServing makes a serving certificate for hosts signed by ca, valid for validity from now but never
// beyond ca itself.
func newServing(ca *keyPair, hosts []string, now time.Time, validity time.Duration) (*keyPair, error) {
	notAfter := now.Add(validity)
	if ca.cert.NotAfter.Before(notAfter) {
		notAfter = ca.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: hosts[0]},
		DNSNames:    hosts,
		NotBefore:   now.Add(-backdate),
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	return sign(tmpl, ca)
}

// sign gives tmpl a fresh P-256 key and a random serial, and signs it with parent (itself when nil).
func sign(tmpl *x509.Certificate, parent *keyPair) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	// RFC 5280 4.1.2.2: a positive serial of at most 20 octets.
	if tmpl.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127)); err != nil {
		return nil, err
	}
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &keyPair{cert: cert, key: key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})}, nil
}

// parseKeyPair reads a PEM certificate and its EC private key, as newCA and newServing write them.
func parseKeyPair(certPEM, keyPEM []byte) (*keyPair, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("the private key is a %T, not an ECDSA key", pair.PrivateKey)
	}
	return &keyPair{cert: pair.Leaf, key: key, certPEM: certPEM, keyPEM: keyPEM}, nil
}

// due reports whether cert has less than a third of validity left at now: rotation comes well before
// expiry, as cert-manager's default renewBefore (a third of the duration) does.
func due(cert *x509.Certificate, validity time.Duration, now time.Time) bool {
	return cert.NotAfter.Sub(now) < validity/3
}

// parseBundle reads every certificate of a PEM bundle; anything but certificates is an error.
func parseBundle(bundle []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for rest := bytes.TrimSpace(bundle); len(rest) > 0; rest = bytes.TrimSpace(rest) {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil || block.Type != "CERTIFICATE" {
			return nil, errors.New("the CA bundle holds something other than PEM certificates")
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, cert)
	}
	return certs, nil
}

// makeBundle is current first, then the certificates of previous that have not expired at now and are
// not current: the old CA stays trusted during a rotation, until it expires.
func makeBundle(current *x509.Certificate, previous []byte, now time.Time) []byte {
	out := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: current.Raw})
	old, _ := parseBundle(previous) // an unreadable bundle is replaced: only current is certain
	for _, c := range old {
		if now.Before(c.NotAfter) && !c.Equal(current) {
			out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
		}
	}
	return out
}

// verify checks that leaf serves host at now for a client that trusts bundle, as the API server does
// when it calls the webhook.
func verify(leaf *x509.Certificate, bundle []byte, host string, now time.Time) error {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		return errors.New("the CA bundle is empty or unreadable")
	}
	_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	return err
}

// servingValid reports whether serving was issued by ca for every one of hosts and is not due at now.
func servingValid(serving, ca *keyPair, hosts []string, now time.Time, validity time.Duration) bool {
	if due(serving.cert, validity, now) && serving.cert.NotAfter.Before(ca.cert.NotAfter) {
		return false
	}
	if !slices.Equal(slices.Sorted(slices.Values(serving.cert.DNSNames)), slices.Sorted(slices.Values(hosts))) {
		return false
	}
	return verify(serving.cert, ca.certPEM, hosts[0], now) == nil
}
