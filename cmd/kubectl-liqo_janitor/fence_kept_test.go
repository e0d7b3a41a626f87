package main

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// TestFenceActsOnlyOnTheProviderTheJanitorKept: in every mode, before fence reads anything on the provider,
// the server is the API server the janitor kept for the mark (in its records, in its namespace) and its
// certificate verifies against the CA kept with it; otherwise fence refuses and records nothing.
func TestFenceActsOnlyOnTheProviderTheJanitorKept(t *testing.T) {
	testEnv := harness.Require(t)
	g := NewWithT(t)
	dead, _, prov := returned(t)
	w, _, _ := sameNamespaces(t, prov, dead.ID)
	remoteTenant := "liqo-tenant-" + consumerID + "-" + strings.ToLower(dead.ID)
	controlPlaneIdentity(t, dead, prov, "liqo-controlplane-"+consumerID, remoteTenant) // the identity Secret reaches the lane too
	everything := append(append([]client.Object{}, w.mine...), w.kept...)
	providerBefore, consumerBefore := providerRVs(t, prov, everything), rvs(t, dead)
	janitorNS, other := janitorNamespace(t), testEnv.Namespace(t)
	kept := providerTargets(prov)
	u, err := url.Parse(kept.APIServer)
	g.Expect(err).NotTo(HaveOccurred())
	elsewhere := "https://provider.invalid:" + u.Port()
	earlierMark := func(targets liqojanitor.Targets) map[string]string {
		earlier := liqojanitor.MarkStamp{At: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)}.Annotations()[liqojanitor.MarkedAtAnnotation]
		rec := liqojanitor.KeptRecord{Mark: earlier, Targets: targets, At: metav1.Now()}
		return map[string]string{string(dead.ForeignCluster.UID): rec.String()}
	}
	secretVia := fmt.Sprintf("the control-plane identity of Secret %s/%s", dead.TenantNS, dead.IdentitySecret.Name)
	fileVia := "--provider-kubeconfig " + prov.KubeconfigPath
	notVerified := "does not verify against the CA liqo-janitor kept for this mark (" + kept.APIServer + ", kept by liqo-janitor at "

	for name, tc := range map[string]struct {
		keep      func(t *testing.T)
		noKubecfg bool
		want      []string
	}{
		"the kept CA is another cluster's, with --provider-kubeconfig": {
			keep: func(t *testing.T) {
				t.Helper()
				keepRecord(t, janitorNS, dead, liqojanitor.Targets{APIServer: kept.APIServer, CA: testEnv.Config.CAData})
			},
			want: []string{fileVia + " reaches a server whose certificate " + notVerified, "x509: certificate signed by unknown authority",
				"It is not the provider the janitor kept"},
		},
		"the kept CA is another cluster's, through the identity Secret Liqo's Identity names": {
			keep: func(t *testing.T) {
				t.Helper()
				keepRecord(t, janitorNS, dead, liqojanitor.Targets{APIServer: kept.APIServer, CA: testEnv.Config.CAData})
			},
			noKubecfg: true,
			want:      []string{secretVia + " reaches a server whose certificate " + notVerified},
		},
		"the kept API server is at another host": {
			keep: func(t *testing.T) {
				t.Helper()
				keepRecord(t, janitorNS, dead, liqojanitor.Targets{APIServer: elsewhere, CA: kept.CA})
			},
			want: []string{fileVia + " reaches " + strings.TrimSuffix(kept.APIServer, "/") + ", not the provider's API server liqo-janitor kept for this mark: " + elsewhere,
				"Pass --provider-kubeconfig <file> with a kubeconfig whose server is " + elsewhere},
		},
		"no CA kept": {
			keep: func(t *testing.T) {
				t.Helper()
				keepRecord(t, janitorNS, dead, liqojanitor.Targets{APIServer: kept.APIServer})
			},
			want: []string{"liqo-janitor kept no CA of the provider of ForeignCluster " + dead.ForeignCluster.Name + " for this mark (ConfigMap " +
				janitorNS + "/liqo-janitor-records", "stop this consumer's ShadowPods there by hand"},
		},
		"a record of an earlier mark only, and a look-alike of the records in another namespace naming the provider": {
			keep: func(t *testing.T) {
				t.Helper()
				putConfigMapData(t, janitorNS, liqojanitor.RecordsConfigMap, earlierMark(kept))
				keepRecord(t, other, dead, kept)
			},
			noKubecfg: true,
			want: []string{"liqo-janitor kept no record of ForeignCluster " + dead.ForeignCluster.Name + " for its current mark (marked-at ",
				"in ConfigMap " + janitorNS + "/liqo-janitor-records. fence acts only on the provider liqo-janitor kept for this mark",
				"read in liqo-janitor's namespace " + janitorNS + " (the Service of ValidatingWebhookConfiguration liqo-janitor)",
				"ignored: ConfigMap " + other + "/liqo-janitor-records is not in the janitor's namespace " + janitorNS,
				"`kubectl liqo-janitor status " + dead.ForeignCluster.Name + "` says \"kept by liqo-janitor\""},
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			tc.keep(t)
			for _, args := range [][]string{{"--dry-run"}, {"--yes", "--all", "--timeout", "10s"}} {
				args = append([]string{dead.ID}, args...)
				if !tc.noKubecfg {
					args = append(args, "--provider-kubeconfig", prov.KubeconfigPath)
				}
				out, stderr, err := kubectlFence(t, "", args...)
				g.Expect(err).To(HaveOccurred(), "fence %s must refuse:\n%s", strings.Join(args, " "), out)
				t.Log("fence refused:\n" + stderr)
				for _, want := range tc.want {
					g.Expect(stderr).To(ContainSubstring(want))
				}
				g.Expect(stderr).To(ContainSubstring("nothing was read on the provider or written"))
				g.Expect(out).NotTo(ContainSubstring("may delete"), "nothing was asked of the provider")
			}
			g.Expect(providerRVs(t, prov, everything)).To(Equal(providerBefore), "nothing was deleted on the provider")
			g.Expect(rvs(t, dead)).To(Equal(consumerBefore), "nothing was written on the consumer")
			g.Expect(annotations(t, dead)).NotTo(HaveKey(liqojanitor.FencedAnnotation), "nothing was recorded")
		})
	}

	// The record as the janitor keeps it: the same provider, verified, in both modes.
	keepRecord(t, janitorNS, dead, kept)
	out, _, err := kubectlFence(t, "", dead.ID, "--provider-kubeconfig", prov.KubeconfigPath, "--dry-run")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("Verified: its certificate verifies against the CA liqo-janitor kept for this mark with " + kept.APIServer))
	out, _, err = kubectlFence(t, "", dead.ID, "--dry-run")
	g.Expect(err).To(HaveOccurred(), "Liqo's control-plane identity may not delete ShadowPods")
	g.Expect(out).To(ContainSubstring("No --provider-kubeconfig: using " + secretVia + ". On the provider it:"))
	g.Expect(out).To(ContainSubstring("may NOT delete shadowpods"), "asked only once verified")
	g.Expect(annotations(t, dead)).NotTo(HaveKey(liqojanitor.FencedAnnotation))
}
