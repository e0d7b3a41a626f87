package liqojanitor_test

import (
	"strings"
	"testing"
	"time"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// contract is a provider's contract with these bounds, in seconds.
func contract(poll, fenceAfter, failover, stop, graceCap int) liqojanitor.FenceContract {
	s := func(n int) liqojanitor.Duration { return liqojanitor.Duration(time.Duration(n) * time.Second) }
	return liqojanitor.FenceContract{Poll: s(poll), FenceAfter: s(fenceAfter), Failover: s(failover), Stop: s(stop),
		GraceCap: s(graceCap), ProviderClusterID: "provider-a", Version: "v0.1.0"}
}

// TestFenceContractRoundTrips: the contract the agent writes is the one the consumer reads, durations in
// Go's spelling.
func TestFenceContractRoundTrips(t *testing.T) {
	t.Parallel()
	c := contract(5, 120, 45, 30, 20)
	s := c.String()
	if !strings.Contains(s, `"fenceAfter":"2m0s"`) {
		t.Fatalf("String() = %s, want fenceAfter as a Go duration", s)
	}
	got, err := liqojanitor.ParseFenceContract(s)
	if err != nil || got != c {
		t.Fatalf("ParseFenceContract(%s) = %+v, %v; want %+v", s, got, err, c)
	}
}

// TestAContractThatPromisesNothingIsRefused: a bound that is not positive, a grace cap beyond the stop
// bound or no provider cluster ID make no contract the consumer could compute a deadline from.
func TestAContractThatPromisesNothingIsRefused(t *testing.T) {
	t.Parallel()
	noID := contract(5, 120, 45, 30, 20)
	noID.ProviderClusterID = ""
	for name, tc := range map[string]struct {
		value, want string
	}{
		"not JSON":             {value: "120s", want: "not a fence contract"},
		"a duration in ns":     {value: `{"fenceAfter":120}`, want: "not a fence contract"},
		"no fenceAfter":        {value: strings.Replace(contract(5, 120, 45, 30, 20).String(), `"2m0s"`, `"0s"`, 1), want: "fenceAfter must be positive"},
		"a grace beyond stop":  {value: contract(5, 120, 45, 30, 31).String(), want: "graceCap must be between 0 and stop"},
		"no provider identity": {value: noID.String(), want: "providerClusterID is empty"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, err := liqojanitor.ParseFenceContract(tc.value); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseFenceContract(%s) = %v, want an error containing %q", tc.value, err, tc.want)
			}
		})
	}
}

// TestSafeAfterIsTheContractsBoundStretchedBySkewAndMargin: T_safe = (1 + 1 %) × (poll + fenceAfter +
// failover + stop) + 2 × 2 s + 15 s; 200 s of bounds give 221 s, below Kubernetes' 300 s eviction.
func TestSafeAfterIsTheContractsBoundStretchedBySkewAndMargin(t *testing.T) {
	t.Parallel()
	c := contract(5, 120, 45, 30, 20)
	if got := c.Bound(); got != 200*time.Second {
		t.Fatalf("Bound() = %s, want 200s", got)
	}
	if got, want := c.SafeAfter(), 221*time.Second; got != want {
		t.Fatalf("SafeAfter() = %s, want %s", got, want)
	}
}

// TestTheAgentRefusesUnsafeSettingsWithTheMinimum (issue 36 item 4): too short a fenceAfter for the
// consumer's renew interval, or a deadline past the taint eviction, is refused, the message naming the
// limit; a consumer that states no renew interval is never armed for.
func TestTheAgentRefusesUnsafeSettingsWithTheMinimum(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		c     liqojanitor.FenceContract
		renew time.Duration
		want  string // "" means it may arm
	}{
		"the defaults":                 {c: contract(5, 120, 45, 30, 20), renew: 10 * time.Second},
		"exactly the minimum":          {c: contract(1, 61, 45, 30, 20), renew: 10 * time.Second},
		"a second below the minimum":   {c: contract(1, 60, 45, 30, 20), renew: 10 * time.Second, want: "fenceAfter 1m0s is below the minimum 1m1s"},
		"no renew interval stated":     {c: contract(5, 120, 45, 30, 20), want: "states no renew interval"},
		"a deadline past the eviction": {c: contract(5, 220, 45, 30, 20), renew: 10 * time.Second, want: "lower liqo-janitor.io/fence-after to at most"},
		"at the eviction":              {c: contract(5, 0, 45, 30, 20), renew: time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if name == "at the eviction" { // the longest fenceAfter whose deadline is within the eviction
				tc.c.FenceAfter = liqojanitor.Duration(fenceAfterAtEviction(tc.c))
			}
			err := tc.c.CheckArming(tc.renew)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("CheckArming(%s) = %v, want nil", tc.renew, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("CheckArming(%s) = %v, want an error containing %q", tc.renew, err, tc.want)
			}
		})
	}
}

// fenceAfterAtEviction is the longest whole-second fenceAfter whose deadline is within the taint eviction.
func fenceAfterAtEviction(c liqojanitor.FenceContract) time.Duration {
	for f := liqojanitor.TaintEvictionBound; f > 0; f -= time.Second {
		c.FenceAfter = liqojanitor.Duration(f)
		if c.SafeAfter() <= liqojanitor.TaintEvictionBound {
			return f
		}
	}
	return 0
}

// TestTheSuggestedFenceAfterIsSafe: the fenceAfter the refusal suggests arms.
func TestTheSuggestedFenceAfterIsSafe(t *testing.T) {
	t.Parallel()
	c := contract(5, 220, 45, 30, 20)
	err := c.CheckArming(10 * time.Second)
	if err == nil {
		t.Fatal("CheckArming accepted a deadline past the eviction")
	}
	_, suggested, _ := strings.Cut(err.Error(), "at most ")
	d, perr := time.ParseDuration(suggested)
	if perr != nil {
		t.Fatalf("the refusal suggests no duration: %v", err)
	}
	c.FenceAfter = liqojanitor.Duration(d)
	if err := c.CheckArming(10 * time.Second); err != nil {
		t.Fatalf("the suggested fenceAfter %s is refused too: %v", d, err)
	}
}
