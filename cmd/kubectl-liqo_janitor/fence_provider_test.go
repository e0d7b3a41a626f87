package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/liqotech/liqo/pkg/consts"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

// TestFenceUsesOnlyTheSecretLiqosIdentityNames: a Secret labelled as Liqo labels the control-plane
// identity's, planted in another namespace and pointing at another API server that claims the provider's
// cluster ID, is never used — not when Liqo's Identity is gone, not beside it.
func TestFenceUsesOnlyTheSecretLiqosIdentityNames(t *testing.T) {
	g := NewWithT(t)
	testEnv := harness.Require(t)
	dead, _, impostor := returned(t) // the provider lane claims the dead provider's cluster ID
	w, _, _ := sameNamespaces(t, impostor, dead.ID)
	// The provider itself is gone: the janitor kept its address and CA (another cluster's than the lane's).
	keepRecord(t, janitorNamespace(t), dead, liqojanitor.Targets{APIServer: "https://127.0.0.1:1", CA: testEnv.Config.CAData})
	other := testEnv.Namespace(t)
	planted := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kubeconfig-controlplane-" + dead.ID, Namespace: other,
		Labels: map[string]string{liqojanitor.RemoteClusterIDLabel: dead.ID, liqojanitor.IdentityTypeLabel: liqojanitor.ControlPlaneIdentity}}}
	kubeconfig, err := os.ReadFile(impostor.KubeconfigPath)
	g.Expect(err).NotTo(HaveOccurred())
	planted.Data = map[string][]byte{consts.KubeconfigSecretField: kubeconfig}
	g.Expect(testEnv.Client.Create(t.Context(), planted)).To(Succeed())
	// Liqo's Identity and its Secret's labels gone (the tenant's teardown): the planted Secret is the only
	// one labelled.
	g.Expect(testEnv.Client.Delete(t.Context(), &authv1beta1.Identity{ObjectMeta: metav1.ObjectMeta{
		Name: "controlplane-" + dead.ID, Namespace: dead.TenantNS}})).To(Succeed())
	unlabelled := dead.IdentitySecret.DeepCopy()
	g.Expect(testEnv.Client.Patch(t.Context(), unlabelled, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":null}}`)))).To(Succeed())
	before, consumerBefore := providerRVs(t, impostor, append(w.mine, w.kept...)), rvs(t, dead)
	returnedRecord := annotations(t, dead)[liqojanitor.CleanupAnnotation]

	for _, args := range [][]string{{"--dry-run"}, {"--yes"}, {"--yes", "--all"}} {
		out, stderr, err := kubectlFence(t, "", append([]string{dead.ID}, args...)...)
		g.Expect(err).To(HaveOccurred(), "fence %s must refuse:\n%s", strings.Join(args, " "), out)
		t.Log("fence " + strings.Join(args, " ") + " refused:\n" + stderr)
		g.Expect(stderr).To(ContainSubstring(fmt.Sprintf("no --provider-kubeconfig, and no ControlPlane Identity of %s in its tenant namespace %s "+
			"(fence uses only the Secret that Identity names, never one found by its labels): pass --provider-kubeconfig <file>", dead.ID, dead.TenantNS)))
		g.Expect(out+stderr).NotTo(ContainSubstring(other+"/"), "the planted Secret is never the way in")
	}
	g.Expect(providerRVs(t, impostor, append(w.mine, w.kept...))).To(Equal(before), "nothing was deleted on the impostor")
	g.Expect(rvs(t, dead)).To(Equal(consumerBefore), "nothing was written on the consumer: no fence record, the return still recorded")
	g.Expect(annotations(t, dead)).To(And(Not(HaveKey(liqojanitor.FencedAnnotation)), HaveKeyWithValue(liqojanitor.CleanupAnnotation, returnedRecord)))

	// Liqo's Identity back, naming its own Secret (without a kubeconfig yet): that Secret is the one
	// read, the planted one still ignored.
	identityNaming(t, dead, dead.IdentitySecret.Name)
	_, stderr, err := kubectlFence(t, "", dead.ID, "--dry-run")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring(fmt.Sprintf(`no --provider-kubeconfig, and Secret %s/%s has no "kubeconfig" key`, dead.TenantNS, dead.IdentitySecret.Name)))
	g.Expect(annotations(t, dead)).NotTo(HaveKey(liqojanitor.FencedAnnotation))
}
