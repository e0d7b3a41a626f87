package certs

import (
	"testing"
	"time"
)

func TestBundleKeepsThePreviousCAUntilItExpires(t *testing.T) {
	t.Parallel()
	now := time.Now()
	old, err := newCA(now.Add(-8*time.Hour), 9*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := newCA(now, 9*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	bundle := makeBundle(cur.cert, old.certPEM, now)
	certs, err := parseBundle(bundle)
	if err != nil || len(certs) != 2 || !certs[0].Equal(cur.cert) || !certs[1].Equal(old.cert) {
		t.Fatalf("during the rotation the bundle is the new CA, then the old one; got %d certificates (%v)", len(certs), err)
	}
	if certs, _ := parseBundle(makeBundle(cur.cert, bundle, now.Add(time.Hour+time.Second))); len(certs) != 1 || !certs[0].Equal(cur.cert) {
		t.Fatalf("once the old CA expired the bundle is the new CA alone; got %d certificates", len(certs))
	}
	if certs, _ := parseBundle(makeBundle(cur.cert, []byte("garbage"), now)); len(certs) != 1 {
		t.Fatalf("an unreadable bundle is replaced by the current CA; got %d certificates", len(certs))
	}
}

func TestServingCertificateIsRenewedWhenATimeIsLeft(t *testing.T) {
	t.Parallel()
	now := time.Now()
	ca, err := newCA(now, 30*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := newCA(now, 30*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	hosts := []string{"liqo-janitor-webhook.ns.svc", "liqo-janitor-webhook.ns.svc.cluster.local"}
	serving, err := newServing(ca, hosts, now, 9*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		ca    *keyPair
		hosts []string
		at    time.Time
		want  bool
	}{
		"fresh":                           {ca, hosts, now, true},
		"two thirds into its validity":    {ca, hosts, now.Add(6*time.Hour + time.Minute), false},
		"signed by another CA":            {other, hosts, now, false},
		"for other names":                 {ca, []string{"liqo-janitor-webhook.other.svc"}, now, false},
		"with a name more than it serves": {ca, append(hosts, "localhost"), now, false},
	}
	for name, tc := range tests {
		if got := servingValid(serving, tc.ca, tc.hosts, tc.at, 9*time.Hour); got != tc.want {
			t.Errorf("%s: servingValid = %v, want %v", name, got, tc.want)
		}
	}
	if verify(serving.cert, ca.certPEM, hosts[0], now) != nil {
		t.Error("the serving certificate verifies against its CA for the Service's name")
	}
}

func TestServingCertificateNeverOutlivesItsCA(t *testing.T) {
	t.Parallel()
	now := time.Now()
	ca, err := newCA(now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	serving, err := newServing(ca, []string{"a.ns.svc"}, now, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !serving.cert.NotAfter.Equal(ca.cert.NotAfter) {
		t.Fatalf("NotAfter %s, want the CA's %s", serving.cert.NotAfter, ca.cert.NotAfter)
	}
	if !servingValid(serving, ca, []string{"a.ns.svc"}, now.Add(50*time.Minute), 2*time.Hour) {
		t.Fatal("a certificate ending with its CA is not re-issued at every look (it would end with the CA again)")
	}
}
