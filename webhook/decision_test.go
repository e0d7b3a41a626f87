package webhook

import (
	"errors"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

var (
	now     = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	opts    = Options{MinUnreachable: time.Minute}
	alice   = authenticationv1.UserInfo{Username: "alice", Groups: []string{"ops"}}
	stamped = map[string]string{
		liqojanitor.MarkedByAnnotation: "alice",
		liqojanitor.MarkedAtAnnotation: now.Format(time.RFC3339),
	}
)

type fcOpt func(*liqov1beta1.ForeignCluster)

func fc(id string, annotations map[string]string, o ...fcOpt) *liqov1beta1.ForeignCluster {
	f := &liqov1beta1.ForeignCluster{
		ObjectMeta: metav1.ObjectMeta{Name: id, Annotations: maps.Clone(annotations),
			Labels: map[string]string{liqojanitor.RemoteClusterIDLabel: id}},
		Spec: liqov1beta1.ForeignClusterSpec{ClusterID: liqov1beta1.ClusterID(id)},
	}
	for _, opt := range o {
		opt(f)
	}
	return f
}

func apiServer(status liqov1beta1.ConditionStatusType, since time.Duration) fcOpt {
	return func(f *liqov1beta1.ForeignCluster) {
		f.Status.Conditions = append(f.Status.Conditions, liqov1beta1.Condition{
			Type: liqov1beta1.APIServerStatusCondition, Status: status,
			LastTransitionTime: metav1.NewTime(now.Add(-since)),
		})
	}
}

func withLabels(kv ...string) fcOpt {
	return func(f *liqov1beta1.ForeignCluster) {
		f.Labels = map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			f.Labels[kv[i]] = kv[i+1]
		}
	}
}

