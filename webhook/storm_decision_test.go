package webhook

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// The data-plane veto (rule 20) and the storm guard (rule 21), as pure decisions.

func tunnel(status liqov1beta1.ConditionStatusType, since time.Duration) fcOpt {
	return func(f *liqov1beta1.ForeignCluster) {
		f.Status.Modules.Networking.Enabled = true
		f.Status.Modules.Networking.Conditions = append(f.Status.Modules.Networking.Conditions, liqov1beta1.Condition{
			Type: liqov1beta1.NetworkConnectionStatusCondition, Status: status,
			LastTransitionTime: metav1.NewTime(now.Add(-since)),
		})
	}
}

var (
	guarded = Options{MinUnreachable: time.Minute, Storm: liqojanitor.DefaultStormGuard}
	// storm is 3 of 4 providers unreachable, provider-a (the one marked) among them.
	storm   = liqojanitor.Storm{Unreachable: []string{"provider-a", "provider-b", "provider-c"}, Providers: 4}
	noStorm = liqojanitor.Storm{Unreachable: []string{"provider-a", "provider-b"}, Providers: 2}
)

// acked is a marking request's annotations acknowledging count, stamped by the mutating webhook in by's
// name (no stamp when by is empty).
func acked(count, by string) map[string]string {
	a := with(marked, liqojanitor.AcknowledgeUnreachableAnnotation, count)
	if by != "" {
		n, _ := strconv.Atoi(count)
		a[liqojanitor.AcknowledgedByAnnotation] = liqojanitor.Acknowledgement{At: now, By: by, Count: n}.String()
	}
	return a
}

var errBoom = errors.New("boom")

