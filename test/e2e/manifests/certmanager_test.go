package manifests_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	apiutil "github.com/cert-manager/cert-manager/pkg/api/util"
	certmanagerv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// TestCertManagerIssuesInjectsAndRenews installs the chart in cert-manager mode with Helm's library and
// runs cert-manager's own controller and cainjector (harness.StartCertManager): cert-manager issues the
// CA and the serving Certificate, the cainjector injects the CA into both webhook configurations, and the
// binary, run as a pod of the release (its ServiceAccount, its Deployment's arguments), serves the
// serving Certificate's Secret as the Deployment mounts it. The API server calls the gate through the
// chart's Service (routed to the binary: harness.ServiceRoute) and trusts it through the injected bundle:
// a confirmed mark it cannot accept is refused by the gate with its message. Then a renewal by
// cert-manager's own trigger (what `cmctl renew` does): a new serving certificate and key, the same CA, the
// bundle unchanged, and the gate keeps answering with the certificate served after the Secret's update
// reaches the binary.
func TestCertManagerIssuesInjectsAndRenews(t *testing.T) {
	env := harness.Require(t)
	ensureLiqoNamespace(t)
	g := NewWithT(t)
	ctx := t.Context()
	cm, err := env.StartCertManager(ctx, installNS)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { NewWithT(t).Expect(cm.Stop()).To(Succeed()) })
	c := certManagerClient(t, env)
	t.Cleanup(func() { deleteIssued(t, c) })
	h := newHelm(t)
	t.Cleanup(h.uninstall)
	h.install(withCertManager)

	ca := awaitIssued(t, c, caCert, 0)
	serving := awaitIssued(t, c, servingCert, 0)
	g.Expect(ca.Data["ca.crt"]).To(Equal(ca.Data["tls.crt"]), "the CA is self-signed: its own anchor")
	g.Expect(serving.Data["ca.crt"]).To(Equal(ca.Data["ca.crt"]), "the serving certificate chains to the install's CA")
	g.Eventually(func(g Gomega) { g.Expect(h.caBundle(g)).To(Equal(ca.Data["ca.crt"])) }).
		WithTimeout(time.Minute).Should(Succeed(), "the cainjector injects the CA into both configurations (log: %s)", cm.CAInjectorLog)

	gate := startGateServing(t, env, serving)
	fc := unmarkedProvider(t, env)
	// until the API server's informer has the EndpointSlice, it finds no endpoint for the Service
	g.Eventually(func(g Gomega) { expectRefusedByGate(g, env, fc) }).WithTimeout(30*time.Second).
		Should(Succeed(), "through the Service, trusting the injected bundle (log: %s)", gate.replica.Log)

	// The renewal: cert-manager's trigger, as `cmctl renew` sets it (cert-manager's cmd/ctl/pkg/renew: Issuing=True,
	// reason ManuallyTriggered, on the status).
	revision := revisionOf(t, c, servingCert)
	triggerRenewal(t, c, servingCert)
	renewed := awaitIssued(t, c, servingCert, revision)
	g.Expect(renewed.Data["tls.crt"]).NotTo(Equal(serving.Data["tls.crt"]), "a new certificate")
	g.Expect(renewed.Data["tls.key"]).NotTo(Equal(serving.Data["tls.key"]), "and a new key (privateKey.rotationPolicy: Always)")
	g.Expect(renewed.Data["ca.crt"]).To(Equal(ca.Data["ca.crt"]), "the trust anchor stays")
	caNow := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ca), caNow)).To(Succeed())
	g.Expect(caNow.Data["tls.crt"]).To(Equal(ca.Data["tls.crt"]), "the CA was not reissued")

	g.Expect(gate.dir.write(renewed)).To(Succeed(), "the Secret's update reaches the pod's volume")
	g.Eventually(gate.served).WithTimeout(time.Minute).Should(Equal(leafOf(t, renewed)), "the binary serves the renewed certificate (log: %s)", gate.replica.Log)
	m := gate.moment(t, h)
	g.Expect(m.bundle).To(Equal(ca.Data["ca.crt"]), "the bundle unchanged by the renewal")
	g.Expect(m.err).NotTo(HaveOccurred(), "the renewed certificate verifies against the injected bundle for the Service's name")
	g.Expect(m.served).To(Equal(leafOf(t, renewed)))
	expectRefusedByGate(g, env, fc) // after the renewal, at once
}

// deleteIssued deletes what cert-manager wrote for the install and Helm does not uninstall: the Certificates'
// Secrets and CertificateRequests (owned by the Certificates, but no garbage collector runs here).
func deleteIssued(t *testing.T, c client.Client) {
	t.Helper()
	ctx := context.Background()
	for _, name := range []string{caCert, servingCert} {
		_ = c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: installNS, Name: name}})
	}
	if err := c.DeleteAllOf(ctx, &certmanagerv1.CertificateRequest{}, client.InNamespace(installNS)); err != nil {
		t.Logf("deleting the CertificateRequests: %v", err)
	}
}

