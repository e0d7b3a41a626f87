package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	offloadingv1beta1 "github.com/liqotech/liqo/apis/offloading/v1beta1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// setProviderConfigMaps makes the cluster-ID ConfigMaps on the provider exactly cms: the others labelled
// as Liqo's are deleted. At the end of the test the provider has Liqo's one again, in namespace liqo,
// naming restore.
func setProviderConfigMaps(t *testing.T, prov *harness.Env, restore string, cms ...*corev1.ConfigMap) {
	t.Helper()
	g := NewWithT(t)
	apply := func(ctx context.Context, cms ...*corev1.ConfigMap) {
		var list corev1.ConfigMapList
		g.Expect(prov.Client.List(ctx, &list,
			client.MatchingLabels{liqojanitor.ClusterIDConfigMapNameLabel: liqojanitor.ClusterIDConfigMapNameValue})).To(Succeed())
		for i := range list.Items {
			g.Expect(client.IgnoreNotFound(prov.Client.Delete(ctx, &list.Items[i]))).To(Succeed())
		}
		for _, cm := range cms {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cm.Namespace}}
			if err := prov.Client.Create(ctx, ns); !apierrors.IsAlreadyExists(err) {
				g.Expect(err).NotTo(HaveOccurred())
			}
			g.Expect(prov.Client.Create(ctx, cm.DeepCopy())).To(Succeed())
		}
	}
	apply(t.Context(), cms...)
	t.Cleanup(func() {
		apply(context.Background(), harness.ClusterIDConfigMap(liqojanitor.DefaultLiqoNamespace, restore))
	})
}

// restrictedKubeconfig writes a kubeconfig of the provider acting as user, who may do on it everything
// fence does but list ConfigMaps.
func restrictedKubeconfig(t *testing.T, prov *harness.Env, user string) string {
	t.Helper()
	g := NewWithT(t)
	all := []string{"get", "list", "watch", "delete"}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "fencer-" + user}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces", "pods"}, Verbs: all},
		{APIGroups: []string{offloadingv1beta1.SchemeGroupVersion.Group}, Resources: []string{"shadowpods", "namespacemaps"}, Verbs: all},
		{APIGroups: []string{authv1beta1.GroupVersion.Group}, Resources: []string{"resourceslices", "renews"}, Verbs: all},
	}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	for _, obj := range []client.Object{role, binding} {
		if err := prov.Client.Create(t.Context(), obj); !apierrors.IsAlreadyExists(err) {
			g.Expect(err).NotTo(HaveOccurred())
		}
	}
	cfg, err := clientcmd.LoadFromFile(prov.KubeconfigPath)
	g.Expect(err).NotTo(HaveOccurred())
	for _, a := range cfg.AuthInfos {
		a.Impersonate = user
	}
	path := filepath.Join(t.TempDir(), "restricted.kubeconfig")
	g.Expect(clientcmd.WriteToFile(*cfg, path)).To(Succeed())
	return path
}

// tenantCopies lays out, in this consumer's tenant namespace on the provider, its copies of a
// ResourceSlice, a NamespaceMap and a Renew (no finalizer: nothing on the provider would remove it), and
// another consumer's Renew beside them.
func tenantCopies(t *testing.T, prov *harness.Env, w *world, providerID string) {
	t.Helper()
	c := prov.Client
	tenant := strings.ToLower(providerID) + "-tenant-" + consumerID
	w.create(t, c, tenantNamespace(tenant, consumerID), false)
	dropTenantNamespace(t, c, tenant)
	meta := func(name, origin string) metav1.ObjectMeta {
		m := copyOf(origin)
		m.Namespace, m.Name = tenant, name
		return m
	}
	w.create(t, c, &authv1beta1.ResourceSlice{ObjectMeta: meta(providerID, consumerID)}, true)
	w.create(t, c, &offloadingv1beta1.NamespaceMap{ObjectMeta: meta(providerID, consumerID)}, true)
	w.create(t, c, &authv1beta1.Renew{ObjectMeta: meta(providerID, consumerID)}, true)
	w.create(t, c, &authv1beta1.Renew{ObjectMeta: meta("theirs", otherConsumer)}, false)
}

