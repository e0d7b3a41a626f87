package liqoversion

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestParseLiqoTag(t *testing.T) {
	for image, want := range map[string]struct {
		minor int
		ok    bool
	}{
		"ghcr.io/liqotech/liqo-controller-manager:v1.2.0":                 {2, true},
		"ghcr.io/liqotech/liqo-controller-manager:v1.0.3":                 {0, true},
		"ghcr.io/liqotech/liqo-controller-manager:v1.1.0-rc.2":            {1, true},
		"registry.local:5000/liqo/liqo-controller-manager:v1.1.0":         {1, true},
		"ghcr.io/liqotech/liqo-controller-manager:v1.2.0@sha256:0123abcd": {2, true},
		"registry.local:5000/liqo/liqo-controller-manager":                {0, false}, // the port is no tag
		"ghcr.io/liqotech/liqo-controller-manager:4f1c2d3":                {0, false}, // a commit, no version
		"ghcr.io/liqotech/liqo-controller-manager:v2.0.0":                 {0, false},
		"ghcr.io/liqotech/liqo-controller-manager:1.2.0":                  {0, false},
		"ghcr.io/liqotech/liqo-controller-manager:v1.x.0":                 {0, false},
	} {
		minor, _, ok := parseLiqoTag(image)
		if ok != want.ok || (ok && minor != want.minor) {
			t.Errorf("parseLiqoTag(%q) = %d, %v; want %d, %v", image, minor, ok, want.minor, want.ok)
		}
	}
}

func TestLiqoVersionOlderAndBefore(t *testing.T) {
	g := NewWithT(t)
	unknown, v10, v12 := Version{}, Version{Minor: 0, Known: true}, Version{Minor: 2, Known: true}
	g.Expect(unknown.Older(2)).To(BeFalse(), "an unknown version is not known to be older")
	g.Expect(unknown.Before(2)).To(BeTrue(), "but what v1.2 does by itself may be done for it")
	g.Expect(v10.Older(2)).To(BeTrue())
	g.Expect(v12.Older(2)).To(BeFalse())
	g.Expect(v12.Before(2)).To(BeFalse())
	g.Expect(unknown.String()).To(Equal("unknown"))
}
