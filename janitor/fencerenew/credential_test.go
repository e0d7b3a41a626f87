package fencerenew

import (
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestOnlyAnInlineVerifiedCredential: renew rule 1, each refusal saying what is wrong.
func TestOnlyAnInlineVerifiedCredential(t *testing.T) {
	good := func() *clientcmdapi.Config {
		kc := clientcmdapi.NewConfig()
		kc.Clusters["p"] = &clientcmdapi.Cluster{Server: "https://provider.example:6443", CertificateAuthorityData: []byte("ca")}
		kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
		kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "p", AuthInfo: "u", Namespace: "liqo-tenant-consumer"}
		kc.CurrentContext = "c"
		return kc
	}
	for _, tc := range []struct {
		name, want string
		edit       func(*clientcmdapi.Config)
	}{
		{"as fence-credential prints it", "", func(*clientcmdapi.Config) {}},
		{"a client certificate", "", func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("c"), ClientKeyData: []byte("k")}
		}},
		{"an exec plugin", "exec plugin", func(kc *clientcmdapi.Config) {
			kc.AuthInfos["u"].Exec = &clientcmdapi.ExecConfig{Command: "aws"}
		}},
		{"TLS unverified", "skips TLS verification", func(kc *clientcmdapi.Config) {
			kc.Clusters["p"].InsecureSkipTLSVerify, kc.Clusters["p"].CertificateAuthorityData = true, nil
		}},
		{"no CA", "certificate-authority-data", func(kc *clientcmdapi.Config) { kc.Clusters["p"].CertificateAuthorityData = nil }},
		{"a token file", "names files", func(kc *clientcmdapi.Config) { kc.AuthInfos["u"].TokenFile = "/tmp/t" }},
		{"no credential", "no token and no client certificate", func(kc *clientcmdapi.Config) { kc.AuthInfos["u"].Token = "" }},
		{"no namespace", "names no namespace", func(kc *clientcmdapi.Config) { kc.Contexts["c"].Namespace = "" }},
		{"impersonation", "impersonates", func(kc *clientcmdapi.Config) { kc.AuthInfos["u"].Impersonate = "admin" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kc := good()
			tc.edit(kc)
			b, err := clientcmd.Write(*kc)
			if err != nil {
				t.Fatal(err)
			}
			_, ns, err := restConfigFor(b)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "" && ns != "liqo-tenant-consumer":
				t.Fatalf("namespace %q", ns)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
}