func TestFenceRefusesAProviderItCannotIdentify(t *testing.T) {
	g := NewWithT(t)
	dead, _, prov := returned(t)
	w, _, _ := sameNamespaces(t, prov, dead.ID)
	tenantCopies(t, prov, w, dead.ID)
	everything := append(append([]client.Object{}, w.mine...), w.kept...)
	providerBefore, consumerBefore := providerRVs(t, prov, everything), rvs(t, dead)
	elsewhere := "liqo-elsewhere-" + strings.ToLower(dead.ID)
	labelled := liqojanitor.ClusterIDConfigMapNameLabel + "=" + liqojanitor.ClusterIDConfigMapNameValue
	second := harness.ClusterIDConfigMap(liqojanitor.DefaultLiqoNamespace, dead.ID)
	second.Name = "another-clusterid-configmap"

	for name, tc := range map[string]struct {
		configMaps []*corev1.ConfigMap
		kubeconfig string
		want       []string
	}{
		"no cluster-ID ConfigMap on the provider": {
			want: []string{"fence could not read the provider's Liqo cluster ID through --provider-kubeconfig " + prov.KubeconfigPath +
				": no ConfigMap labelled " + labelled + " in namespace liqo.",
				"It acts only on a provider whose Liqo cluster ID it read there and that is " + dead.ID,
				"pass --provider-liqo-namespace <namespace>", "If Liqo is not installed there"},
		},
		"the cluster-ID ConfigMap may not be read": {
			configMaps: []*corev1.ConfigMap{harness.ClusterIDConfigMap(liqojanitor.DefaultLiqoNamespace, dead.ID)},
			kubeconfig: restrictedKubeconfig(t, prov, "fencer"),
			want: []string{"is forbidden", "Pass --provider-kubeconfig <file> with a kubeconfig of an admin of the provider " + dead.ID +
				" (who may list ConfigMaps in namespace liqo there)."},
		},
		"two cluster-ID ConfigMaps, where Liqo takes one": {
			configMaps: []*corev1.ConfigMap{harness.ClusterIDConfigMap(liqojanitor.DefaultLiqoNamespace, dead.ID), second},
			want: []string{"2 ConfigMaps labelled " + labelled + " in namespace liqo (liqo/another-clusterid-configmap, " +
				"liqo/liqo-clusterid-configmap), where Liqo takes exactly one", "Liqo itself cannot read its cluster ID there either"},
		},
		"a cluster-ID ConfigMap without CLUSTER_ID": {
			configMaps: []*corev1.ConfigMap{harness.ClusterIDConfigMap(liqojanitor.DefaultLiqoNamespace, "")},
			want:       []string{"ConfigMap liqo/liqo-clusterid-configmap has no CLUSTER_ID"},
		},
		"the provider names another cluster": {
			configMaps: []*corev1.ConfigMap{harness.ClusterIDConfigMap(liqojanitor.DefaultLiqoNamespace, "somebody-else")},
			want: []string{"wrong provider: --provider-kubeconfig " + prov.KubeconfigPath + " reaches the Liqo cluster somebody-else " +
				"(ConfigMap liqo/liqo-clusterid-configmap there), not " + dead.ID},
		},
		"Liqo in another namespace on the provider, without --provider-liqo-namespace": {
			configMaps: []*corev1.ConfigMap{harness.ClusterIDConfigMap(elsewhere, dead.ID)},
			want:       []string{"no ConfigMap labelled " + labelled + " in namespace liqo.", "pass --provider-liqo-namespace <namespace>"},
		},
	} {
		for _, all := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "", true: ", --all"}[all], func(t *testing.T) {
				g := NewWithT(t)
				setProviderConfigMaps(t, prov, dead.ID, tc.configMaps...)
				kubeconfig := prov.KubeconfigPath
				if tc.kubeconfig != "" {
					kubeconfig = tc.kubeconfig
				}
				args := []string{dead.ID, "--provider-kubeconfig", kubeconfig, "--yes", "--timeout", "10s"}
				if all {
					args = append(args, "--all")
				}
				out, stderr, err := kubectlFence(t, "", args...)
				g.Expect(err).To(HaveOccurred(), "fence must refuse:\n%s", out)
				t.Log("fence refused:\n" + stderr)
				for _, want := range tc.want {
					g.Expect(stderr).To(ContainSubstring(want))
				}
				g.Expect(providerRVs(t, prov, everything)).To(Equal(providerBefore), "nothing was deleted on the provider")
				g.Expect(annotations(t, dead)).NotTo(HaveKey(liqojanitor.FencedAnnotation), "nothing was recorded")
				g.Expect(rvs(t, dead)).To(Equal(consumerBefore), "nothing was written on the consumer")
			})
		}
	}

	// Liqo's namespace on the provider is its own flag: this consumer's stays liqo.
	setProviderConfigMaps(t, prov, dead.ID, harness.ClusterIDConfigMap(elsewhere, dead.ID))
	out, _, err := kubectlFence(t, dead.ID+"\n", dead.ID, "--provider-kubeconfig", prov.KubeconfigPath, "--provider-liqo-namespace", elsewhere,
		"--all", "--timeout", "2m")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("Its Liqo cluster ID there: " + dead.ID + " (ConfigMap " + elsewhere + "/liqo-clusterid-configmap there)"))
	g.Expect(allGone(t, prov, w.mine)()).To(BeEmpty())
	rec, _ := liqojanitor.ParseFenceRecord(annotations(t, dead)[liqojanitor.FencedAnnotation])
	g.Expect(rec.Counts).To(Equal("shadowpods 3, pods 3, resourceslices 1, namespacemaps 1, renews 1, namespaces 0"))
}