func TestDecideDataPlaneAndStorm(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		review      inputs
		opts        Options
		wantAllowed bool
		wantCode    int32
		wantPaths   []string
		wantInMsg   []string
		wantReason  string
	}{
		"a mark while the tunnel is Established is denied, whatever the API server shows (rule 20)": {
			review:     inputs{Old: fc(id, confirmed, down, tunnel(liqov1beta1.ConditionStatusEstablished, time.Hour)), New: fc(id, marked, down, tunnel(liqov1beta1.ConditionStatusEstablished, time.Hour)), permission: permitted},
			opts:       opts,
			wantCode:   http.StatusUnprocessableEntity,
			wantPaths:  []string{"status.modules.networking.conditions"},
			wantInMsg:  []string{"NetworkConnectionStatus Established since 2026-12-01T09:00:00Z", "its nodes and pods still run", "wait until Liqo reports the tunnel down"},
			wantReason: reasonTunnelUp,
		},
		"a tunnel that changed less than --min-unreachable ago is denied, with the time to retry": {
			review:     inputs{Old: fc(id, confirmed, down, tunnel(liqov1beta1.ConditionStatusError, 10*time.Second)), New: fc(id, marked, down, tunnel(liqov1beta1.ConditionStatusError, 10*time.Second)), permission: permitted},
			opts:       opts,
			wantCode:   http.StatusUnprocessableEntity,
			wantPaths:  []string{"status.modules.networking.conditions"},
			wantInMsg:  []string{"changed state only 10s ago", "NetworkConnectionStatus Error", "retry after 2026-12-01T10:00:50Z", "--min-unreachable is 1m0s"},
			wantReason: reasonTunnelUp,
		},
		"a tunnel down for longer than --min-unreachable is no veto": {
			review:      inputs{Old: fc(id, confirmed, down, tunnel(liqov1beta1.ConditionStatusError, 2*time.Minute)), New: fc(id, marked, down, tunnel(liqov1beta1.ConditionStatusError, 2*time.Minute)), permission: permitted},
			opts:        opts,
			wantAllowed: true, wantReason: reasonMarked,
		},
		"a Pending tunnel long enough is no veto": {
			review:      inputs{Old: fc(id, confirmed, down, tunnel(liqov1beta1.ConditionStatusPending, time.Hour)), New: fc(id, marked, down, tunnel(liqov1beta1.ConditionStatusPending, time.Hour)), permission: permitted},
			opts:        opts,
			wantAllowed: true, wantReason: reasonMarked,
		},
		"an Established tunnel vetoes Liqo's uninstaller too (rule 18 keeps rule 20)": {
			review:     inputs{Old: fc(id, nil, down, tunnel(liqov1beta1.ConditionStatusEstablished, time.Hour)), New: fc(id, marked, down, tunnel(liqov1beta1.ConditionStatusEstablished, time.Hour)), LiqoUninstaller: true},
			opts:       opts,
			wantCode:   http.StatusUnprocessableEntity,
			wantPaths:  []string{"status.modules.networking.conditions"},
			wantReason: reasonTunnelUp,
		},
		"no APIServerStatus and no tunnel condition: rule 12's message says there is no data-plane evidence either": {
			review:     inputs{Old: fc(id, confirmed), New: fc(id, marked), permission: permitted},
			opts:       opts,
			wantCode:   http.StatusUnprocessableEntity,
			wantPaths:  []string{"metadata.annotations[liqo-janitor.io/no-reachability-evidence]"},
			wantInMsg:  []string{"nor a NetworkConnectionStatus of its tunnel", "networking module may be off"},
			wantReason: reasonNoEvidence,
		},
		"no APIServerStatus, a tunnel down: rule 12's message says what the tunnel shows": {
			review:     inputs{Old: fc(id, confirmed, tunnel(liqov1beta1.ConditionStatusError, time.Hour)), New: fc(id, marked, tunnel(liqov1beta1.ConditionStatusError, time.Hour)), permission: permitted},
			opts:       opts,
			wantCode:   http.StatusUnprocessableEntity,
			wantInMsg:  []string{"its tunnel shows NetworkConnectionStatus Error since 2026-12-01T09:00:00Z"},
			wantReason: reasonNoEvidence,
		},
		"a mark in a storm without the acknowledgement is denied with the count, the IDs and the next step (rule 21)": {
			review:    inputs{Old: fc(id, confirmed, down), New: fc(id, marked, down), permission: permitted, Storm: storm},
			opts:      guarded,
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/acknowledge-unreachable]"},
			wantInMsg: []string{"3 of 4 providers unreachable by Liqo's evidence (provider-a, provider-b, provider-c)", "this cluster's side of a cut",
				"check this cluster's own connectivity", `(liqo-janitor.io/acknowledge-unreachable: "3")`,
				"kubectl annotate foreigncluster provider-a liqo-janitor.io/acknowledge-unreachable=3 liqo-janitor.io/confirm-cluster-id=provider-a liqo.io/foreign-cluster-permanently-unreachable=true --overwrite",
				"kubectl liqo-janitor mark provider-a (the plugin's mark asks for the count)"},
			wantReason: reasonStorm,
		},
		"a mark in a storm with the right count, stamped, is allowed": {
			review:      inputs{Old: fc(id, confirmed, down), New: fc(id, acked("3", "alice"), down), permission: permitted, Storm: storm},
			opts:        guarded,
			wantAllowed: true, wantReason: reasonMarked,
		},
		"a wrong count is denied with the right one": {
			review:     inputs{Old: fc(id, confirmed, down), New: fc(id, acked("2", "alice"), down), permission: permitted, Storm: storm},
			opts:       guarded,
			wantCode:   http.StatusUnprocessableEntity,
			wantPaths:  []string{"metadata.annotations[liqo-janitor.io/acknowledge-unreachable]"},
			wantInMsg:  []string{"it is 3 now", "liqo-janitor.io/acknowledge-unreachable=3"},
			wantReason: reasonStorm,
		},
		"a count that is no number is denied with the right one": {
			review:     inputs{Old: fc(id, confirmed, down), New: fc(id, acked("three", ""), down), permission: permitted, Storm: storm},
			opts:       guarded,
			wantCode:   http.StatusUnprocessableEntity,
			wantInMsg:  []string{"it is 3 now"},
			wantReason: reasonStorm,
		},
		"an acknowledgement the old object carried does not count": {
			review: inputs{Old: fc(id, with(confirmed, liqojanitor.AcknowledgeUnreachableAnnotation, "3"), down),
				New: fc(id, acked("3", "alice"), down), permission: permitted, Storm: storm},
			opts:       guarded,
			wantCode:   http.StatusUnprocessableEntity,
			wantPaths:  []string{"metadata.annotations[liqo-janitor.io/acknowledge-unreachable]"},
			wantInMsg:  []string{"was set before this request", "kubectl annotate foreigncluster provider-a liqo-janitor.io/acknowledge-unreachable-"},
			wantReason: reasonStorm,
		},
		"an acknowledgement without the mutating webhook's stamp is denied": {
			review:     inputs{Old: fc(id, confirmed, down), New: fc(id, acked("3", ""), down), permission: permitted, Storm: storm},
			opts:       guarded,
			wantCode:   http.StatusUnprocessableEntity,
			wantPaths:  []string{"metadata.annotations[liqo-janitor.io/acknowledged-by]"},
			wantReason: reasonNotStamped,
		},
		"an acknowledgement stamped in another's name is denied": {
			review:     inputs{Old: fc(id, confirmed, down), New: fc(id, acked("3", "mallory"), down), permission: permitted, Storm: storm},
			opts:       guarded,
			wantCode:   http.StatusUnprocessableEntity,
			wantPaths:  []string{"metadata.annotations[liqo-janitor.io/acknowledged-by]"},
			wantReason: reasonNotStamped,
		},
		"the acknowledgement without the verb is denied: rule 5 holds": {
			review:     inputs{Old: fc(id, confirmed, down), New: fc(id, acked("3", "alice"), down), Storm: storm},
			opts:       guarded,
			wantCode:   http.StatusForbidden,
			wantReason: reasonPermission,
		},
		"2 of 2 unreachable is no storm": {
			review:      inputs{Old: fc(id, confirmed, down), New: fc(id, marked, down), permission: permitted, Storm: noStorm},
			opts:        guarded,
			wantAllowed: true, wantReason: reasonMarked,
		},
		"the guard off (--storm-min-unreachable=0) sees no storm": {
			review:      inputs{Old: fc(id, confirmed, down), New: fc(id, marked, down), permission: permitted, Storm: storm},
			opts:        opts,
			wantAllowed: true, wantReason: reasonMarked,
		},
		"a mark by Liqo's uninstaller in a storm is refused too (rule 18 keeps rule 21)": {
			review:     inputs{Old: fc(id, nil, down), New: fc(id, marked, down), LiqoUninstaller: true, Storm: storm},
			opts:       guarded,
			wantCode:   http.StatusUnprocessableEntity,
			wantReason: reasonStorm,
		},
		"a mark by Liqo's uninstaller outside a storm passes": {
			review:      inputs{Old: fc(id, nil, down), New: fc(id, marked, down), LiqoUninstaller: true, Storm: liqojanitor.Storm{Unreachable: []string{id}, Providers: 4}},
			opts:        guarded,
			wantAllowed: true, wantReason: reasonUninstallerMark,
		},
		"a mark by Liqo's uninstaller that acknowledges a storm needs the verb, as anyone's": {
			review:     inputs{Old: fc(id, nil, down), New: fc(id, acked("3", "alice"), down), LiqoUninstaller: true, Storm: storm},
			opts:       guarded,
			wantCode:   http.StatusForbidden,
			wantReason: reasonPermission,
		},
		"the ForeignClusters cannot be listed: fail closed": {
			review:     inputs{Old: fc(id, confirmed, down), New: fc(id, marked, down), permission: permitted, StormErr: errBoom},
			opts:       guarded,
			wantCode:   http.StatusUnprocessableEntity,
			wantInMsg:  []string{"cannot list ForeignClusters to count", "boom"},
			wantReason: reasonStorm,
		},
		"the acknowledgement ahead of the mark is denied, for everyone": {
			review:     inputs{Old: fc(id, nil), New: fc(id, with(nil, liqojanitor.AcknowledgeUnreachableAnnotation, "3")), permission: permitted},
			opts:       guarded,
			wantCode:   http.StatusUnprocessableEntity,
			wantPaths:  []string{"metadata.annotations[liqo-janitor.io/acknowledge-unreachable]"},
			wantInMsg:  []string{"counts only in the request that sets the mark"},
			wantReason: reasonAckEarly,
		},
		"the acknowledgement's stamp on an unmarked ForeignCluster is denied": {
			review:     inputs{Old: fc(id, nil), New: fc(id, with(nil, liqojanitor.AcknowledgedByAnnotation, "x"))},
			opts:       guarded,
			wantCode:   http.StatusUnprocessableEntity,
			wantPaths:  []string{"metadata.annotations[liqo-janitor.io/acknowledged-by]"},
			wantReason: reasonStamps,
		},
		"the acknowledgement and its stamp are immutable while marked": {
			review: inputs{Old: fc(id, acked("3", "alice"), down), New: fc(id, with(acked("3", "alice"), liqojanitor.AcknowledgeUnreachableAnnotation, "4"), down)},
			opts:   guarded, wantCode: http.StatusUnprocessableEntity,
			wantPaths:  []string{"metadata.annotations[liqo-janitor.io/acknowledge-unreachable]"},
			wantReason: reasonImmutable,
		},
		"removing the acknowledgement from an unmarked ForeignCluster is anyone's": {
			review:      inputs{Old: fc(id, with(nil, liqojanitor.AcknowledgeUnreachableAnnotation, "3")), New: fc(id, nil)},
			opts:        guarded,
			wantAllowed: true, wantReason: reasonOther,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := tc.review
			r.User, r.Now = alice, now
			v := decide(&r, tc.opts)
			assertVerdict(t, &v, r.New, tc.wantAllowed, tc.wantCode, tc.wantPaths, tc.wantInMsg)
			if v.Reason != tc.wantReason {
				t.Errorf("Reason = %q, want %q (errors: %v)", v.Reason, tc.wantReason, v.Errors)
			}
		})
	}
}

