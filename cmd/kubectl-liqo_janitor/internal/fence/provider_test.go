package fence

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfigWith is a kubeconfig of server https://provider.example whose one user is auth, and whose
// cluster has a certificate-authority file when caFile is set.
func kubeconfigWith(auth *clientcmdapi.AuthInfo, caFile string) []byte {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["provider"] = &clientcmdapi.Cluster{Server: "https://provider.example", CertificateAuthority: caFile}
	kc.AuthInfos["consumer"] = auth
	kc.Contexts["provider"] = &clientcmdapi.Context{Cluster: "provider", AuthInfo: "consumer"}
	kc.CurrentContext = "provider"
	data, err := clientcmd.Write(*kc)
	if err != nil {
		panic(err)
	}
	return data
}

func TestSecretKubeconfigAllowsOnlyInlineCredentials(t *testing.T) {
	cert, key := []byte("-----BEGIN CERTIFICATE-----"), []byte("-----BEGIN EC PRIVATE KEY-----")
	exec := &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/steal", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
	for name, tc := range map[string]struct {
		kubeconfig []byte
		refused    string // "" when it is taken
	}{
		"an inline client certificate and key are taken": {kubeconfig: kubeconfigWith(&clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}, "")},
		"an inline token, impersonating, is taken":       {kubeconfig: kubeconfigWith(&clientcmdapi.AuthInfo{Token: "t", Impersonate: "liqo"}, "")},
		"an exec credential plugin is refused": {kubeconfig: kubeconfigWith(&clientcmdapi.AuthInfo{Exec: exec}, ""),
			refused: `uses an exec credential plugin (command "/bin/steal")`},
		"an exec credential plugin beside a token is refused": {kubeconfig: kubeconfigWith(&clientcmdapi.AuthInfo{Token: "t", Exec: exec}, ""),
			refused: "uses an exec credential plugin"},
		"an auth-provider plugin is refused": {kubeconfig: kubeconfigWith(&clientcmdapi.AuthInfo{Token: "t",
			AuthProvider: &clientcmdapi.AuthProviderConfig{Name: "oidc"}}, ""), refused: `uses an auth-provider plugin ("oidc")`},
		"a token file is refused": {kubeconfig: kubeconfigWith(&clientcmdapi.AuthInfo{TokenFile: "/root/.token"}, ""),
			refused: "uses a token file (/root/.token)"},
		"certificate and key files are refused": {kubeconfig: kubeconfigWith(&clientcmdapi.AuthInfo{ClientCertificate: "/c", ClientKey: "/k"}, ""),
			refused: "uses a client-certificate file (/c), a client-key file (/k)"},
		"a certificate-authority file is refused": {kubeconfig: kubeconfigWith(&clientcmdapi.AuthInfo{Token: "t"}, "/etc/ca.crt"),
			refused: "uses a certificate-authority file (/etc/ca.crt)"},
		"basic authentication is refused": {kubeconfig: kubeconfigWith(&clientcmdapi.AuthInfo{Username: "u", Password: "p"}, ""),
			refused: "uses basic authentication"},
		"no credentials are refused": {kubeconfig: kubeconfigWith(&clientcmdapi.AuthInfo{ClientCertificateData: cert}, ""),
			refused: "carries no inline client certificate and key, nor token"},
		"no current context is refused": {kubeconfig: []byte("apiVersion: v1\nkind: Config\n"), refused: `has no current context ("")`},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			cfg, err := secretKubeconfig(tc.kubeconfig)
			if tc.refused == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(cfg.ExecProvider).To(BeNil())
				g.Expect(cfg.Host).To(Equal("https://provider.example"))
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.refused)))
		})
	}
}
