package liqojanitor_test

import (
	"slices"
	"testing"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"k8s.io/apimachinery/pkg/types"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// provider is a ForeignCluster for cluster id whose API server and tunnel show apiServer and tunnel ("" for
// no condition).
func provider(id string, apiServer, tunnel liqov1beta1.ConditionStatusType) liqov1beta1.ForeignCluster {
	fc := liqov1beta1.ForeignCluster{}
	fc.UID = types.UID("uid-" + id)
	fc.Spec.ClusterID = liqov1beta1.ClusterID(id)
	if apiServer != "" {
		fc.Status.Conditions = []liqov1beta1.Condition{{Type: liqov1beta1.APIServerStatusCondition, Status: apiServer}}
	}
	if tunnel != "" {
		fc.Status.Modules.Networking.Conditions = []liqov1beta1.Condition{{Type: liqov1beta1.NetworkConnectionStatusCondition, Status: tunnel}}
	}
	return fc
}

const (
	up   = liqov1beta1.ConditionStatusEstablished
	down = liqov1beta1.ConditionStatusError
	none = liqov1beta1.ConditionStatusType("")
)

func TestUnreachableByLiqo(t *testing.T) {
	for name, tc := range map[string]struct {
		apiServer, tunnel liqov1beta1.ConditionStatusType
		want              bool
	}{
		"both up":                                  {up, up, false},
		"API server down, tunnel up: alive":        {down, up, false},
		"API server up, tunnel down":               {up, down, false},
		"both down":                                {down, down, true},
		"API server down, no networking condition": {down, none, true},
		"no condition at all":                      {none, none, true},
		"tunnel pending is not up":                 {down, liqov1beta1.ConditionStatusPending, true},
	} {
		t.Run(name, func(t *testing.T) {
			fc := provider("a", tc.apiServer, tc.tunnel)
			if got := liqojanitor.UnreachableByLiqo(&fc); got != tc.want {
				t.Errorf("UnreachableByLiqo = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStorm(t *testing.T) {
	guard := liqojanitor.DefaultStormGuard
	for name, tc := range map[string]struct {
		fcs         []liqov1beta1.ForeignCluster
		marking     int // index into fcs, -1 for none
		guard       liqojanitor.StormGuard
		unreachable []string
		providers   int
		storm       bool
	}{
		"3 of 4 unreachable is a storm": {
			fcs:     []liqov1beta1.ForeignCluster{provider("a", down, down), provider("b", down, none), provider("c", none, none), provider("d", up, up)},
			marking: 0, guard: guard, unreachable: []string{"a", "b", "c"}, providers: 4, storm: true,
		},
		"2 of 2 is no storm (fewer than the minimum)": {
			fcs:     []liqov1beta1.ForeignCluster{provider("a", down, down), provider("b", down, down)},
			marking: 0, guard: guard, unreachable: []string{"a", "b"}, providers: 2,
		},
		"3 of 6 is no storm (not more than half)": {
			fcs: []liqov1beta1.ForeignCluster{provider("a", down, down), provider("b", down, down), provider("c", down, down),
				provider("d", up, none), provider("e", up, none), provider("f", down, up)},
			marking: 0, guard: guard, unreachable: []string{"a", "b", "c"}, providers: 6,
		},
		"the one being marked counts whatever its status says": {
			fcs:     []liqov1beta1.ForeignCluster{provider("a", up, up), provider("b", down, down), provider("c", down, down), provider("d", up, up)},
			marking: 0, guard: guard, unreachable: []string{"a", "b", "c"}, providers: 4, storm: true,
		},
		"a cluster ID with one reachable ForeignCluster is reachable": {
			fcs:     []liqov1beta1.ForeignCluster{provider("a", down, down), provider("b", down, down), provider("c", down, down), func() liqov1beta1.ForeignCluster { fc := provider("c", up, none); fc.UID = "other"; return fc }()},
			marking: 0, guard: guard, unreachable: []string{"a", "b"}, providers: 3,
		},
		"a guard of 0 is off": {
			fcs:     []liqov1beta1.ForeignCluster{provider("a", down, down), provider("b", down, down), provider("c", down, down)},
			marking: -1, guard: liqojanitor.StormGuard{MaxSharePercent: 50}, unreachable: []string{"a", "b", "c"}, providers: 3,
		},
	} {
		t.Run(name, func(t *testing.T) {
			var marking *liqov1beta1.ForeignCluster
			if tc.marking >= 0 {
				marking = &tc.fcs[tc.marking]
			}
			s := liqojanitor.CountStorm(tc.fcs, marking)
			if got := s.Unreachable; !slices.Equal(got, tc.unreachable) {
				t.Errorf("Unreachable = %v, want %v", got, tc.unreachable)
			}
			if s.Providers != tc.providers {
				t.Errorf("Providers = %d, want %d", s.Providers, tc.providers)
			}
			if got := tc.guard.In(s); got != tc.storm {
				t.Errorf("In = %v, want %v (%s)", got, tc.storm, s)
			}
		})
	}
}

func TestStormAcknowledged(t *testing.T) {
	s := liqojanitor.Storm{Unreachable: []string{"a", "b", "c"}, Providers: 4}
	for value, want := range map[string]bool{"3": true, "4": false, "2": false, "": false, "three": false, " 3": false} {
		if got := s.Acknowledged(map[string]string{liqojanitor.AcknowledgeUnreachableAnnotation: value}); got != want {
			t.Errorf("Acknowledged(%q) = %v, want %v", value, got, want)
		}
	}
	if got, want := s.String(), "3 of 4 providers unreachable by Liqo's evidence (a, b, c)"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}