// certManagerClient is an admin client that knows cert-manager's types.
func certManagerClient(t *testing.T, env *harness.Env) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	NewWithT(t).Expect(corev1.AddToScheme(s)).To(Succeed())
	NewWithT(t).Expect(certmanagerv1.AddToScheme(s)).To(Succeed())
	c, err := client.New(env.Config, client.Options{Scheme: s})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return c
}

// awaitIssued waits until the Certificate name is Ready and no longer issuing, at a revision above after,
// and returns its Secret as it is then (nothing changes it until the next issuance).
func awaitIssued(t *testing.T, c client.Client, name string, after int) *corev1.Secret {
	t.Helper()
	crt := &certmanagerv1.Certificate{}
	secret := &corev1.Secret{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: installNS, Name: name}, crt)).To(Succeed())
		g.Expect(apiutil.CertificateHasCondition(crt, certmanagerv1.CertificateCondition{
			Type: certmanagerv1.CertificateConditionReady, Status: cmmeta.ConditionTrue})).To(BeTrue(), "Ready: %+v", crt.Status.Conditions)
		g.Expect(apiutil.GetCertificateCondition(crt, certmanagerv1.CertificateConditionIssuing)).To(BeNil(), "issuance over")
		g.Expect(crt.Status.Revision).NotTo(BeNil())
		g.Expect(*crt.Status.Revision).To(BeNumerically(">", after))
		g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: installNS, Name: crt.Spec.SecretName}, secret)).To(Succeed())
	}).WithTimeout(2*time.Minute).Should(Succeed(), "cert-manager issues the Certificate %s", name)
	return secret
}

func revisionOf(t *testing.T, c client.Client, name string) int {
	t.Helper()
	crt := &certmanagerv1.Certificate{}
	NewWithT(t).Expect(c.Get(t.Context(), client.ObjectKey{Namespace: installNS, Name: name}, crt)).To(Succeed())
	return ptr.Deref(crt.Status.Revision, 0)
}

// triggerRenewal sets the Certificate's Issuing condition as cmctl renew does, which cert-manager's
// issuing controllers take as the order to issue again.
func triggerRenewal(t *testing.T, c client.Client, name string) {
	t.Helper()
	NewWithT(t).Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crt := &certmanagerv1.Certificate{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: installNS, Name: name}, crt); err != nil {
			return err
		}
		apiutil.SetCertificateCondition(crt, crt.Generation, certmanagerv1.CertificateConditionIssuing, cmmeta.ConditionTrue,
			"ManuallyTriggered", "Certificate re-issuance manually triggered")
		return c.Status().Update(t.Context(), crt)
	})).To(Succeed())
}

// gateServing is the binary run as a pod of the release, serving the certificate of the Secret the
// Deployment mounts, reached by the API server through the chart's webhook Service.
type gateServing struct {
	replica *harness.Replica
	dir     *secretVolume
	addr    string // the machine's address and the binary's webhook port, where the Service leads
}

func startGateServing(t *testing.T, env *harness.Env, serving *corev1.Secret) *gateServing {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	dep := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: installNS, Name: appName}, dep)).To(Succeed())
	inst, err := harness.InstallOf(dep)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inst.Container.Args).To(ContainElement("--cert-management=cert-manager"))
	g.Expect(dep.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("VolumeSource.Secret.SecretName", servingCert)), "the Deployment mounts the serving Secret")

	gs := &gateServing{dir: &secretVolume{dir: t.TempDir()}}
	g.Expect(gs.dir.write(serving)).To(Succeed())
	port := freePort(t)
	// as a pod of this release, with its own --cert-management; the harness gives its certificate unless told
	gs.replica, err = env.StartReplicaOf(inst, "cert-manager-mode", "--webhook-port="+port,
		"--webhook-cert-dir="+gs.dir.dir, "--cert-management=cert-manager")
	g.Expect(err).NotTo(HaveOccurred(), "the binary becomes ready as the chart's ServiceAccount")
	t.Cleanup(func() { _ = gs.replica.Terminate(30 * time.Second) })

	p, err := strconv.Atoi(port)
	g.Expect(err).NotTo(HaveOccurred())
	slice, err := env.ServiceRoute(ctx, installNS, webhookService, p)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), slice) })
	addr, err := harness.HostAddress()
	g.Expect(err).NotTo(HaveOccurred())
	gs.addr = net.JoinHostPort(addr.String(), port)
	return gs
}

// served returns the certificate the binary presents (DER), unverified; nil if no handshake.
func (gs *gateServing) served() []byte {
	d := &tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}} //nolint:gosec // verified apart, in moment
	conn, err := d.DialContext(context.Background(), "tcp", gs.addr)
	if err != nil {
		return nil
	}
	defer conn.Close()
	return conn.(*tls.Conn).ConnectionState().PeerCertificates[0].Raw
}

// servedMoment is what the API server sees at one moment: the bundle both configurations carry, the
// certificate served, and whether it verifies against that bundle for the Service's DNS name.
type servedMoment struct {
	bundle []byte
	served []byte
	err    error
}