func TestFenceRecordsAProviderWithNothingLeftVerifiedClean(t *testing.T) {
	g := NewWithT(t)
	dead, _, prov := returned(t)
	w := &world{}
	ns := prov.Namespace(t)
	w.shadowPod(t, prov.Client, ns, "theirs", otherConsumer, dead.ID, false)
	w.shadowPod(t, prov.Client, ns, "elsewhere", consumerID, "another-provider", false)
	before := providerRVs(t, prov, w.kept)

	out, _, err := kubectlFence(t, "", dead.ID, "--provider-kubeconfig", prov.KubeconfigPath, "--all", "--dry-run")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("Nothing of this consumer is left on the provider: fence deletes nothing there and records it verified clean."))
	g.Expect(annotations(t, dead)).NotTo(HaveKey(liqojanitor.FencedAnnotation), "a dry run records nothing")

	// Nothing of this consumer there, but the provider is not identified (it names another cluster): the
	// alarm's end is never recorded.
	setProviderConfigMaps(t, prov, dead.ID, harness.ClusterIDConfigMap(liqojanitor.DefaultLiqoNamespace, "somebody-else"))
	out, stderr, err := kubectlFence(t, "", dead.ID, "--provider-kubeconfig", prov.KubeconfigPath, "--all", "--yes", "--timeout", "10s")
	g.Expect(err).To(HaveOccurred(), "fence must refuse:\n%s", out)
	g.Expect(stderr).To(ContainSubstring("wrong provider"))
	g.Expect(out + stderr).NotTo(ContainSubstring("verified clean"))
	g.Expect(annotations(t, dead)).NotTo(HaveKey(liqojanitor.FencedAnnotation), "nothing recorded for a provider it did not identify")
	setProviderConfigMaps(t, prov, dead.ID, harness.ClusterIDConfigMap(liqojanitor.DefaultLiqoNamespace, dead.ID))

	out, _, err = kubectlFence(t, dead.ID+"\n", dead.ID, "--provider-kubeconfig", prov.KubeconfigPath, "--all")
	g.Expect(err).NotTo(HaveOccurred())
	t.Log("fence --all on a clean provider:\n" + out)
	g.Expect(out).To(ContainSubstring("This records provider " + dead.ID + " verified clean on the ForeignCluster"))
	g.Expect(out).To(ContainSubstring("Verified clean: nothing of this consumer is on the provider."))
	rec, ok := liqojanitor.ParseFenceRecord(annotations(t, dead)[liqojanitor.FencedAnnotation])
	g.Expect(ok && rec.By != "").To(BeTrue())
	g.Expect(rec.Counts).To(Equal("verified clean (shadowpods 0, pods 0, resourceslices 0, namespacemaps 0, renews 0, namespaces 0)"))
	g.Expect(providerRVs(t, prov, w.kept)).To(Equal(before), "another consumer's, and this consumer's for another provider")
}