func TestStampAcknowledgement(t *testing.T) {
	t.Parallel()
	set, remove := stamp(fc(id, confirmed), fc(id, with(marked, liqojanitor.AcknowledgeUnreachableAnnotation, "3",
		liqojanitor.AcknowledgedByAnnotation, "2020-01-01T00:00:00Z by mallory: 3 unreachable acknowledged")), "alice", false, now)
	if want := "2026-12-01T10:00:00Z by alice: 3 unreachable acknowledged"; set[liqojanitor.AcknowledgedByAnnotation] != want || len(remove) != 0 {
		t.Errorf("set = %v, remove = %v; want acknowledged-by %q", set, remove, want)
	}
	_, remove = stamp(fc(id, confirmed), fc(id, with(marked, liqojanitor.AcknowledgedByAnnotation, "forged")), "alice", false, now)
	if strings.Join(remove, ",") != liqojanitor.AcknowledgedByAnnotation {
		t.Errorf("a stamp without an acknowledgement: remove = %v, want it removed", remove)
	}
	_, remove = stamp(fc(id, acked("3", "alice")), fc(id, without(acked("3", "alice"), liqojanitor.MarkAnnotation)), "alice", false, now)
	for _, key := range []string{liqojanitor.AcknowledgeUnreachableAnnotation, liqojanitor.AcknowledgedByAnnotation} {
		if !strings.Contains(strings.Join(remove, ","), key) {
			t.Errorf("unmarking: remove = %v, want %s with the mark (rule 7)", remove, key)
		}
	}
}