// moment reads the bundle, then the served certificate (verified against the bundle as the API server
// verifies it), then the bundle again, until the two readings of the bundle agree: what was served was
// judged against the bundle of that moment, not one read apart.
func (gs *gateServing) moment(t *testing.T, h *helmRelease) servedMoment {
	t.Helper()
	var m servedMoment
	NewWithT(t).Eventually(func(g Gomega) {
		m.bundle = h.caBundle(g)
		pool := x509.NewCertPool()
		g.Expect(pool.AppendCertsFromPEM(m.bundle)).To(BeTrue(), "the bundle is PEM")
		d := &tls.Dialer{Config: &tls.Config{RootCAs: pool, ServerName: webhookService + "." + installNS + ".svc", MinVersion: tls.VersionTLS12}}
		conn, err := d.DialContext(t.Context(), "tcp", gs.addr)
		m.err, m.served = err, nil
		if err == nil {
			m.served = conn.(*tls.Conn).ConnectionState().PeerCertificates[0].Raw
			_ = conn.Close()
		}
		g.Expect(err == nil || isVerifyError(err)).To(BeTrue(), "a handshake, trusted or not: %v", err)
		g.Expect(h.caBundle(g)).To(Equal(m.bundle), "the bundle held while the certificate was read")
	}).WithTimeout(30 * time.Second).Should(Succeed())
	return m
}

func isVerifyError(err error) bool {
	var unknown x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	return errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid) || errors.As(err, &verify)
}

// leafOf returns the DER of the first certificate of a Secret's tls.crt.
func leafOf(t *testing.T, s *corev1.Secret) []byte {
	t.Helper()
	pair, err := tls.X509KeyPair(s.Data["tls.crt"], s.Data["tls.key"])
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return pair.Certificate[0]
}

// unmarkedProvider creates a ForeignCluster for the gate to refuse a mark of, until the test ends.
func unmarkedProvider(t *testing.T, env *harness.Env) *liqov1beta1.ForeignCluster {
	t.Helper()
	fc := &liqov1beta1.ForeignCluster{ObjectMeta: metav1.ObjectMeta{Name: "cert-manager-provider"},
		Spec: liqov1beta1.ForeignClusterSpec{ClusterID: "cert-manager-provider"}}
	NewWithT(t).Expect(env.Client.Create(t.Context(), fc)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), fc) })
	return fc
}

// expectRefusedByGate marks fc permanently unreachable, confirmed, through the API server: the chart's
// policy (liqo-janitor-mark-unreachable) lets a confirmed mark by an admin through, and the gate, called by
// the API server through the chart's Service and trusted through the injected bundle, refuses it (here
// Liqo keeps no cluster ID and no reachability evidence for fc) with its message naming the cluster. A
// webhook the API server cannot reach or does not trust fails with "failed calling webhook" instead.
func expectRefusedByGate(g Gomega, env *harness.Env, fc *liqov1beta1.ForeignCluster) {
	err := fixture.Annotate(context.Background(), env.Client, fc, map[string]*string{
		liqojanitor.ConfirmAnnotation: ptr.To(string(fc.Spec.ClusterID)), liqojanitor.MarkAnnotation: ptr.To(liqojanitor.MarkValue)})
	g.Expect(err).To(HaveOccurred(), "the mark is refused")
	g.Expect(apierrors.ReasonForError(err)).NotTo(Equal(metav1.StatusReasonInternalError), "the webhook was called: %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`admission webhook "vforeigncluster.liqo-janitor.io" denied the request`), "the gate answered")
	g.Expect(err.Error()).To(ContainSubstring(fmt.Sprintf("ForeignCluster %q", fc.Name)), "the gate's message")
}

// secretVolume is a directory holding a Secret's keys as the kubelet projects a Secret volume into a pod
// (pkg/volume/util/atomic_writer.go in Kubernetes): each key is a symlink through ..data, a symlink to a
// directory of the current version that an update replaces in one rename, so that a reader never sees one
// file of the new version and one of the old.
type secretVolume struct {
	dir     string
	version int
}

func (v *secretVolume) write(s *corev1.Secret) error {
	data := map[string][]byte{"tls.crt": s.Data["tls.crt"], "tls.key": s.Data["tls.key"]} // the Deployment's items
	v.version++
	ts := fmt.Sprintf("..%d", v.version)
	if err := os.Mkdir(filepath.Join(v.dir, ts), 0o700); err != nil {
		return err
	}
	for key, pem := range data {
		if err := os.WriteFile(filepath.Join(v.dir, ts, key), pem, 0o600); err != nil {
			return err
		}
	}
	if err := os.Symlink(ts, filepath.Join(v.dir, "..data_tmp")); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(v.dir, "..data_tmp"), filepath.Join(v.dir, "..data")); err != nil {
		return err
	}
	for key := range data {
		link := filepath.Join(v.dir, key)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join("..data", key), link); err != nil {
			return err
		}
	}
	if v.version > 1 { // the old version goes, as the kubelet removes it
		return os.RemoveAll(filepath.Join(v.dir, fmt.Sprintf("..%d", v.version-1)))
	}
	return nil
}
