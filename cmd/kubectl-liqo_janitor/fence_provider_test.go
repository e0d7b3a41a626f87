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
		_, stderr, err := kubectlFence(t, "", append([]string{dead.ID}, args...)...)
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
		_, stderr, err := kubectlFence(t, "", append([]string{dead.ID}, args...)...)
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
	out, _, err := kubectlFence(t, "", dead.ID, "--dry-run")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring(fmt.Sprintf("No --provider-kubeconfig: using the control-plane identity of Secret %s/%s.",
		dead.TenantNS, dead.IdentitySecret.Name)))
}
