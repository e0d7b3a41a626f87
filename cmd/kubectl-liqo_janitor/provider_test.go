package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/provider"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// The provider fence's verbs run on a provider with its admin's kubeconfig: here the package's API server
// plays the provider (its Liqo cluster ID is TestMain's, consumerID), and each test lays out consumers of it.

// asProviderAdmin runs the plugin with the API server's admin kubeconfig and stdin.
func asProviderAdmin(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	testEnv := harness.Require(t)
	var out, errOut bytes.Buffer
	cmd := newRootCommand(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append([]string{"--kubeconfig", testEnv.KubeconfigPath}, args...))
	err = run(t.Context(), cmd)
	return out.String(), errOut.String(), err
}

// consumerOfProvider lays out what Liqo makes on a provider for a consumer: the tenant namespace (labelled
// as Liqo's pkg/tenantNamespace labels it) and the consumer's Tenant there, Active; it returns the
// consumer's cluster ID and the namespace.
func consumerOfProvider(t *testing.T) (id, ns string) {
	t.Helper()
	c := harness.Require(t).Client
	g := NewWithT(t)
	id = fixture.Prefix("fenced-consumer-")
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "liqo-tenant-", Labels: map[string]string{
		liqojanitor.RemoteClusterIDLabel: id, liqojanitor.TenantNamespaceLabel: "true"}}}
	g.Expect(c.Create(t.Context(), n)).To(Succeed())
	t.Cleanup(func() { _ = c.Delete(context.Background(), n) })
	tenant := &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: id, Namespace: n.Name},
		Spec: authv1beta1.TenantSpec{ClusterID: liqov1beta1.ClusterID(id), TenantCondition: authv1beta1.TenantConditionActive}}
	g.Expect(c.Create(t.Context(), tenant)).To(Succeed())
	return id, n.Name
}

// tokenController fills the fence credential's token Secret in ns as Kubernetes' token controller does
// (harness.PlayTokenController), until the end of the test.
func tokenController(t *testing.T, ns string) {
	t.Helper()
	stop, err := harness.Require(t).PlayTokenController(context.Background(), ns)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(stop)
}

// credentialClient is a client with the kubeconfig fence-credential printed.
func credentialClient(t *testing.T, kubeconfig string) client.Client {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(kubeconfig))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	c, err := client.New(cfg, client.Options{Scheme: harness.Require(t).Scheme})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return c
}

// names lists the names of the objects of list in ns.
func names(t *testing.T, ns string, list client.ObjectList) []string {
	t.Helper()
	NewWithT(t).Expect(harness.Require(t).Client.List(t.Context(), list, client.InNamespace(ns))).To(Succeed())
	var out []string
	items, err := metaItems(list)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for _, o := range items {
		out = append(out, o.GetName())
	}
	return out
}

func metaItems(list client.ObjectList) ([]metav1.Object, error) {
	var out []metav1.Object
	switch l := list.(type) {
	case *corev1.ServiceAccountList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.SecretList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *rbacv1.RoleList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *rbacv1.RoleBindingList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	default:
		return nil, fmt.Errorf("unexpected list %T", list)
	}
	return out, nil
}