func with(base map[string]string, kv ...string) map[string]string {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func without(base map[string]string, keys ...string) map[string]string {
	out := maps.Clone(base)
	for _, k := range keys {
		delete(out, k)
	}
	return out
}

const id = "provider-a"

var (
	confirmed = map[string]string{liqojanitor.ConfirmAnnotation: id}
	marked    = with(stamped, liqojanitor.ConfirmAnnotation, id, liqojanitor.MarkAnnotation, "true")
	down      = apiServer(liqov1beta1.ConditionStatusError, time.Hour)
	permitted = permission{Allowed: true}
	// returnedAt is when the janitor saw the provider of returned answer again, after its mark an hour ago.
	returnedAt = now.Add(-10*time.Minute + 250*time.Millisecond)
	returned   = with(marked, liqojanitor.MarkedAtAnnotation, now.Add(-time.Hour).Format(time.RFC3339),
		liqojanitor.CleanupAnnotation, liqojanitor.ReturnRecord{At: returnedAt, How: "Liqo's APIServerStatus turned Established"}.String())
)

// fence is a fence record as the gate stamps it.
func fence(at time.Time, by string, ret time.Time) string {
	return liqojanitor.FenceRecord{At: at, By: by, Return: ret, Counts: "shadowpods 3"}.String()
}

func TestDecide(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		review      inputs
		wantAllowed bool
		wantCode    int32
		wantPaths   []string
		wantInMsg   []string
		wantWarning string
	}{
		"marking a confirmed, long-unreachable provider with permission is allowed": {
			review:      inputs{Old: fc(id, confirmed, down), New: fc(id, marked, down), permission: permitted},
			wantAllowed: true,
		},
		"confirmation and mark in the same request are allowed": {
			review:      inputs{Old: fc(id, nil, down), New: fc(id, marked, down), permission: permitted},
			wantAllowed: true,
		},
		"creating a ForeignCluster already marked and confirmed is denied (rule 13)": {
			review:    inputs{New: fc(id, marked, down), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo.io/foreign-cluster-permanently-unreachable]"},
			wantInMsg: []string{"cannot be created marked", "create it without"},
		},
		"marking without the confirmation is denied with the annotate command": {
			review:    inputs{Old: fc(id, nil, down), New: fc(id, without(marked, liqojanitor.ConfirmAnnotation), down), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/confirm-cluster-id]"},
			wantInMsg: []string{`"provider-a"`, "kubectl annotate foreigncluster provider-a liqo-janitor.io/confirm-cluster-id=provider-a liqo.io/foreign-cluster-permanently-unreachable=true --overwrite"},
		},
		"marking with a wrong confirmation is denied with the right ID": {
			review:    inputs{Old: fc(id, nil, down), New: fc(id, with(marked, liqojanitor.ConfirmAnnotation, "provider-b"), down), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/confirm-cluster-id]"},
			wantInMsg: []string{"kubectl annotate foreigncluster provider-a liqo-janitor.io/confirm-cluster-id=provider-a --overwrite"},
		},
		"a wrong confirmation added ahead of the mark is denied at once": {
			review:    inputs{Old: fc(id, nil), New: fc(id, with(nil, liqojanitor.ConfirmAnnotation, "provider-b")), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/confirm-cluster-id]"},
			wantInMsg: []string{"liqo-janitor.io/confirm-cluster-id=provider-a"},
		},
		"a right confirmation added ahead of the mark by a holder of the verb is allowed (rule 19)": {
			review:      inputs{Old: fc(id, nil), New: fc(id, confirmed), permission: permitted},
			wantAllowed: true,
		},
		"a confirmation added ahead of the mark without the verb is forbidden, saying who may (rule 19)": {
			review:    inputs{Old: fc(id, nil), New: fc(id, confirmed)},
			wantCode:  http.StatusForbidden,
			wantPaths: []string{"metadata.annotations[liqo.io/foreign-cluster-permanently-unreachable]"},
			wantInMsg: []string{`user "alice" may not set liqo-janitor.io/confirm-cluster-id or liqo-janitor.io/reason ahead of the mark`,
				"liqoctl force unpeer", "kubectl create clusterrolebinding mark-unreachable-alice",
				"ask a holder of the verb to confirm it (kubectl annotate foreigncluster provider-a liqo-janitor.io/confirm-cluster-id=provider-a --overwrite)",
				"kubectl liqo-janitor mark provider-a"},
		},
		"a reason added ahead of the mark without the verb is forbidden (rule 19)": {
			review:    inputs{Old: fc(id, nil), New: fc(id, with(nil, liqojanitor.ReasonAnnotation, "dc lost"))},
			wantCode:  http.StatusForbidden,
			wantPaths: []string{"metadata.annotations[liqo.io/foreign-cluster-permanently-unreachable]"},
		},
		"a reason changed ahead of the mark without the verb is forbidden (rule 19)": {
			review:   inputs{Old: fc(id, with(nil, liqojanitor.ReasonAnnotation, "dc lost")), New: fc(id, with(nil, liqojanitor.ReasonAnnotation, "dc flooded"))},
			wantCode: http.StatusForbidden,
		},
		"a ForeignCluster created with a confirmation by someone without the verb is forbidden (rule 19)": {
			review:   inputs{New: fc(id, confirmed)},
			wantCode: http.StatusForbidden,
		},
		"a confirmation ahead of the mark by Liqo's uninstaller needs the verb too (rule 18 exempts its mark only)": {
			review:   inputs{Old: fc(id, nil), New: fc(id, confirmed), LiqoUninstaller: true},
			wantCode: http.StatusForbidden,
		},
		"removing a confirmation and a reason ahead of the mark needs nothing": {
			review:      inputs{Old: fc(id, with(confirmed, liqojanitor.ReasonAnnotation, "x")), New: fc(id, nil)},
			wantAllowed: true,
		},
		"an unrelated change of an armed, unmarked cluster needs nothing (Liqo's own updates)": {
			review:      inputs{Old: fc(id, with(confirmed, liqojanitor.ReasonAnnotation, "x")), New: fc(id, with(confirmed, liqojanitor.ReasonAnnotation, "x", "team", "blue"))},
			wantAllowed: true,
		},
		"the no-evidence key ahead of the mark is refused, even from a holder of the verb (rule 12)": {
			review:    inputs{Old: fc(id, confirmed), New: fc(id, with(confirmed, liqojanitor.NoEvidenceAnnotation, id)), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/no-reachability-evidence]"},
			wantInMsg: []string{"counts only in the request that sets the mark", "kubectl liqo-janitor mark provider-a",
				"kubectl annotate foreigncluster provider-a liqo-janitor.io/no-reachability-evidence=provider-a liqo-janitor.io/confirm-cluster-id=provider-a liqo.io/foreign-cluster-permanently-unreachable=true --overwrite"},
		},
		"removing a no-evidence key from an unmarked cluster needs nothing": {
			review:      inputs{Old: fc(id, with(nil, liqojanitor.NoEvidenceAnnotation, id)), New: fc(id, nil)},
			wantAllowed: true,
		},
		"a bare mark over a no-evidence key set earlier is refused: nobody who marks typed it (rule 12)": {
			review: inputs{Old: fc(id, with(confirmed, liqojanitor.NoEvidenceAnnotation, id)),
				New: fc(id, with(marked, liqojanitor.NoEvidenceAnnotation, id)), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/no-reachability-evidence]"},
			wantInMsg: []string{"was set before this request", "kubectl annotate foreigncluster provider-a liqo-janitor.io/no-reachability-evidence-",
				"then mark with it in one request"},
		},
		"a no-evidence key set earlier does not matter where Liqo keeps evidence": {
			review: inputs{Old: fc(id, with(confirmed, liqojanitor.NoEvidenceAnnotation, id), down),
				New: fc(id, with(marked, liqojanitor.NoEvidenceAnnotation, id), down), permission: permitted},
			wantAllowed: true,
		},
		"a mark value other than true is denied": {
			review:    inputs{Old: fc(id, confirmed, down), New: fc(id, with(confirmed, liqojanitor.MarkAnnotation, "yes"), down)},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo.io/foreign-cluster-permanently-unreachable]"},
			wantInMsg: []string{`exactly "true"`, "liqo.io/foreign-cluster-permanently-unreachable=true --overwrite"},
		},
		"marking the local cluster is denied": {
			review:    inputs{Old: fc(id, confirmed, down), New: fc(id, marked, down), LocalClusterID: id, permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"spec.clusterID"},
			wantInMsg: []string{"this cluster's own ID", "kubectl get foreignclusters"},
		},
		"marking while the local cluster ID cannot be read is denied (fail closed)": {
			review: inputs{Old: fc(id, confirmed, down), New: fc(id, marked, down), permission: permitted,
				LocalClusterIDErr: errors.New("no ConfigMap labelled app.kubernetes.io/name=clusterid-configmap")},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"spec.clusterID"},
			wantInMsg: []string{"cannot be read", "no ConfigMap labelled", "kubectl get configmap -A -l app.kubernetes.io/name=clusterid-configmap"},
		},
		"marking while Liqo sees the API server Established is denied": {
			review: inputs{Old: fc(id, confirmed, apiServer(liqov1beta1.ConditionStatusEstablished, time.Hour)),
				New: fc(id, marked, apiServer(liqov1beta1.ConditionStatusEstablished, time.Hour)), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"status.conditions"},
			wantInMsg: []string{"reachable", "kubectl get foreigncluster provider-a -o jsonpath='{.status.conditions}'"},
		},
		"marking a provider unreachable for less than min-unreachable is denied": {
			review: inputs{Old: fc(id, confirmed), New: fc(id, marked, apiServer(liqov1beta1.ConditionStatusError, 10*time.Second)),
				permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"status.conditions"},
			wantInMsg: []string{"only for 10s", "retry after 2026-12-01T10:00:50Z"},
		},
		"marking a provider with no APIServerStatus condition is denied without the no-evidence key (rule 12)": {
			review:    inputs{Old: fc(id, confirmed), New: fc(id, marked), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/no-reachability-evidence]"},
			wantInMsg: []string{"no APIServerStatus condition", "liqo-janitor.io/no-reachability-evidence=provider-a", "kubectl liqo-janitor mark provider-a"},
		},
		"a wrong no-evidence key is no key": {
			review:    inputs{Old: fc(id, confirmed), New: fc(id, with(marked, liqojanitor.NoEvidenceAnnotation, "provider-b")), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/no-reachability-evidence]"},
		},
		"marking a provider with no APIServerStatus condition and the no-evidence key is allowed": {
			review:      inputs{Old: fc(id, confirmed), New: fc(id, with(marked, liqojanitor.NoEvidenceAnnotation, id)), permission: permitted},
			wantAllowed: true,
		},
		"marking a ForeignCluster without Liqo's label is denied: Liqo does not probe it (rule 9)": {
			review:    inputs{Old: fc(id, confirmed, down, withLabels()), New: fc(id, marked, down, withLabels()), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.labels[liqo.io/remote-cluster-id]"},
			wantInMsg: []string{"does not carry the label liqo.io/remote-cluster-id", "kubectl label foreigncluster provider-a liqo.io/remote-cluster-id=provider-a --overwrite"},
		},
		"marking a ForeignCluster whose Liqo label names another cluster is denied": {
			review: inputs{Old: fc(id, confirmed, down, withLabels(liqojanitor.RemoteClusterIDLabel, "provider-b")),
				New: fc(id, marked, down, withLabels(liqojanitor.RemoteClusterIDLabel, "provider-b")), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.labels[liqo.io/remote-cluster-id]"},
			wantInMsg: []string{`liqo.io/remote-cluster-id="provider-b", not its spec.clusterID`},
		},
		"marking while the provider answers the gate's own probe is denied, whatever Liqo's status says (rule 4)": {
			review:    inputs{Old: fc(id, confirmed, down), New: fc(id, marked, down), permission: permitted, Probe: probeResult{Answered: "https://10.0.0.1:6443"}},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"status.conditions"},
			wantInMsg: []string{"the provider answers at https://10.0.0.1:6443"},
		},
		"adding liqo.io/webhook-skip to a marked cluster is denied, even with permission (rule 11)": {
			review:    inputs{Old: fc(id, marked, down), New: fc(id, marked, down, withLabels(liqojanitor.RemoteClusterIDLabel, id, liqojanitor.WebhookSkipLabel, "true")), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.labels[liqo.io/webhook-skip]"},
			wantInMsg: []string{"cannot change while the cluster is marked", "liqo.io/foreign-cluster-permanently-unreachable-"},
		},
		"removing liqo.io/remote-cluster-id from a marked cluster is denied": {
			review:    inputs{Old: fc(id, marked, down), New: fc(id, marked, down, withLabels())},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.labels[liqo.io/remote-cluster-id]"},
		},
		"removing Liqo's label together with the mark is denied: unmark first": {
			review:    inputs{Old: fc(id, marked, down), New: fc(id, nil, down, withLabels()), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.labels[liqo.io/remote-cluster-id]"},
		},
		"Liqo's labels change freely on an unmarked cluster": {
			review:      inputs{Old: fc(id, nil), New: fc(id, nil, withLabels(liqojanitor.WebhookSkipLabel, "true"))},
			wantAllowed: true,
		},
		"changing the reason while marked is denied (rule 14)": {
			review:    inputs{Old: fc(id, with(marked, liqojanitor.ReasonAnnotation, "dc lost"), down), New: fc(id, with(marked, liqojanitor.ReasonAnnotation, "nothing happened"), down)},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/reason]"},
		},
		"a user who is not the janitor may not write the cleanup annotation, even on an unmarked cluster (rule 14)": {
			review:    inputs{Old: fc(id, nil), New: fc(id, with(nil, liqojanitor.CleanupAnnotation, "pods 3/3")), JanitorUser: "system:serviceaccount:x:liqo-janitor"},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/cleanup]"},
			wantInMsg: []string{"written only by liqo-janitor's own identity", "liqo-janitor.io/paused=true"},
		},
		"a user who is not the janitor may not remove a finished clean-up's summary or its first sight": {
			review: inputs{Old: fc(id, with(marked, liqojanitor.CleanupAnnotation, "pods 3/3", liqojanitor.FirstSeenAnnotation, "2026-12-01T09:00:00Z"), down),
				New: fc(id, marked, down), JanitorUser: "system:serviceaccount:x:liqo-janitor"},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/cleanup]", "metadata.annotations[liqo-janitor.io/first-seen-at]"},
		},
		"the janitor writes its own keys": {
			review: inputs{Old: fc(id, marked, down), New: fc(id, with(marked, liqojanitor.CleanupAnnotation, "pods 3/3", liqojanitor.FirstSeenAnnotation, "2026-12-01T09:00:00Z"), down),
				JanitorUser: "alice"},
			wantAllowed: true,
		},
		"unmarking removes the grace-window plan and record with the mark": {
			review: inputs{Old: fc(id, with(marked, liqojanitor.CleanupAnnotation, liqojanitor.GracePlan{Left: 20 * time.Second, Plan: "would release pods 3"}.String(), liqojanitor.FirstSeenAnnotation, "2026-12-01T09:00:00Z",
				liqojanitor.GraceEndsAnnotation, "2026-12-01T09:00:30Z"), down), New: fc(id, nil, down), permission: permitted, JanitorUser: "janitor"},
			wantAllowed: true, wantWarning: "not restored",
		},
		"unmarking may not remove a finished clean-up's summary": {
			review:    inputs{Old: fc(id, with(marked, liqojanitor.CleanupAnnotation, "pods 3/3"), down), New: fc(id, nil, down), permission: permitted, JanitorUser: "janitor"},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/cleanup]"},
		},
		"marking without the break-glass permission is forbidden with the binding command": {
			review:    inputs{Old: fc(id, confirmed, down), New: fc(id, marked, down), permission: permission{Reason: "no RBAC policy matched"}},
			wantCode:  http.StatusForbidden,
			wantPaths: []string{"metadata.annotations[liqo.io/foreign-cluster-permanently-unreachable]"},
			wantInMsg: []string{`user "alice"`, "kubectl create clusterrolebinding mark-unreachable-alice --clusterrole=" + liqojanitor.MarkRoleName + " --user=alice", "no RBAC policy matched"},
		},
		"marking when the permission cannot be checked is forbidden": {
			review:    inputs{Old: fc(id, confirmed, down), New: fc(id, marked, down), permission: permission{Err: errors.New("timeout")}},
			wantCode:  http.StatusForbidden,
			wantPaths: []string{"metadata.annotations[liqo.io/foreign-cluster-permanently-unreachable]"},
			wantInMsg: []string{"cannot check", "timeout"},
		},
		"marking without the mutating webhook's stamps is denied": {
			review:    inputs{Old: fc(id, confirmed, down), New: fc(id, without(marked, liqojanitor.MarkedByAnnotation), down), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/marked-by]"},
			wantInMsg: []string{"kubectl get mutatingwebhookconfigurations"},
		},
		"marking with stamps of the requester but 59s old is denied: they are not this request's": {
			review: inputs{Old: fc(id, confirmed, down), New: fc(id, with(marked, liqojanitor.MarkedAtAnnotation, now.Add(-59*time.Second).Format(time.RFC3339)), down),
				permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/marked-by]"},
		},
		"marking with stamps of the requester a few seconds old passes (re-invocation)": {
			review: inputs{Old: fc(id, confirmed, down), New: fc(id, with(marked, liqojanitor.MarkedAtAnnotation, now.Add(-3*time.Second).Format(time.RFC3339)), down),
				permission: permitted},
			wantAllowed: true,
		},
		"marking while another ForeignCluster has the same cluster ID is denied, naming it": {
			review:    inputs{Old: fc(id, confirmed, down), New: fc(id, marked, down), permission: permitted, Duplicates: []duplicate{{Name: "provider-a-copy"}}},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"spec.clusterID"},
			wantInMsg: []string{"ForeignCluster provider-a-copy has the same spec.clusterID", "kubectl delete foreigncluster"},
		},
		"marking while another ForeignCluster carries Liqo's label for the cluster ID is denied, naming it": {
			review: inputs{Old: fc(id, confirmed, down), New: fc(id, marked, down), permission: permitted,
				Duplicates: []duplicate{{Name: "impostor", ByLabel: true}}},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"spec.clusterID"},
			wantInMsg: []string{"ForeignCluster impostor carries the label liqo.io/remote-cluster-id=provider-a", "kubectl get foreignclusters -l liqo.io/remote-cluster-id=provider-a"},
		},
		"marking when the other ForeignClusters cannot be listed is denied (fail closed)": {
			review:    inputs{Old: fc(id, confirmed, down), New: fc(id, marked, down), permission: permitted, DuplicatesErr: errors.New("timeout")},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"spec.clusterID"},
			wantInMsg: []string{"cannot list ForeignClusters", "timeout"},
		},
		"unpausing a marked cluster without permission is forbidden": {
			review:    inputs{Old: fc(id, with(marked, liqojanitor.PausedAnnotation, "true"), down), New: fc(id, marked, down)},
			wantCode:  http.StatusForbidden,
			wantPaths: []string{"metadata.annotations[liqo.io/foreign-cluster-permanently-unreachable]"},
			wantInMsg: []string{"may not unpause it", "kubectl create clusterrolebinding mark-unreachable-alice"},
		},
		"changing paused from true to anything else on a marked cluster is unpausing": {
			review:    inputs{Old: fc(id, with(marked, liqojanitor.PausedAnnotation, "true"), down), New: fc(id, with(marked, liqojanitor.PausedAnnotation, "no"), down)},
			wantCode:  http.StatusForbidden,
			wantPaths: []string{"metadata.annotations[liqo.io/foreign-cluster-permanently-unreachable]"},
		},
		"unpausing a marked cluster with permission is allowed": {
			review:      inputs{Old: fc(id, with(marked, liqojanitor.PausedAnnotation, "true"), down), New: fc(id, marked, down), permission: permitted},
			wantAllowed: true,
		},
		"recording a fence on a marked cluster without permission is forbidden (it ends a critical alert)": {
			review: inputs{Old: fc(id, returned, down), New: fc(id, with(returned, liqojanitor.FencedAnnotation,
				fence(now, "alice", returnedAt)), down)},
			wantCode:  http.StatusForbidden,
			wantPaths: []string{"metadata.annotations[liqo.io/foreign-cluster-permanently-unreachable]"},
			wantInMsg: []string{"may not record a fence (liqo-janitor.io/fenced)", "kubectl create clusterrolebinding mark-unreachable-alice"},
		},
		"a fence record naming another user is refused": {
			review: inputs{Old: fc(id, returned, down), New: fc(id, with(returned, liqojanitor.FencedAnnotation,
				fence(now, "mallory", returnedAt)), down), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/fenced]"},
			wantInMsg: []string{"one naming another user, another time or another return is refused", "kubectl liqo-janitor fence provider-a"},
		},
		"a backdated fence record is refused": {
			review: inputs{Old: fc(id, returned, down), New: fc(id, with(returned, liqojanitor.FencedAnnotation,
				fence(now.Add(-time.Hour), "alice", returnedAt)), down), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/fenced]"},
		},
		"a future-dated fence record is refused": {
			review: inputs{Old: fc(id, returned, down), New: fc(id, with(returned, liqojanitor.FencedAnnotation,
				fence(now.Add(time.Hour), "alice", returnedAt)), down), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/fenced]"},
		},
		"a fence record naming another return is refused": {
			review: inputs{Old: fc(id, returned, down), New: fc(id, with(returned, liqojanitor.FencedAnnotation,
				fence(now, "alice", returnedAt.Add(time.Second))), down), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/fenced]"},
		},
		"a fence record in the plugin's spelling, naming no return, is refused (the mutating webhook rewrites it)": {
			review: inputs{Old: fc(id, returned, down), New: fc(id, with(returned, liqojanitor.FencedAnnotation,
				liqojanitor.FenceRecord{At: now, By: "alice", Counts: "shadowpods 3"}.String()), down), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/fenced]"},
		},
		"a fresh fence record of the requester naming the recorded return, with permission, is allowed": {
			review: inputs{Old: fc(id, returned, down), New: fc(id, with(returned, liqojanitor.FencedAnnotation,
				fence(now, "alice", returnedAt)), down), permission: permitted},
			wantAllowed: true,
		},
		"a fence record with no recorded return is refused: nothing to fence": {
			review: inputs{Old: fc(id, marked, down), New: fc(id, with(marked, liqojanitor.FencedAnnotation,
				fence(now, "alice", returnedAt)), down), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/fenced]"},
			wantInMsg: []string{"nothing to fence: the janitor has recorded no return of this provider", "kubectl liqo-janitor status provider-a"},
		},
		"a fence record of a return recorded for an earlier mark is refused: nothing to fence": {
			review: inputs{Old: fc(id, with(returned, liqojanitor.MarkedAtAnnotation, now.Add(-time.Minute).Format(time.RFC3339)), down),
				New: fc(id, with(returned, liqojanitor.MarkedAtAnnotation, now.Add(-time.Minute).Format(time.RFC3339),
					liqojanitor.FencedAnnotation, fence(now, "alice", returnedAt)), down), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantInMsg: []string{"nothing to fence"},
		},
		"a fence record on an unmarked cluster is refused, even from a holder of the verb (rule 15)": {
			review:    inputs{Old: fc(id, nil), New: fc(id, with(nil, liqojanitor.FencedAnnotation, fence(now, "alice", returnedAt))), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/fenced]"},
			wantInMsg: []string{"is not marked permanently unreachable", "nothing to fence", "kubectl annotate foreigncluster provider-a liqo-janitor.io/fenced-"},
		},
		"changing a fence record on an unmarked cluster is refused (rule 15)": {
			review:   inputs{Old: fc(id, with(nil, liqojanitor.FencedAnnotation, "x")), New: fc(id, with(nil, liqojanitor.FencedAnnotation, "y"))},
			wantCode: http.StatusUnprocessableEntity,
		},
		"removing a fence record from an unmarked cluster needs nothing": {
			review:      inputs{Old: fc(id, with(nil, liqojanitor.FencedAnnotation, "x")), New: fc(id, nil)},
			wantAllowed: true,
		},
		"a mark that carries a fence record is refused: the mutating webhook did not run (rule 15)": {
			review: inputs{Old: fc(id, with(confirmed, liqojanitor.FencedAnnotation, "x"), down),
				New: fc(id, with(marked, liqojanitor.FencedAnnotation, "x"), down), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/fenced]"},
			wantInMsg: []string{"a mark never starts fenced", "kubectl annotate foreigncluster provider-a liqo-janitor.io/fenced-"},
		},
		"unpausing an unmarked cluster needs nothing": {
			review:      inputs{Old: fc(id, with(nil, liqojanitor.PausedAnnotation, "true")), New: fc(id, nil)},
			wantAllowed: true,
		},
		"removing the mark with permission is allowed with a warning": {
			review:      inputs{Old: fc(id, marked, down), New: fc(id, nil, down), permission: permitted},
			wantAllowed: true,
			wantWarning: "not restored",
		},
		"removing the mark without permission is forbidden": {
			review:    inputs{Old: fc(id, marked, down), New: fc(id, nil, down)},
			wantCode:  http.StatusForbidden,
			wantPaths: []string{"metadata.annotations[liqo.io/foreign-cluster-permanently-unreachable]"},
			wantInMsg: []string{"may not remove its permanently-unreachable mark"},
		},
		"turning the mark's value to false is denied": {
			review:    inputs{Old: fc(id, marked, down), New: fc(id, with(marked, liqojanitor.MarkAnnotation, "false"), down), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo.io/foreign-cluster-permanently-unreachable]"},
			wantInMsg: []string{"kubectl annotate foreigncluster provider-a liqo.io/foreign-cluster-permanently-unreachable-"},
		},
		"changing the confirmation while marked is denied, naming it": {
			review:    inputs{Old: fc(id, marked, down), New: fc(id, with(marked, liqojanitor.ConfirmAnnotation, "provider-b"), down)},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/confirm-cluster-id]"},
			wantInMsg: []string{"liqo-janitor.io/confirm-cluster-id cannot change while", "liqo.io/foreign-cluster-permanently-unreachable-"},
		},
		"changing marked-by and removing marked-at while marked are both denied": {
			review:    inputs{Old: fc(id, marked, down), New: fc(id, without(with(marked, liqojanitor.MarkedByAnnotation, "mallory"), liqojanitor.MarkedAtAnnotation), down)},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/marked-by]", "metadata.annotations[liqo-janitor.io/marked-at]"},
		},
		"other annotations on a marked cluster pass": {
			review:      inputs{Old: fc(id, marked, down), New: fc(id, with(marked, liqojanitor.PausedAnnotation, "true", "team", "blue"), down)},
			wantAllowed: true,
		},
		"stamps without the mark are denied": {
			review:    inputs{Old: fc(id, nil), New: fc(id, with(nil, liqojanitor.MarkedByAnnotation, "alice"))},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/marked-by]"},
			wantInMsg: []string{"kubectl annotate foreigncluster provider-a liqo-janitor.io/marked-by-"},
		},
		"an unrelated change passes": {
			review:      inputs{Old: fc(id, nil), New: fc(id, with(nil, "team", "blue"))},
			wantAllowed: true,
		},
		"a mark by Liqo's uninstaller, confirmed by the gate, needs neither the verb nor the no-evidence key (rule 18)": {
			review:      inputs{Old: fc(id, nil), New: fc(id, marked), LiqoUninstaller: true},
			wantAllowed: true,
		},
		"a mark by Liqo's uninstaller is still vetoed while Liqo sees the provider Established (rule 4)": {
			review: inputs{Old: fc(id, nil, apiServer(liqov1beta1.ConditionStatusEstablished, time.Hour)),
				New: fc(id, marked, apiServer(liqov1beta1.ConditionStatusEstablished, time.Hour)), LiqoUninstaller: true},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"status.conditions"},
		},
		"a mark by Liqo's uninstaller is still refused on a duplicate (rule 9)": {
			review:    inputs{Old: fc(id, nil, down), New: fc(id, marked, down), LiqoUninstaller: true, Duplicates: []duplicate{{Name: "provider-a-copy"}}},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"spec.clusterID"},
		},
		"a mark by Liqo's uninstaller is still refused on the local cluster (rule 3)": {
			review:    inputs{Old: fc(id, nil, down), New: fc(id, marked, down), LiqoUninstaller: true, LocalClusterID: id},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"spec.clusterID"},
		},
		"a mark by Liqo's uninstaller without the gate's stamps is refused (the mutating webhook did not run)": {
			review:    inputs{Old: fc(id, nil), New: fc(id, with(nil, liqojanitor.MarkAnnotation, "true")), LiqoUninstaller: true},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/confirm-cluster-id]", "metadata.annotations[liqo-janitor.io/marked-by]"},
		},
		"a bare mark by anyone else is refused as before": {
			review:    inputs{Old: fc(id, nil, down), New: fc(id, with(stamped, liqojanitor.MarkAnnotation, "true"), down), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/confirm-cluster-id]"},
		},
		"setting the deletion override on a marked cluster without permission is forbidden (rule 17)": {
			review:    inputs{Old: fc(id, marked, down), New: fc(id, with(marked, liqojanitor.AllowDeleteAnnotation, id), down)},
			wantCode:  http.StatusForbidden,
			wantPaths: []string{"metadata.annotations[liqo.io/foreign-cluster-permanently-unreachable]"},
			wantInMsg: []string{"may not set the break-glass override liqo-janitor.io/allow-delete-while-unpeering"},
		},
		"setting the deletion override on a marked cluster with permission is allowed": {
			review:      inputs{Old: fc(id, marked, down), New: fc(id, with(marked, liqojanitor.AllowDeleteAnnotation, id), down), permission: permitted},
			wantAllowed: true,
		},
		"a deletion override naming another cluster is refused": {
			review:    inputs{Old: fc(id, marked, down), New: fc(id, with(marked, liqojanitor.AllowDeleteAnnotation, "provider-b"), down), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/allow-delete-while-unpeering]"},
			wantInMsg: []string{"liqo-janitor.io/allow-delete-while-unpeering=provider-a --overwrite"},
		},
		"removing the deletion override from a marked cluster needs nothing": {
			review:      inputs{Old: fc(id, with(marked, liqojanitor.AllowDeleteAnnotation, id), down), New: fc(id, marked, down)},
			wantAllowed: true,
		},
		"a mark still carrying the deletion override is refused: the mutating webhook did not run (rule 22)": {
			review:    inputs{Old: fc(id, confirmed, down), New: fc(id, with(marked, liqojanitor.AllowDeleteAnnotation, id), down), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/allow-delete-while-unpeering]"},
			wantInMsg: []string{"a mark never starts with the break-glass override", "kubectl annotate foreigncluster provider-a liqo-janitor.io/allow-delete-while-unpeering-"},
		},
		"the deletion override on an unmarked cluster is refused, for a holder of the verb too (rule 22)": {
			review:    inputs{Old: fc(id, nil, down), New: fc(id, with(nil, liqojanitor.AllowDeleteAnnotation, id), down), permission: permitted},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/allow-delete-while-unpeering]"},
			wantInMsg: []string{"is not marked permanently unreachable", "gate rule 22"},
		},
		"a deletion override left on an unmarked cluster may be removed by anyone (rule 22)": {
			review:      inputs{Old: fc(id, with(nil, liqojanitor.AllowDeleteAnnotation, id), down), New: fc(id, nil, down)},
			wantAllowed: true,
		},
		"the unpeering record is the janitor's (rule 14)": {
			review:    inputs{Old: fc(id, marked, down), New: fc(id, with(marked, liqojanitor.UnpeeringAnnotation, `{"phase":"Complete"}`), down), JanitorUser: "janitor"},
			wantCode:  http.StatusUnprocessableEntity,
			wantPaths: []string{"metadata.annotations[liqo-janitor.io/unpeering]"},
		},
		"unmarking removes the unpeering record and the override with the mark": {
			review: inputs{Old: fc(id, with(marked, liqojanitor.UnpeeringAnnotation, `{"phase":"InProgress"}`, liqojanitor.AllowDeleteAnnotation, id), down),
				New: fc(id, nil, down), permission: permitted, JanitorUser: "janitor"},
			wantAllowed: true, wantWarning: "not restored",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := tc.review
			r.User, r.Now = alice, now
			v := decide(&r, opts)
			assertVerdict(t, &v, r.New, tc.wantAllowed, tc.wantCode, tc.wantPaths, tc.wantInMsg)
			if tc.wantWarning != "" && (len(v.Warnings) != 1 || !strings.Contains(v.Warnings[0], tc.wantWarning)) {
				t.Errorf("warnings = %q, want one containing %q", v.Warnings, tc.wantWarning)
			}
		})
	}
}

