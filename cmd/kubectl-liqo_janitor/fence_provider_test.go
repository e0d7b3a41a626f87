package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/liqotech/liqo/pkg/consts"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
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

// execKubeconfig is a kubeconfig of the provider whose credentials come from an exec plugin that
// creates marker, then hands out a token.
func execKubeconfig(t *testing.T, prov *harness.Env, marker string) []byte {
	t.Helper()
	g := NewWithT(t)
	kc, err := clientcmd.LoadFromFile(prov.KubeconfigPath)
	g.Expect(err).NotTo(HaveOccurred())
	credential := `{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"from-the-plugin"}}`
	for name := range kc.AuthInfos {
		kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1",
			Command: "/bin/sh", Args: []string{"-c", fmt.Sprintf("touch %q; echo '%s'", marker, credential)},
			InteractiveMode: clientcmdapi.NeverExecInteractiveMode}}
	}
	data, err := clientcmd.Write(*kc)
	g.Expect(err).NotTo(HaveOccurred())
	return data
}

func setIdentityKubeconfig(t *testing.T, p *fixture.Provider, kubeconfig []byte) {
	t.Helper()
	testEnv := harness.Require(t)
	secret := p.IdentitySecret.DeepCopy()
	NewWithT(t).Expect(testEnv.Client.Get(t.Context(), client.ObjectKeyFromObject(secret), secret)).To(Succeed())
	secret.Data = map[string][]byte{consts.KubeconfigSecretField: kubeconfig}
	NewWithT(t).Expect(testEnv.Client.Update(t.Context(), secret)).To(Succeed())
}

func TestFenceNeverRunsAnExecPluginFromATenantSecret(t *testing.T) {
	g := NewWithT(t)
	dead, _, prov := returned(t)
	w, _, _ := sameNamespaces(t, prov, dead.ID)
	marker := filepath.Join(t.TempDir(), "the-plugin-ran")
	setIdentityKubeconfig(t, dead, execKubeconfig(t, prov, marker))
	before, consumerBefore := providerRVs(t, prov, append(w.mine, w.kept...)), rvs(t, dead)

	for _, args := range [][]string{{"--dry-run"}, {"--dry-run", "--all"}, {"--yes"}, {"--yes", "--all"}} {
		_, stderr, err := fence(t, "", append([]string{dead.ID}, args...)...)
		g.Expect(err).To(HaveOccurred(), "fence %s", strings.Join(args, " "))
		t.Log("fence " + strings.Join(args, " ") + " refused:\n" + stderr)
		_, statErr := os.Stat(marker)
		g.Expect(os.IsNotExist(statErr)).To(BeTrue(), "the exec plugin never ran (fence %s)", strings.Join(args, " "))
		g.Expect(stderr).To(ContainSubstring(fmt.Sprintf(`no --provider-kubeconfig, and the kubeconfig in Secret %s/%s (key "kubeconfig") uses an exec credential plugin (command "/bin/sh").`,
			dead.TenantNS, dead.IdentitySecret.Name)))
		g.Expect(stderr).To(ContainSubstring("it never runs its exec or auth-provider credential plugins nor reads files it names, not even with --dry-run"))
		g.Expect(stderr).To(ContainSubstring("Pass --provider-kubeconfig <file> with a kubeconfig of an admin of the provider " + dead.ID + "."))
	}
	g.Expect(providerRVs(t, prov, append(w.mine, w.kept...))).To(Equal(before), "nothing was deleted on the provider")
	g.Expect(rvs(t, dead)).To(Equal(consumerBefore), "nothing was written on the consumer")
	g.Expect(annotations(t, dead)).NotTo(HaveKey(liqojanitor.FencedAnnotation))
}

func TestFenceRefusesSeveralControlPlaneIdentitySecrets(t *testing.T) {
	g := NewWithT(t)
	testEnv := harness.Require(t)
	dead, _, prov := returned(t)
	w, _, _ := sameNamespaces(t, prov, dead.ID)
	before := providerRVs(t, prov, append(w.mine, w.kept...))
	remoteTenant := "liqo-tenant-" + consumerID + "-" + strings.ToLower(dead.ID)
	controlPlaneIdentity(t, dead, prov, "liqo-controlplane-"+consumerID, remoteTenant)
	other := testEnv.Namespace(t)
	decoy := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kubeconfig-controlplane-" + dead.ID, Namespace: other,
		Labels: map[string]string{liqojanitor.RemoteClusterIDLabel: dead.ID, liqojanitor.IdentityTypeLabel: liqojanitor.ControlPlaneIdentity}},
		Data: map[string][]byte{consts.KubeconfigSecretField: execKubeconfig(t, prov, filepath.Join(t.TempDir(), "the-plugin-ran"))}}
	g.Expect(testEnv.Client.Create(t.Context(), decoy)).To(Succeed())

	for _, args := range [][]string{{"--dry-run"}, {"--yes", "--all"}} {
		_, stderr, err := fence(t, "", append([]string{dead.ID}, args...)...)
		g.Expect(err).To(HaveOccurred())
		t.Log("fence " + strings.Join(args, " ") + " refused:\n" + stderr)
		g.Expect(stderr).To(ContainSubstring(fmt.Sprintf("no --provider-kubeconfig, and 2 Secrets labelled liqo.io/remote-cluster-id=%s,liqo.io/identity-type=ControlPlane",
			dead.ID)))
		g.Expect(stderr).To(ContainSubstring(dead.TenantNS + "/" + dead.IdentitySecret.Name))
		g.Expect(stderr).To(ContainSubstring(other + "/" + decoy.Name))
		g.Expect(stderr).To(ContainSubstring("where Liqo takes exactly one"))
	}
	g.Expect(providerRVs(t, prov, append(w.mine, w.kept...))).To(Equal(before), "nothing was deleted on the provider")
	g.Expect(annotations(t, dead)).NotTo(HaveKey(liqojanitor.FencedAnnotation))

	// Liqo's one Secret, wherever it is: the decoy gone, fence goes on with the identity (which may not
	// delete ShadowPods, in Liqo).
	g.Expect(testEnv.Client.Delete(t.Context(), decoy)).To(Succeed())
	out, _, err := fence(t, "", dead.ID, "--dry-run")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring(fmt.Sprintf("No --provider-kubeconfig: using the control-plane identity of Secret %s/%s.",
		dead.TenantNS, dead.IdentitySecret.Name)))
}