// TestFenceCredentialGrantsTheLeaseOnly: fence-credential makes exactly the ServiceAccount, Role,
// RoleBinding and token Secret in the consumer's tenant namespace, idempotently, and prints a kubeconfig
// (the server, the CA, a token, no exec plugin) that may get, update and patch the Lease liqo-janitor-fence
// and nothing else: not another Lease, not a list of them, no Secret, no pod; stderr says how the
// consumer's admin stores it, and warns while the Tenant does not opt the consumer in. --revoke deletes the
// four, and the kubeconfig no longer works.
func TestFenceCredentialGrantsTheLeaseOnly(t *testing.T) {
	testEnv := harness.Require(t)
	c := testEnv.Client
	g := NewWithT(t)
	id, ns := consumerOfProvider(t)
	fenceLease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: liqojanitor.FenceLeaseName, Namespace: ns}}
	otherLease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: liqojanitor.FenceStateLeaseName, Namespace: ns}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: ns}, StringData: map[string]string{"k": "v"}}
	for _, o := range []client.Object{fenceLease, otherLease, secret} {
		g.Expect(c.Create(t.Context(), o)).To(Succeed())
	}
	tokenController(t, ns)

	stdout, stderr, err := asProviderAdmin(t, "fence-credential", id)
	g.Expect(err).NotTo(HaveOccurred(), stderr)
	// stderr: the note for the consumer's admin (this provider's cluster ID is TestMain's), and the opt-in
	g.Expect(stderr).To(ContainSubstring("kubectl -n liqo-janitor-system create secret generic liqo-janitor-provider-fence-" + consumerID +
		" --from-file=kubeconfig=<this file>"))
	g.Expect(stderr).To(ContainSubstring("label secret liqo-janitor-provider-fence-" + consumerID + " liqo-janitor.io/provider-fence=" + consumerID))
	g.Expect(stderr).To(ContainSubstring("Warning: Tenant " + ns + "/" + id + " has no " + liqojanitor.FenceAfterAnnotation))
	g.Expect(stderr).To(ContainSubstring("kubectl annotate tenant -n " + ns + " " + id + " " + liqojanitor.FenceAfterAnnotation + "=120s"))

	// the kubeconfig: this server, its CA, a token, nothing to run
	kc, err := clientcmd.Load([]byte(stdout))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kc.Clusters).To(HaveLen(1))
	g.Expect(kc.AuthInfos).To(HaveLen(1))
	for _, cl := range kc.Clusters {
		g.Expect(cl.Server).To(Equal(strings.TrimSuffix(testEnv.Config.Host, "/")), "the kubeconfig's server")
		g.Expect(cl.CertificateAuthorityData).To(Equal(testEnv.Config.CAData))
		g.Expect(cl.InsecureSkipTLSVerify).To(BeFalse())
	}
	for _, u := range kc.AuthInfos {
		g.Expect(u.Token).NotTo(BeEmpty())
		g.Expect(u.Exec).To(BeNil())
		g.Expect(u.AuthProvider).To(BeNil())
		g.Expect(u.ClientCertificateData).To(BeEmpty())
	}

	// exactly these objects in the tenant namespace
	name := liqojanitor.FenceCredentialName
	g.Expect(names(t, ns, &corev1.ServiceAccountList{})).To(ConsistOf(name))
	g.Expect(names(t, ns, &rbacv1.RoleList{})).To(ConsistOf(name))
	g.Expect(names(t, ns, &rbacv1.RoleBindingList{})).To(ConsistOf(name))
	g.Expect(names(t, ns, &corev1.SecretList{})).To(ConsistOf(provider.TokenSecretName, "kept"))
	role := &rbacv1.Role{}
	g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, role)).To(Succeed())
	g.Expect(role.Rules).To(Equal([]rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
		ResourceNames: []string{liqojanitor.FenceLeaseName}, Verbs: []string{"get", "update", "patch"}}}))
	rb := &rbacv1.RoleBinding{}
	g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, rb)).To(Succeed())
	g.Expect(rb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}))
	g.Expect(rb.Subjects).To(Equal([]rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}}))
	token := &corev1.Secret{}
	g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: provider.TokenSecretName}, token)).To(Succeed())
	g.Expect(token.Type).To(Equal(corev1.SecretTypeServiceAccountToken))
	sa := &corev1.ServiceAccount{}
	g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, sa)).To(Succeed())

	// what the credential may do: the Lease liqo-janitor-fence, get, update and patch; nothing else
	cred := credentialClient(t, stdout)
	lease := &coordinationv1.Lease{}
	g.Expect(cred.Get(t.Context(), client.ObjectKeyFromObject(fenceLease), lease)).To(Succeed())
	lease.Spec.HolderIdentity = ptr.To("consumer-janitor")
	lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	g.Expect(cred.Update(t.Context(), lease)).To(Succeed(), "update")
	patch := client.MergeFrom(lease.DeepCopy())
	lease.Spec.LeaseDurationSeconds = ptr.To[int32](10)
	g.Expect(cred.Patch(t.Context(), lease, patch)).To(Succeed(), "patch")
	forbidden := map[string]error{
		"another Lease":     cred.Get(t.Context(), client.ObjectKeyFromObject(otherLease), &coordinationv1.Lease{}),
		"a list of Leases":  cred.List(t.Context(), &coordinationv1.LeaseList{}, client.InNamespace(ns)),
		"a new Lease":       cred.Create(t.Context(), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: ns}}),
		"its Lease deleted": cred.Delete(t.Context(), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: liqojanitor.FenceLeaseName, Namespace: ns}}),
		"a Secret":          cred.Get(t.Context(), client.ObjectKeyFromObject(secret), &corev1.Secret{}),
		"its own token":     cred.Get(t.Context(), client.ObjectKeyFromObject(token), &corev1.Secret{}),
		"pods":              cred.List(t.Context(), &corev1.PodList{}, client.InNamespace(ns)),
		"the Tenant":        cred.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: id}, &authv1beta1.Tenant{}),
	}
	for what, err := range forbidden {
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s: %v", what, err)
	}

	// again, opted in and for another address: the same objects, no warning, the server given
	g.Expect(c.Patch(t.Context(), &authv1beta1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: id, Namespace: ns}},
		client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"`+liqojanitor.FenceAfterAnnotation+`":"120s"}}}`)))).To(Succeed())
	stdout, stderr, err = asProviderAdmin(t, "fence-credential", id, "--provider-server", "https://provider.example:6443")
	g.Expect(err).NotTo(HaveOccurred(), stderr)
	g.Expect(stderr).NotTo(ContainSubstring("Warning"))
	kc, err = clientcmd.Load([]byte(stdout))
	g.Expect(err).NotTo(HaveOccurred())
	for _, cl := range kc.Clusters {
		g.Expect(cl.Server).To(Equal("https://provider.example:6443"))
	}
	again := &corev1.ServiceAccount{}
	g.Expect(c.Get(t.Context(), client.ObjectKeyFromObject(sa), again)).To(Succeed())
	g.Expect(again.UID).To(Equal(sa.UID), "made once")
	g.Expect(names(t, ns, &rbacv1.RoleList{})).To(ConsistOf(name))

	// revoked: the four are gone, and the kubeconfig no longer authenticates
	stdout, stderr, err = asProviderAdmin(t, "fence-credential", id, "--revoke")
	g.Expect(err).NotTo(HaveOccurred(), stderr)
	g.Expect(stdout).To(ContainSubstring("Revoked the fence credential of consumer " + id))
	g.Expect(stderr).To(ContainSubstring("still carries "+liqojanitor.FenceAfterAnnotation), "revoking stops its renewals: the agent will fence it")
	g.Expect(names(t, ns, &corev1.ServiceAccountList{})).To(BeEmpty())
	g.Expect(names(t, ns, &rbacv1.RoleList{})).To(BeEmpty())
	g.Expect(names(t, ns, &rbacv1.RoleBindingList{})).To(BeEmpty())
	g.Expect(names(t, ns, &corev1.SecretList{})).To(ConsistOf("kept"))
	g.Eventually(func() bool {
		return apierrors.IsUnauthorized(cred.Get(t.Context(), client.ObjectKeyFromObject(fenceLease), &coordinationv1.Lease{}))
	}).WithTimeout(10*time.Second).Should(BeTrue(), "a revoked credential's token no longer authenticates")
}

// TestFenceCredentialFindsOneTenantNamespace: as Liqo, the consumer's tenant namespace is the one
// labelled with its cluster ID and as a tenant namespace; none or several are refused, with the next step,
// and nothing is made.
func TestFenceCredentialFindsOneTenantNamespace(t *testing.T) {
	testEnv := harness.Require(t)
	g := NewWithT(t)
	_, stderr, err := asProviderAdmin(t, "fence-credential", "nobody-here")
	g.Expect(err).To(HaveOccurred())
	g.Expect(stderr).To(ContainSubstring(`no tenant namespace of consumer "nobody-here" on this cluster`))
	g.Expect(stderr).To(ContainSubstring("kubectl get namespaces -l " + liqojanitor.TenantNamespaceLabel))

	id, ns := consumerOfProvider(t)
	twin := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "liqo-tenant-", Labels: map[string]string{
		liqojanitor.RemoteClusterIDLabel: id, liqojanitor.TenantNamespaceLabel: "true"}}}
	g.Expect(testEnv.Client.Create(t.Context(), twin)).To(Succeed())
	t.Cleanup(func() { _ = testEnv.Client.Delete(context.Background(), twin) })
	for _, args := range [][]string{{"fence-credential", id}, {"unfence", id, "--confirm=" + id}} {
		_, stderr, err = asProviderAdmin(t, args...)
		g.Expect(err).To(HaveOccurred())
		g.Expect(stderr).To(ContainSubstring(fmt.Sprintf("2 tenant namespaces of consumer %q", id)), "%v", args)
	}
	g.Expect(names(t, ns, &corev1.ServiceAccountList{})).To(BeEmpty())
	g.Expect(names(t, twin.Name, &corev1.ServiceAccountList{})).To(BeEmpty())
}

// fencedLayout is a consumer the agent fenced: its Tenant in condition, with the fence's marks (fenced-at
// always, cordoned-by-fence if byFence), the agent's record with a fence, and the copy on the consumer's
// Lease.
type fencedLayout struct {
	id, ns string
	record liqojanitor.FenceState
}

func fenced(t *testing.T, condition authv1beta1.TenantCondition, byFence bool) fencedLayout {
	t.Helper()
	c := harness.Require(t).Client
	g := NewWithT(t)
	id, ns := consumerOfProvider(t)
	at := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	observed, armed, fencedAt := at.Add(-2*time.Minute), at.Add(-10*time.Minute), at
	record := liqojanitor.FenceState{SeenRenewal: "2026-01-01T00:00:00Z consumer-janitor", SeenRV: "42", ObservedAt: &observed, ArmedAt: &armed,
		Fence: &liqojanitor.ProviderFence{StartedAt: at, LastObservedAt: &observed, FencedAt: &fencedAt, StoppedAt: &fencedAt,
			Tenant: "cordoned", ShadowPods: 3, Pods: 3}}
	tenant := &authv1beta1.Tenant{}
	g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: id}, tenant)).To(Succeed())
	tenant.Spec.TenantCondition = condition
	tenant.Annotations = map[string]string{liqojanitor.FenceAfterAnnotation: "120s", liqojanitor.FencedAtAnnotation: at.Format(time.RFC3339)}
	if byFence {
		tenant.Annotations[liqojanitor.CordonedByFenceAnnotation] = at.Format(time.RFC3339)
	}
	g.Expect(c.Update(t.Context(), tenant)).To(Succeed())
	for _, l := range []*coordinationv1.Lease{
		{ObjectMeta: metav1.ObjectMeta{Name: liqojanitor.FenceStateLeaseName, Namespace: ns,
			Annotations: map[string]string{liqojanitor.FenceStateAnnotation: record.String()}}},
		{ObjectMeta: metav1.ObjectMeta{Name: liqojanitor.FenceLeaseName, Namespace: ns,
			Annotations: map[string]string{liqojanitor.ProviderFencedAnnotation: record.Fence.String(),
				liqojanitor.FenceContractAnnotation: liqojanitor.FenceContract{FenceAfter: liqojanitor.Duration(2 * time.Minute)}.String()}}},
	} {
		g.Expect(c.Create(t.Context(), l)).To(Succeed())
	}
	return fencedLayout{id: id, ns: ns, record: record}
}

// fenceObjects are the objects unfence writes, as the API server has them now.
func (f fencedLayout) objects(t *testing.T) (*authv1beta1.Tenant, liqojanitor.FenceState, *coordinationv1.Lease, map[string]string) {
	t.Helper()
	c := harness.Require(t).Client
	g := NewWithT(t)
	tenant := &authv1beta1.Tenant{}
	g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: f.ns, Name: f.id}, tenant)).To(Succeed())
	stateLease := &coordinationv1.Lease{}
	g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: f.ns, Name: liqojanitor.FenceStateLeaseName}, stateLease)).To(Succeed())
	state, err := liqojanitor.ParseFenceState(stateLease.Annotations[liqojanitor.FenceStateAnnotation])
	g.Expect(err).NotTo(HaveOccurred())
	lease := &coordinationv1.Lease{}
	g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: f.ns, Name: liqojanitor.FenceLeaseName}, lease)).To(Succeed())
	return tenant, state, lease, map[string]string{"tenant": tenant.ResourceVersion, "state": stateLease.ResourceVersion, "lease": lease.ResourceVersion}
}

// TestUnfenceClearsALatchedFence: fence rule 6's way out. Without the typed confirmation nothing changes;
// with it, the agent's record loses its fence and arming (the observation kept), the Tenant the fence
// cordoned is Active again and loses the fence's marks, and the consumer's Lease loses the copy; the
// record's description is printed.
func TestUnfenceClearsALatchedFence(t *testing.T) {
	g := NewWithT(t)
	f := fenced(t, authv1beta1.TenantConditionCordoned, true)
	_, _, _, before := f.objects(t)
	for _, args := range [][]string{{"unfence", f.id}, {"unfence", f.id, "--confirm=someone-else"}} {
		_, stderr, err := asProviderAdmin(t, args...)
		g.Expect(err).To(HaveOccurred())
		g.Expect(stderr).To(ContainSubstring("kubectl liqo-janitor unfence " + f.id + " --confirm=" + f.id))
		_, _, _, after := f.objects(t)
		g.Expect(after).To(Equal(before), "nothing written without the typed confirmation: %v", args)
	}

	stdout, stderr, err := asProviderAdmin(t, "unfence", f.id, "--confirm="+f.id)
	g.Expect(err).NotTo(HaveOccurred(), stderr)
	g.Expect(stdout).To(ContainSubstring(f.record.Fence.Describe()))
	g.Expect(stdout).To(ContainSubstring("Set Tenant " + f.ns + "/" + f.id + " Active again"))
	tenant, state, lease, _ := f.objects(t)
	g.Expect(tenant.Spec.TenantCondition).To(Equal(authv1beta1.TenantConditionActive))
	g.Expect(tenant.Annotations).NotTo(HaveKey(liqojanitor.FencedAtAnnotation))
	g.Expect(tenant.Annotations).NotTo(HaveKey(liqojanitor.CordonedByFenceAnnotation))
	g.Expect(tenant.Annotations).To(HaveKeyWithValue(liqojanitor.FenceAfterAnnotation, "120s"), "the opt-in stays")
	want := f.record
	want.Fence, want.ArmedAt = nil, nil
	g.Expect(state.String()).To(Equal(want.String()), "fence and arming cleared, the last observation kept")
	g.Expect(lease.Annotations).NotTo(HaveKey(liqojanitor.ProviderFencedAnnotation))
	g.Expect(lease.Annotations).To(HaveKey(liqojanitor.FenceContractAnnotation), "the agent's contract stays")

	// the consumers of this provider complete, by cluster ID
	for _, verb := range []string{"unfence", "fence-credential"} {
		out, _, err := asProviderAdmin(t, "__complete", verb, f.id)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(strings.Split(strings.TrimSpace(out), "\n")).To(Equal([]string{f.id + "\tconsumer, tenant namespace " + f.ns, ":4"}), verb)
	}

	_, _, _, before = f.objects(t)
	stdout, _, err = asProviderAdmin(t, "unfence", f.id, "--confirm="+f.id)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stdout).To(ContainSubstring("is not fenced on this provider"))
	_, _, _, after := f.objects(t)
	g.Expect(after).To(Equal(before), "without a fence, nothing changes")
}

// TestUnfenceSetsActiveOnlyATenantTheFenceCordoned: a Tenant Drained, or Cordoned by someone else (the
// fence leaves such a Tenant as it is and marks only fenced-at), keeps its condition; the record is
// cleared all the same and the output says why the Tenant was left.
func TestUnfenceSetsActiveOnlyATenantTheFenceCordoned(t *testing.T) {
	for name, tc := range map[string]struct {
		condition authv1beta1.TenantCondition
		byFence   bool
		says      string
	}{
		"Drained":                             {condition: authv1beta1.TenantConditionDrained, says: "the fence did not cordon it"},
		"Cordoned by someone else":            {condition: authv1beta1.TenantConditionCordoned, says: "the fence did not cordon it"},
		"Drained since the fence cordoned it": {condition: authv1beta1.TenantConditionDrained, byFence: true, says: "the fence cordoned it, but someone changed it since"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			f := fenced(t, tc.condition, tc.byFence)
			stdout, stderr, err := asProviderAdmin(t, "unfence", f.id, "--confirm="+f.id)
			g.Expect(err).NotTo(HaveOccurred(), stderr)
			g.Expect(stdout).To(ContainSubstring(fmt.Sprintf("Left Tenant %s/%s %s: %s", f.ns, f.id, tc.condition, tc.says)))
			tenant, state, lease, _ := f.objects(t)
			g.Expect(tenant.Spec.TenantCondition).To(Equal(tc.condition))
			g.Expect(tenant.Annotations).NotTo(HaveKey(liqojanitor.FencedAtAnnotation))
			g.Expect(tenant.Annotations).NotTo(HaveKey(liqojanitor.CordonedByFenceAnnotation))
			g.Expect(state.Fence).To(BeNil())
			g.Expect(state.ArmedAt).To(BeNil())
			g.Expect(state.ObservedAt).NotTo(BeNil())
			g.Expect(lease.Annotations).NotTo(HaveKey(liqojanitor.ProviderFencedAnnotation))
		})
	}
}