func assertVerdict(t *testing.T, v *verdict, f *liqov1beta1.ForeignCluster, wantAllowed bool, wantCode int32, wantPaths, wantInMsg []string) {
	t.Helper()
	if v.Allowed() != wantAllowed {
		t.Fatalf("allowed = %v, want %v; errors: %v", v.Allowed(), wantAllowed, v.Errors)
	}
	err := v.Err(f)
	if wantAllowed {
		if err != nil {
			t.Fatalf("allowed verdict returned error %v", err)
		}
		return
	}
	var status *apierrors.StatusError
	if !errors.As(err, &status) {
		t.Fatalf("denial is %T, want *apierrors.StatusError", err)
	}
	if status.ErrStatus.Code != wantCode {
		t.Errorf("code = %d, want %d", status.ErrStatus.Code, wantCode)
	}
	var paths []string
	for _, c := range status.ErrStatus.Details.Causes {
		paths = append(paths, c.Field)
	}
	for _, p := range wantPaths {
		if !strings.Contains(strings.Join(paths, " "), p) {
			t.Errorf("causes %q lack field path %q", paths, p)
		}
	}
	msg := status.Error()
	for _, s := range append([]string{string(f.Spec.ClusterID)}, wantInMsg...) {
		if !strings.Contains(msg, s) {
			t.Errorf("message lacks %q:\n%s", s, msg)
		}
	}
}

