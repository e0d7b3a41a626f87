package harness

import (
	"encoding/pem"
	"testing"
)

// AnotherCA returns the PEM of a fresh CA that signed nothing: a provider's CA as an HTTPS proxy or a
// recycled address would not present it.
func AnotherCA(tb testing.TB) []byte {
	tb.Helper()
	_, cert, err := newCA("another CA")
	if err != nil {
		tb.Fatalf("creating a CA: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}