// TestDecisionReasons: every verdict names the first rule that refused it, or what an allowed request did
// (the reason label of liqo_janitor_gate_decisions_total).
func TestDecisionReasons(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		review inputs
		want   string
	}{
		"an allowed marking":      {inputs{Old: fc(id, confirmed, down), New: fc(id, marked, down), permission: permitted}, reasonMarked},
		"an allowed unmarking":    {inputs{Old: fc(id, marked, down), New: fc(id, nil, down), permission: permitted}, reasonUnmarked},
		"an allowed unpausing":    {inputs{Old: fc(id, with(marked, liqojanitor.PausedAnnotation, "true"), down), New: fc(id, marked, down), permission: permitted}, reasonUnpaused},
		"an unrelated change":     {inputs{Old: fc(id, nil), New: fc(id, with(nil, "team", "blue"))}, reasonOther},
		"a fence":                 {inputs{Old: fc(id, returned, down), New: fc(id, with(returned, liqojanitor.FencedAnnotation, fence(now, "alice", returnedAt)), down), permission: permitted}, reasonFenced},
		"a forged fence":          {inputs{Old: fc(id, returned, down), New: fc(id, with(returned, liqojanitor.FencedAnnotation, "x"), down), permission: permitted}, reasonFenceRecord},
		"nothing to fence":        {inputs{Old: fc(id, marked, down), New: fc(id, with(marked, liqojanitor.FencedAnnotation, "x"), down), permission: permitted}, reasonNothingToFence},
		"a fence without a mark":  {inputs{Old: fc(id, nil), New: fc(id, with(nil, liqojanitor.FencedAnnotation, "x"))}, reasonFenceUnmarked},
		"a fence into a mark":     {inputs{Old: fc(id, with(confirmed, liqojanitor.FencedAnnotation, "x"), down), New: fc(id, with(marked, liqojanitor.FencedAnnotation, "x"), down), permission: permitted}, reasonFenceUnmarked},
		"no evidence ahead":       {inputs{Old: fc(id, nil), New: fc(id, with(nil, liqojanitor.NoEvidenceAnnotation, id)), permission: permitted}, reasonEvidenceEarly},
		"keys armed":              {inputs{Old: fc(id, nil), New: fc(id, confirmed), permission: permitted}, reasonArmed},
		"keys armed, no verb":     {inputs{Old: fc(id, nil), New: fc(id, confirmed)}, reasonPermission},
		"the first refusing rule": {inputs{Old: fc(id, nil, down), New: fc(id, without(marked, liqojanitor.ConfirmAnnotation), down)}, reasonConfirmation},
		"a duplicate":             {inputs{Old: fc(id, confirmed, down), New: fc(id, marked, down), permission: permitted, Duplicates: []duplicate{{Name: "x"}}}, reasonDuplicate},
		"no evidence":             {inputs{Old: fc(id, confirmed), New: fc(id, marked), permission: permitted}, reasonNoEvidence},
		"born marked":             {inputs{New: fc(id, marked, down), permission: permitted}, reasonCreateMarked},
		"not Liqo's lookup":       {inputs{Old: fc(id, confirmed, down, withLabels()), New: fc(id, marked, down, withLabels()), permission: permitted}, reasonLiqoLookup},
		"the provider answers":    {inputs{Old: fc(id, confirmed, down), New: fc(id, marked, down), permission: permitted, Probe: probeResult{Answered: "https://x"}}, reasonProviderAnswers},
		"a locked label":          {inputs{Old: fc(id, marked, down), New: fc(id, marked, down, withLabels())}, reasonLabelsLocked},
		"a janitor's key":         {inputs{Old: fc(id, nil), New: fc(id, with(nil, liqojanitor.CleanupAnnotation, "x")), JanitorUser: "j"}, reasonJanitorOwned},
		"no permission":           {inputs{Old: fc(id, confirmed, down), New: fc(id, marked, down)}, reasonPermission},
		"a frozen stamp":          {inputs{Old: fc(id, marked, down), New: fc(id, with(marked, liqojanitor.MarkedByAnnotation, "mallory"), down)}, reasonImmutable},
		"Liqo's uninstaller":      {inputs{Old: fc(id, nil), New: fc(id, marked), LiqoUninstaller: true}, reasonUninstallerMark},
		"an override set":         {inputs{Old: fc(id, marked, down), New: fc(id, with(marked, liqojanitor.AllowDeleteAnnotation, id), down), permission: permitted}, reasonOverrideSet},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := tc.review
			r.User, r.Now = alice, now
			if v := decide(&r, opts); v.Reason != tc.want {
				t.Errorf("Reason = %q, want %q (errors: %v)", v.Reason, tc.want, v.Errors)
			}
		})
	}
}
