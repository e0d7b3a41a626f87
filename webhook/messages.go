package webhook

import (
	"fmt"
	"strings"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// Messages are for a person at a terminal: what was refused, why, and the exact next step.

func describe(fc *liqov1beta1.ForeignCluster) string {
	if fc.Name == string(fc.Spec.ClusterID) {
		return fmt.Sprintf("ForeignCluster %q", fc.Name)
	}
	return fmt.Sprintf("ForeignCluster %q (cluster ID %q)", fc.Name, fc.Spec.ClusterID)
}

func annotateCmd(fc *liqov1beta1.ForeignCluster, kv string) string {
	return fmt.Sprintf("kubectl annotate foreigncluster %s %s --overwrite", fc.Name, kv)
}

func unmarkCmd(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("kubectl annotate foreigncluster %s %s-", fc.Name, liqojanitor.MarkAnnotation)
}

func confirmKV(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("%s=%s", liqojanitor.ConfirmAnnotation, fc.Spec.ClusterID)
}

func msgMarkValue(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf(`%s: the mark's value must be exactly "true" (the only value Liqo reads); to mark the cluster dead run: %s; `+
		`to leave it alive, remove the annotation instead: %s`,
		describe(fc), annotateCmd(fc, liqojanitor.MarkAnnotation+"="+liqojanitor.MarkValue), unmarkCmd(fc))
}

func msgConfirmMissing(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("%s: marking a cluster permanently unreachable needs a second key, the confirmation annotation %s "+
		"equal to its cluster ID %q; if this really is the provider that is gone, confirm it and mark it in one step: %s "+
		"(or kubectl liqo-janitor mark %s); with liqoctl force unpeer, confirm first: %s, then run liqoctl force unpeer %s again",
		describe(fc), liqojanitor.ConfirmAnnotation, fc.Spec.ClusterID,
		annotateCmd(fc, confirmKV(fc)+" "+liqojanitor.MarkAnnotation+"="+liqojanitor.MarkValue), fc.Name,
		annotateCmd(fc, confirmKV(fc)), fc.Spec.ClusterID)
}

func msgConfirmWrong(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("%s: the confirmation must equal the cluster ID %q exactly (did you name the wrong cluster? "+
		"list them with: kubectl get foreignclusters); to confirm this one run: %s",
		describe(fc), fc.Spec.ClusterID, annotateCmd(fc, confirmKV(fc)))
}

func msgLocal(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("%s: cluster ID %q is this cluster's own ID (Liqo's cluster-ID ConfigMap): a cluster cannot declare "+
		"itself dead; check that you are on the consumer and named the provider that is gone: kubectl get foreignclusters",
		describe(fc), fc.Spec.ClusterID)
}

func msgLocalUnknown(fc *liqov1beta1.ForeignCluster, err error) string {
	return fmt.Sprintf("%s: the mark is refused because the local cluster ID cannot be read, so liqo-janitor cannot rule out "+
		"that this is the local cluster (%v); check Liqo's cluster-ID ConfigMap with: "+
		"kubectl get configmap -A -l %s=%s, and that liqo-janitor's --liqo-namespace names Liqo's namespace, then retry",
		describe(fc), err, liqojanitor.ClusterIDConfigMapNameLabel, liqojanitor.ClusterIDConfigMapNameValue)
}

func msgDuplicate(fc *liqov1beta1.ForeignCluster, others []duplicate) string {
	var named []string
	for _, o := range others {
		how := "has the same spec.clusterID"
		if o.ByLabel {
			how = fmt.Sprintf("carries the label %s=%s", liqojanitor.RemoteClusterIDLabel, fc.Spec.ClusterID)
		}
		named = append(named, fmt.Sprintf("ForeignCluster %s %s", o.Name, how))
	}
	return fmt.Sprintf("%s: %s; Liqo probes, drains and replicates for only one ForeignCluster per cluster ID (the oldest "+
		"labelled %s=%s), so this one's reachability cannot be trusted and marking it could condemn a live provider; "+
		"find the stray one with: kubectl get foreignclusters -l %s=%s and kubectl get foreignclusters "+
		"-o custom-columns=NAME:.metadata.name,CLUSTERID:.spec.clusterID, delete it (kubectl delete foreigncluster NAME), "+
		"then mark the one Liqo uses",
		describe(fc), strings.Join(named, "; "), liqojanitor.RemoteClusterIDLabel, fc.Spec.ClusterID,
		liqojanitor.RemoteClusterIDLabel, fc.Spec.ClusterID)
}

func msgNotLiqosLookup(fc *liqov1beta1.ForeignCluster) string {
	what := "does not carry the label " + liqojanitor.RemoteClusterIDLabel
	if v, ok := fc.Labels[liqojanitor.RemoteClusterIDLabel]; ok {
		what = fmt.Sprintf("carries the label %s=%q, not its spec.clusterID", liqojanitor.RemoteClusterIDLabel, v)
	}
	return fmt.Sprintf("%s %s: Liqo finds a cluster's ForeignCluster by that label, so it does not probe this one and its "+
		"APIServerStatus may be stale; restore the label (Liqo's own webhook sets it, unless %s=true switches it off): "+
		"kubectl label foreigncluster %s %s=%s --overwrite, and remove the skip if it is there: "+
		"kubectl label foreigncluster %s %s-; then wait for Liqo to report the provider's state and retry",
		describe(fc), what, liqojanitor.WebhookSkipLabel, fc.Name, liqojanitor.RemoteClusterIDLabel, fc.Spec.ClusterID,
		fc.Name, liqojanitor.WebhookSkipLabel)
}

func msgCreateMarked(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("%s: a ForeignCluster cannot be created marked permanently unreachable: nothing Liqo observed "+
		"backs the mark yet; create it without %s, let Liqo report its provider's state, then mark it",
		describe(fc), liqojanitor.MarkAnnotation)
}

// tunnelEvidence says, for rule 12's messages, what Liqo's data plane shows of the provider (rule 20):
// no condition is no evidence either (the networking module may be off).
func tunnelEvidence(fc *liqov1beta1.ForeignCluster) string {
	cond := liqojanitor.TunnelStatus(fc)
	if cond == nil {
		return "nor a NetworkConnectionStatus of its tunnel (Liqo's networking module may be off, or keeps no Connection " +
			"for it): nothing Liqo observed says whether the provider's pods still run"
	}
	return fmt.Sprintf("its tunnel shows NetworkConnectionStatus %s since %s", cond.Status,
		cond.LastTransitionTime.UTC().Format(time.RFC3339))
}

func msgNoEvidence(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("%s has no APIServerStatus condition: Liqo keeps no reachability evidence for it (its identity was "+
		"deleted, authentication is off, or it was made by hand), %s; Liqo treats a marked cluster without evidence as dead; "+
		"if you know the provider is gone, say so with a second key in the same request: "+
		"kubectl liqo-janitor mark %s (it asks you to type the cluster ID again), or %s",
		describe(fc), tunnelEvidence(fc), fc.Name, annotateCmd(fc, fmt.Sprintf("%s=%s %s %s=%s", liqojanitor.NoEvidenceAnnotation, fc.Spec.ClusterID,
			confirmKV(fc), liqojanitor.MarkAnnotation, liqojanitor.MarkValue)))
}

func msgNoEvidenceArmed(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("%s has no APIServerStatus condition, and its %s was set before this request: the key counts only "+
		"in the request that sets the mark, typed by the one who marks (it got there while liqo-janitor's gate was not "+
		"running); remove it: kubectl annotate foreigncluster %s %s-, then mark with it in one request: "+
		"kubectl liqo-janitor mark %s, or %s",
		describe(fc), liqojanitor.NoEvidenceAnnotation, fc.Name, liqojanitor.NoEvidenceAnnotation, fc.Name,
		annotateCmd(fc, fmt.Sprintf("%s=%s %s %s=%s", liqojanitor.NoEvidenceAnnotation, fc.Spec.ClusterID,
			confirmKV(fc), liqojanitor.MarkAnnotation, liqojanitor.MarkValue)))
}

func msgNoEvidenceEarly(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("%s: %s counts only in the request that sets the mark (the one who marks says there is no "+
		"reachability evidence), never ahead of it; leave it out now, and give it with the mark: "+
		"kubectl liqo-janitor mark %s, or %s",
		describe(fc), liqojanitor.NoEvidenceAnnotation, fc.Name,
		annotateCmd(fc, fmt.Sprintf("%s=%s %s %s=%s", liqojanitor.NoEvidenceAnnotation, fc.Spec.ClusterID,
			confirmKV(fc), liqojanitor.MarkAnnotation, liqojanitor.MarkValue)))
}

func msgFenceWithoutMark(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("%s is not marked permanently unreachable: %s records the fence of a marked provider that came back, "+
		"written by kubectl liqo-janitor fence and stamped by the gate; on an unmarked cluster there is nothing to fence, and a "+
		"record placed ahead of a mark would silence that mark's alert; leave it out (to remove one: kubectl annotate "+
		"foreigncluster %s %s-)", describe(fc), liqojanitor.FencedAnnotation, fc.Name, liqojanitor.FencedAnnotation)
}

func msgFenceIntoTheMark(fc *liqov1beta1.ForeignCluster) string {
	return msgCarriedIntoTheMark(fc, liqojanitor.FencedAnnotation, fmt.Sprintf("a mark never starts fenced: %s would end "+
		"the alert of a return that has not happened", liqojanitor.FencedAnnotation))
}

// msgCarriedIntoTheMark refuses a mark that carries key, which the mutating webhook drops from a marking
// request (gate rules 15 and 32): why, that the mutating webhook did not run, and the command that removes it.
func msgCarriedIntoTheMark(fc *liqov1beta1.ForeignCluster, key, why string) string {
	return fmt.Sprintf("%s: %s; liqo-janitor's mutating webhook drops it when the mark is set, so it did not run (check: "+
		"kubectl get mutatingwebhookconfigurations -l app.kubernetes.io/name=liqo-janitor); remove it first: kubectl "+
		"annotate foreigncluster %s %s-", describe(fc), why, fc.Name, key)
}

func msgNothingToFence(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("%s: nothing to fence: the janitor has recorded no return of this provider (its %s does not "+
		"start with %q for the current mark); a fence record ends the alert of a provider that answered again, so it "+
		"comes after the janitor saw it answer: check with kubectl liqo-janitor status %s",
		describe(fc), liqojanitor.CleanupAnnotation, liqojanitor.ReturnedPrefix, fc.Name)
}

func msgProviderAnswers(fc *liqov1beta1.ForeignCluster, url string) string {
	return fmt.Sprintf("%s: Liqo's status says the provider is unreachable, but the provider answers at %s (liqo-janitor's "+
		"own probe, just now): a cluster that answers is not dead; Liqo's status may be stale "+
		"(is liqo-controller-manager running?); check the peering with: kubectl get foreigncluster %s -o yaml",
		describe(fc), url, fc.Name)
}

func msgLabelLocked(fc *liqov1beta1.ForeignCluster, key string) string {
	return fmt.Sprintf("%s: the label %s cannot change while the cluster is marked permanently unreachable (it decides "+
		"which ForeignCluster Liqo probes for the cluster ID); restore it, or remove the mark first (this needs the %s "+
		"permission): %s", describe(fc), key, liqojanitor.MarkVerb, unmarkCmd(fc))
}

func msgJanitorOwned(fc *liqov1beta1.ForeignCluster, key string) string {
	return fmt.Sprintf("%s: %s is written only by liqo-janitor's own identity; leave it out of your request "+
		"(to stop the janitor, pause it: %s)", describe(fc), key, annotateCmd(fc, liqojanitor.PausedAnnotation+"=true"))
}

func msgDuplicatesUnknown(fc *liqov1beta1.ForeignCluster, err error) string {
	return fmt.Sprintf("%s: the mark is refused because liqo-janitor cannot list ForeignClusters to rule out a second one with "+
		"the same cluster ID (%v); nothing was changed, retry", describe(fc), err)
}

func msgReachable(fc *liqov1beta1.ForeignCluster, cond *liqov1beta1.Condition) string {
	return fmt.Sprintf("%s: Liqo reports the provider's API server as reachable (APIServerStatus %s since %s): a cluster that "+
		"answers is not dead; if it is really gone, wait until Liqo reports it unreachable and retry; see: "+
		"kubectl get foreigncluster %s -o jsonpath='{.status.conditions}'",
		describe(fc), cond.Status, cond.LastTransitionTime.UTC().Format(time.RFC3339), fc.Name)
}

func msgTooRecent(fc *liqov1beta1.ForeignCluster, cond *liqov1beta1.Condition, since, minimum time.Duration) string {
	return fmt.Sprintf("%s: the provider has been unreachable (APIServerStatus %s) only for %s, since %s; a blip is not a death: "+
		"retry after %s (--min-unreachable is %s)",
		describe(fc), cond.Status, since.Round(time.Second), cond.LastTransitionTime.UTC().Format(time.RFC3339),
		cond.LastTransitionTime.Add(minimum).UTC().Format(time.RFC3339), minimum)
}

func msgNotStamped(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("%s: the mark was not stamped by liqo-janitor's mutating webhook (%s and %s are missing or not this "+
		"request's), so it would go unaudited; check that it is installed: "+
		"kubectl get mutatingwebhookconfigurations -l app.kubernetes.io/name=liqo-janitor",
		describe(fc), liqojanitor.MarkedByAnnotation, liqojanitor.MarkedAtAnnotation)
}

func msgImmutable(fc *liqov1beta1.ForeignCluster, key string) string {
	return fmt.Sprintf("%s: %s cannot change while the cluster is marked permanently unreachable; restore its previous value, "+
		"or remove the mark first (this needs the %s permission): %s",
		describe(fc), key, liqojanitor.MarkVerb, unmarkCmd(fc))
}

func msgStampWithoutMark(fc *liqov1beta1.ForeignCluster, key string) string {
	return fmt.Sprintf("%s: %s is written only by liqo-janitor, when the mark is set; leave it out of your request: "+
		"kubectl annotate foreigncluster %s %s-", describe(fc), key, fc.Name, key)
}

func msgPermissionUnknown(fc *liqov1beta1.ForeignCluster, err error) string {
	return fmt.Sprintf("%s: cannot check the %s permission with a SubjectAccessReview (%v); nothing was changed, retry",
		describe(fc), liqojanitor.MarkVerb, err)
}

func msgPermissionDenied(old, fc *liqov1beta1.ForeignCluster, user string, t transition, reason string) string {
	action := "mark it permanently unreachable"
	switch {
	case t == unmarking:
		action = "remove its permanently-unreachable mark"
	case t == staysMarked && unpauses(old, fc):
		action = fmt.Sprintf("unpause it (remove %s), which resumes irreversible releases", liqojanitor.PausedAnnotation)
	case t == staysMarked && fences(old, fc):
		action = fmt.Sprintf("record a fence (%s), which ends the count of its returned provider and its alert", liqojanitor.FencedAnnotation)
	case t == staysMarked && releases(old, fc):
		action = fmt.Sprintf("record released volumes (%s), which abandons their data on the provider", liqojanitor.VolumesReleasedAnnotation)
	case t == staysMarked:
		action = fmt.Sprintf("set the break-glass override %s, which lets it be deleted while its unpeering runs", liqojanitor.AllowDeleteAnnotation)
	case t == notMarked:
		action = fmt.Sprintf("set %s or %s ahead of the mark (rule 19: they count for a later bare mark, such as "+
			"liqoctl force unpeer's)", liqojanitor.ConfirmAnnotation, liqojanitor.ReasonAnnotation)
	}
	msg := fmt.Sprintf("%s: user %q may not %s: that needs verb %s on foreignclusters.core.liqo.io, beyond update; "+
		"a cluster admin can grant it with: kubectl create clusterrolebinding %s --clusterrole=%s --user=%s",
		describe(fc), user, action, liqojanitor.MarkVerb, bindingName(user), liqojanitor.MarkRoleName, user)
	if t == notMarked {
		msg += fmt.Sprintf("; or ask a holder of the verb to confirm it (%s) or to mark it in one request "+
			"(kubectl liqo-janitor mark %s)", annotateCmd(fc, confirmKV(fc)), fc.Name)
	}
	if reason != "" {
		msg += " (authorizer: " + reason + ")"
	}
	return msg
}

func bindingName(user string) string {
	name := make([]byte, 0, len(user))
	for _, c := range []byte(user) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '.':
			name = append(name, c)
		case c >= 'A' && c <= 'Z':
			name = append(name, c+'a'-'A')
		default:
			name = append(name, '-')
		}
	}
	return "mark-unreachable-" + string(name)
}

// warnUnmarked is the warning answered to a request that removes the mark (rule 7).
func warnUnmarked(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("%s is no longer marked permanently unreachable: pods already force-deleted and finalizers already "+
		"removed are not restored, and workloads on the provider may still be running", describe(fc))
}

func msgFenceRecord(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("%s: %s is the operator's record of a fence, written by kubectl liqo-janitor fence and stamped by "+
		"the gate with the time, the requesting user and the janitor's recorded return it fences "+
		"(\"<RFC 3339> by <user>: <counts>; fences the return at <RFC 3339>\"); one naming another user, another time or "+
		"another return is refused: run kubectl liqo-janitor fence %s --provider-kubeconfig <provider kubeconfig>",
		describe(fc), liqojanitor.FencedAnnotation, fc.Spec.ClusterID)
}

func msgReleaseWithoutMark(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("%s is not marked permanently unreachable: %s records the volumes released from a dead provider "+
		"under the current mark, written by kubectl liqo-janitor release-volumes and stamped by the gate; on an unmarked "+
		"cluster there is nothing to release; leave it out (to remove one: kubectl annotate foreigncluster %s %s-)",
		describe(fc), liqojanitor.VolumesReleasedAnnotation, fc.Name, liqojanitor.VolumesReleasedAnnotation)
}

func msgReleaseIntoTheMark(fc *liqov1beta1.ForeignCluster) string {
	return msgCarriedIntoTheMark(fc, liqojanitor.VolumesReleasedAnnotation, fmt.Sprintf("a mark never starts with volumes "+
		"released: %s names volumes released under the current mark", liqojanitor.VolumesReleasedAnnotation))
}

func msgReleaseRemoved(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("%s: %s cannot be removed while the cluster is marked: it is the record of the remote PVCs whose "+
		"data was abandoned, which the gate warns of when the cluster is unmarked or peered again; nothing was changed "+
		"(it goes with the mark: kubectl annotate foreigncluster %s %s-)",
		describe(fc), liqojanitor.VolumesReleasedAnnotation, fc.Name, liqojanitor.MarkAnnotation)
}

func msgReleaseDropped(fc *liqov1beta1.ForeignCluster, dropped []liqojanitor.ReleasedVolume) string {
	names := make([]string, 0, len(dropped))
	for _, v := range dropped {
		names = append(names, v.PVC+" (uid "+v.UID+")")
	}
	return fmt.Sprintf("%s: %s only grows while the cluster is marked: this change drops %s, released earlier; nothing "+
		"was changed and nothing is lost: read the current record (kubectl get foreigncluster %s -o "+
		"jsonpath='{.metadata.annotations.%s}') and append to it (kubectl liqo-janitor release-volumes does)",
		describe(fc), liqojanitor.VolumesReleasedAnnotation, strings.Join(names, ", "), fc.Name,
		strings.ReplaceAll(liqojanitor.VolumesReleasedAnnotation, ".", `\.`))
}

func msgReleaseRecord(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("%s: %s is the record of released volumes, written by kubectl liqo-janitor release-volumes and "+
		"stamped by the gate with the time and the requesting user ({\"at\":\"<RFC 3339>\",\"by\":\"<user>\",\"volumes\":"+
		"[{\"pvc\":\"<namespace>/<name>\",\"uid\":\"<uid>\",\"remote\":\"<namespace>/<name>\"}]}); one that does not "+
		"parse, names no volume, or names another user or another time is refused: run kubectl liqo-janitor "+
		"release-volumes %s", describe(fc), liqojanitor.VolumesReleasedAnnotation, fc.Spec.ClusterID)
}

func warnReleasedUnknown(fc *liqov1beta1.ForeignCluster, err error) string {
	return fmt.Sprintf("%s: liqo-janitor cannot tell whether volumes were released from cluster %s (%v): if kubectl "+
		"liqo-janitor release-volumes released any, peering it again lets its virtual kubelet delete their remote PVCs; "+
		"check: kubectl get configmap %s -n <liqo-janitor's namespace> -o yaml",
		describe(fc), fc.Spec.ClusterID, err, liqojanitor.ReleasedVolumesConfigMap)
}

func msgOverrideWrong(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("%s: the break-glass override %s must equal the cluster ID %q exactly; to set it run: %s",
		describe(fc), liqojanitor.AllowDeleteAnnotation, fc.Spec.ClusterID, annotateCmd(fc, overrideKV(fc)))
}

func msgOverrideWithoutMark(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("%s is not marked permanently unreachable: the break-glass override %s lets a marked cluster be "+
		"deleted while its unpeering runs, and is set only on a marked one, by a holder of verb %s (gate rule 22): placed ahead "+
		"of a mark it would hold for a mark nobody has made yet; leave it out, and once the cluster is marked, if it must be "+
		"deleted before its unpeering completes, set it then: %s (to remove one: kubectl annotate foreigncluster %s %s-)",
		describe(fc), liqojanitor.AllowDeleteAnnotation, liqojanitor.MarkVerb, annotateCmd(fc, overrideKV(fc)), fc.Name,
		liqojanitor.AllowDeleteAnnotation)
}

func msgOverrideIntoTheMark(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("%s: a mark never starts with the break-glass override %s (gate rule 22): liqo-janitor's mutating "+
		"webhook drops it when the mark is set, so it did not run (check: kubectl get mutatingwebhookconfigurations -l "+
		"app.kubernetes.io/name=liqo-janitor); remove it first: kubectl annotate foreigncluster %s %s-, mark, and set it "+
		"afterwards if you must: %s", describe(fc), liqojanitor.AllowDeleteAnnotation, fc.Name,
		liqojanitor.AllowDeleteAnnotation, annotateCmd(fc, overrideKV(fc)))
}

func overrideKV(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("%s=%s", liqojanitor.AllowDeleteAnnotation, fc.Spec.ClusterID)
}

// leftToUnpeer says what of the unpeering is left, for a person: the objects Liqo re-creates the
// ForeignCluster from (one of each kind at most: "at least"), the janitor's record.
func leftToUnpeer(d *deletion) string {
	var parts []string
	if len(d.Peering) > 0 {
		names := make([]string, 0, len(d.Peering))
		for _, o := range d.Peering {
			names = append(names, o.String())
		}
		parts = append(parts, "left that Liqo re-creates it from: "+strings.Join(names, ", "))
	}
	if d.PeeringErr != nil {
		parts = append(parts, fmt.Sprintf("Liqo's peering objects of its cluster ID cannot be listed (%v), so they cannot be ruled out", d.PeeringErr))
	}
	if u, runs := unpeeringRuns(d.Old); runs {
		summary := u.Summary()
		if u.Phase == "" {
			summary = "unreadable"
		}
		parts = append(parts, "liqo-janitor's record: "+summary)
	}
	return strings.Join(parts, "; ")
}

// unpeeringNext is the next step while the unpeering runs: delete what nobody is deleting yet (the tenant
// namespace holding it, or a virtual Node left without its VirtualNode), then wait for the janitor's word.
func unpeeringNext(d *deletion) string {
	fc := d.Old
	next := fmt.Sprintf("wait until kubectl liqo-janitor status %s says unpeering complete, then delete it", fc.Name)
	for _, o := range d.Peering {
		switch {
		case o.Terminating:
			continue
		case o.Namespace != "":
			return fmt.Sprintf("delete the tenant namespace holding them (liqoctl force unpeer %s, or kubectl delete namespace %s), then %s",
				fc.Spec.ClusterID, o.Namespace, next)
		default:
			return fmt.Sprintf("Liqo deletes a virtual Node with its VirtualNode (liqoctl force unpeer %s); one left without it: "+
				"kubectl delete node %s; then %s", fc.Spec.ClusterID, o.Name, next)
		}
	}
	return next
}

// breakGlassDelete is the break-glass way to delete fc anyway (rule 17).
func breakGlassDelete(fc *liqov1beta1.ForeignCluster) string {
	override := ""
	if v, ok := fc.Annotations[liqojanitor.AllowDeleteAnnotation]; ok {
		override = fmt.Sprintf(" (its %s is %q, not the cluster ID)", liqojanitor.AllowDeleteAnnotation, v)
	}
	return fmt.Sprintf("to delete it anyway, break-glass (needs verb %s, audited)%s: %s, then kubectl delete foreigncluster %s",
		liqojanitor.MarkVerb, override, annotateCmd(fc, overrideKV(fc)), fc.Name)
}

func msgUnpeeringRuns(d *deletion) string {
	fc := d.Old
	return fmt.Sprintf("%s is marked permanently unreachable and its unpeering still runs: %s. Deleted now, it would come "+
		"back: Liqo's foreigncluster controller re-creates it within seconds from the peering objects left, WITHOUT the mark, "+
		"so Liqo would wait for the provider as if it were alive again and liqo-janitor's record of the mark would be lost. "+
		"See them all: %s. Next: %s; %s",
		describe(fc), leftToUnpeer(d), liqojanitor.PeeringCommands(string(fc.Spec.ClusterID)), unpeeringNext(d), breakGlassDelete(fc))
}

// returnHeld names the recorded return that holds the ForeignCluster (rule 30), for a person.
func returnHeld(d *deletion) string {
	switch r := d.Return; {
	case d.ReturnErr != nil:
		return fmt.Sprintf("liqo-janitor's records of returned providers cannot be read (%v), so a return of its provider cannot "+
			"be ruled out", d.ReturnErr)
	case r.Kept:
		return fmt.Sprintf("its provider answered again after the mark: liqo-janitor kept its return at %s (%s) in its records "+
			"(ConfigMap %s), and no fence of it is recorded", liqojanitor.RecordTime(r.At), r.How, liqojanitor.RecordsConfigMap)
	default:
		return fmt.Sprintf("its provider answered again after the mark: liqo-janitor recorded its return at %s (%s), and no "+
			"fence of it is recorded", liqojanitor.RecordTime(r.At), r.How)
	}
}

func msgUnfencedReturn(d *deletion) string {
	fc := d.Old
	next := fmt.Sprintf("stop this consumer's workloads on the provider and record it: kubectl liqo-janitor fence %s "+
		"--provider-kubeconfig <provider kubeconfig>, then delete it", fc.Spec.ClusterID)
	switch {
	case d.ReturnErr != nil:
		next = fmt.Sprintf("nothing was changed: retry; if it persists, check that liqo-janitor's gate runs with the janitor's "+
			"namespace (--namespace) and may get ConfigMap %s there", liqojanitor.RecordsConfigMap)
	case d.Return.Kept:
		next = fmt.Sprintf("the janitor writes the return onto the ForeignCluster as soon as another admission webhook stops "+
			"refusing it (Liqo's: kubectl -n liqo get pods; kubectl liqo-janitor status %s); then %s", fc.Name, next)
	}
	if _, ok := fc.Annotations[liqojanitor.FencedAnnotation]; ok && d.ReturnErr == nil {
		next = fmt.Sprintf("its %s does not fence this return (another return's, or not stamped by the gate); %s",
			liqojanitor.FencedAnnotation, next)
	}
	return fmt.Sprintf("%s is marked permanently unreachable and %s: the provider may still run this consumer's workloads, "+
		"the copies of the pods released here, each now running twice; deleted now, the ForeignCluster would take the janitor's "+
		"record of the return with it. Next: %s; %s", describe(fc), returnHeld(d), next, breakGlassDelete(fc))
}

// heldBy says what holds d.Old, for a person: its unpeering, its unfenced return.
func heldBy(d *deletion) string {
	var parts []string
	if d.running() {
		parts = append(parts, "while its unpeering runs ("+leftToUnpeer(d)+")")
	}
	if d.unfenced() {
		parts = append(parts, "while "+returnHeld(d))
	}
	return strings.Join(parts, " and ")
}

func msgOverrideDenied(d *deletion) string {
	return fmt.Sprintf("%s: user %q may not use the break-glass override %s to delete it %s: "+
		"that needs verb %s on foreignclusters.core.liqo.io; a cluster admin can grant it with: "+
		"kubectl create clusterrolebinding %s --clusterrole=%s --user=%s; or wait until kubectl liqo-janitor status %s "+
		"says unpeering complete and no unfenced return",
		describe(d.Old), d.User.Username, liqojanitor.AllowDeleteAnnotation, heldBy(d), liqojanitor.MarkVerb,
		bindingName(d.User.Username), liqojanitor.MarkRoleName, d.User.Username, d.Old.Name)
}

// warnOverridden is the warning answered to a deletion the override let through (rule 17).
func warnOverridden(d *deletion) string {
	w := fmt.Sprintf("%s deleted %s, by the break-glass override %s (user %q)", describe(d.Old), heldBy(d),
		liqojanitor.AllowDeleteAnnotation, d.User.Username)
	if d.running() {
		w += fmt.Sprintf("; Liqo's foreigncluster controller may re-create it without the mark: if it comes back, mark it "+
			"again (kubectl liqo-janitor mark %s)", d.Old.Name)
	}
	if d.unfenced() {
		w += fmt.Sprintf("; the returned provider may still run this consumer's workloads: stop them there (kubectl "+
			"liqo-janitor fence %s --provider-kubeconfig <provider kubeconfig>)", d.Old.Spec.ClusterID)
	}
	return w
}

func msgUninstallerMark(fc *liqov1beta1.ForeignCluster, user string) string {
	return fmt.Sprintf("%s marked permanently unreachable by Liqo's uninstaller (%s), accepted without the confirmation "+
		"and the break-glass verb (gate rule 18): liqo-janitor confirmed the cluster ID itself and releases what the "+
		"provider left stuck after its grace period", describe(fc), user)
}

func msgTunnelUp(fc *liqov1beta1.ForeignCluster, cond *liqov1beta1.Condition) string {
	return fmt.Sprintf("%s: Liqo reports the data plane to the provider as up (its tunnel: NetworkConnectionStatus %s since %s): "+
		"whatever its API server does, its nodes and pods still run and still reach this cluster's services, so releasing "+
		"their copies here would run every workload twice; a cluster whose tunnel is up is not dead: if it is really gone, "+
		"wait until Liqo reports the tunnel down and retry; see: kubectl get foreigncluster %s -o jsonpath='{.status.modules.networking.conditions}' "+
		"and kubectl get connections.networking.liqo.io -A -l %s=%s",
		describe(fc), cond.Status, cond.LastTransitionTime.UTC().Format(time.RFC3339), fc.Name,
		liqojanitor.RemoteClusterIDLabel, fc.Spec.ClusterID)
}

func msgTunnelTooRecent(fc *liqov1beta1.ForeignCluster, cond *liqov1beta1.Condition, since, minimum time.Duration) string {
	return fmt.Sprintf("%s: the data plane to the provider changed state only %s ago (its tunnel: NetworkConnectionStatus %s since %s), "+
		"and may have been up a moment before; a blip is not a death: retry after %s (--min-unreachable is %s)",
		describe(fc), since.Round(time.Second), cond.Status, cond.LastTransitionTime.UTC().Format(time.RFC3339),
		cond.LastTransitionTime.Add(minimum).UTC().Format(time.RFC3339), minimum)
}

// ackCmd is the one request that marks fc with the storm's acknowledgement (rule 21).
func ackCmd(fc *liqov1beta1.ForeignCluster, count int) string {
	return annotateCmd(fc, fmt.Sprintf("%s=%d %s %s=%s", liqojanitor.AcknowledgeUnreachableAnnotation, count,
		confirmKV(fc), liqojanitor.MarkAnnotation, liqojanitor.MarkValue))
}

func msgStorm(fc *liqov1beta1.ForeignCluster, storm liqojanitor.Storm, guard liqojanitor.StormGuard) string {
	return fmt.Sprintf("%s: %s at once, this one counted — at least %d (--storm-min-unreachable) and more than %d%% "+
		"(--storm-max-unreachable-share) of this consumer's providers: when so many turn unreachable together, the cause is "+
		"more likely on this cluster's side of a cut (its uplink, its gateway, its DNS) than on every provider's, and "+
		"liqo-janitor's own probe runs from the same side, so it cannot tell; first check this cluster's own connectivity "+
		"(kubectl get connections.networking.liqo.io -A, kubectl get foreignclusters, and whether this cluster reaches the "+
		"providers' API servers at all); if these providers really are all gone, repeat the mark acknowledging the count "+
		"(%s: %q) in the same request: %s, or kubectl liqo-janitor mark %s (the plugin's mark asks for the count)",
		describe(fc), storm, guard.MinUnreachable, guard.MaxSharePercent,
		liqojanitor.AcknowledgeUnreachableAnnotation, fmt.Sprint(len(storm.Unreachable)), ackCmd(fc, len(storm.Unreachable)), fc.Name)
}

func msgAckWrong(fc *liqov1beta1.ForeignCluster, storm liqojanitor.Storm) string {
	return fmt.Sprintf("%s: %s must be the number of this consumer's providers unreachable at once, typed by the one who "+
		"marks, and it is %d now: %s, this one counted; check that they are all gone, then mark with the count: %s",
		describe(fc), liqojanitor.AcknowledgeUnreachableAnnotation, len(storm.Unreachable), storm, ackCmd(fc, len(storm.Unreachable)))
}

func msgAckArmed(fc *liqov1beta1.ForeignCluster, storm liqojanitor.Storm) string {
	return fmt.Sprintf("%s: its %s was set before this request: the acknowledgement counts only in the request that sets the "+
		"mark, typed by the one who marks (it got there while liqo-janitor's gate was not running); remove it: "+
		"kubectl annotate foreigncluster %s %s-, then mark with it in one request (%s now): %s",
		describe(fc), liqojanitor.AcknowledgeUnreachableAnnotation, fc.Name, liqojanitor.AcknowledgeUnreachableAnnotation,
		storm, ackCmd(fc, len(storm.Unreachable)))
}

func msgAckEarly(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("%s: %s acknowledges a storm of unreachable providers for one mark, and counts only in the request that "+
		"sets the mark, never ahead of it; leave it out now, and give it with the mark: kubectl liqo-janitor mark %s "+
		"(it asks for the count when there is a storm)", describe(fc), liqojanitor.AcknowledgeUnreachableAnnotation, fc.Name)
}

func msgStormUnknown(fc *liqov1beta1.ForeignCluster, err error) string {
	return fmt.Sprintf("%s: the mark is refused because liqo-janitor cannot list ForeignClusters to count how many providers "+
		"are unreachable at once (%v); nothing was changed, retry", describe(fc), err)
}

func msgAckNotStamped(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("%s: the acknowledgement %s was not stamped by liqo-janitor's mutating webhook (%s is missing or not "+
		"this request's), so it would go unaudited; leave %s out of the request (liqo-janitor writes it), and check that the "+
		"webhook is installed: kubectl get mutatingwebhookconfigurations -l app.kubernetes.io/name=liqo-janitor",
		describe(fc), liqojanitor.AcknowledgeUnreachableAnnotation, liqojanitor.AcknowledgedByAnnotation, liqojanitor.AcknowledgedByAnnotation)
}

// warnNotUninstaller says why a mark by one of Liqo's uninstaller identities was judged as anyone's (rule 18).
func warnNotUninstaller(user, why string) string {
	return fmt.Sprintf("liqo-janitor: the mark by %s was judged as anyone's, not as Liqo's uninstaller's (gate rule 18): %s; "+
		"the exemption holds only for a token bound to a live pod of Liqo's pre-delete Job", user, why)
}

// deadlineOverrideCmd is the one request that marks fc before its provider's fence deadline (rule 31).
func deadlineOverrideCmd(fc *liqov1beta1.ForeignCluster) string {
	return annotateCmd(fc, fmt.Sprintf("%s=%s %s %s=%s", liqojanitor.OverrideFenceDeadlineAnnotation, fc.Spec.ClusterID,
		confirmKV(fc), liqojanitor.MarkAnnotation, liqojanitor.MarkValue))
}

// deadlineNext is rule 31's next step: wait for the deadline, or override it in the marking request.
func deadlineNext(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("kubectl liqo-janitor status %s shows the renewals and the deadline; if this consumer's workloads must "+
		"be replaced before then, knowing the provider may still run their copies, override the deadline in the marking "+
		"request itself (break-glass: needs verb %s, stamped with your name and the deadline): %s",
		fc.Name, liqojanitor.MarkVerb, deadlineOverrideCmd(fc))
}

func msgFenceDeadline(fc *liqov1beta1.ForeignCluster, r liqojanitor.FenceRenewal, deadline time.Time, contract liqojanitor.FenceContract, now time.Time) string {
	last := "no acknowledged renewal recorded"
	if r.LastAck != nil {
		last = "last acknowledged renewal at " + r.LastAck.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("%s: Liqo ≥ v1.1 force-deletes this consumer's pods of the provider on the mark, and the provider may "+
		"still run their copies: the provider's fence (contract: %s) completes by %s (in %s; the last renewal that may have "+
		"landed at %s, %s): mark at or after it, or every workload may run twice. Wait until %s and retry; %s",
		describe(fc), contract.Summary(), deadline.UTC().Format(time.RFC3339), deadline.Sub(now).Round(time.Second),
		r.LastLanded.UTC().Format(time.RFC3339), last, deadline.UTC().Format(time.RFC3339), deadlineNext(fc))
}

func msgFenceDeadlineUnknown(fc *liqov1beta1.ForeignCluster, err error) string {
	return fmt.Sprintf("%s: the mark is refused because liqo-janitor cannot read the janitor's record of its renewals of the "+
		"provider's fence (%v): Liqo ≥ v1.1 force-deletes on the mark, and without the record the gate cannot tell when the "+
		"provider's fence completes (fail closed, gate rule 31); nothing was changed: retry, and check that the gate runs with "+
		"the janitor's namespace (--namespace) and may get ConfigMap %s there; %s",
		describe(fc), err, liqojanitor.FenceRenewalsConfigMap, deadlineNext(fc))
}

func msgDeadlineOverrideArmed(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("%s: its %s was set before this request: the override counts only in the request that sets the mark, "+
		"typed by the one who marks (it got there while liqo-janitor's gate was not running); remove it: kubectl annotate "+
		"foreigncluster %s %s-, then mark with it in one request: %s",
		describe(fc), liqojanitor.OverrideFenceDeadlineAnnotation, fc.Name, liqojanitor.OverrideFenceDeadlineAnnotation, deadlineOverrideCmd(fc))
}

func msgDeadlineOverrideWrong(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("%s: the override of the provider's fence deadline %s must equal the cluster ID %q exactly; to mark "+
		"with it: %s", describe(fc), liqojanitor.OverrideFenceDeadlineAnnotation, fc.Spec.ClusterID, deadlineOverrideCmd(fc))
}

func msgDeadlineOverrideNotStamped(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("%s: the override %s was not stamped by liqo-janitor's mutating webhook (%s is missing or not this "+
		"request's), so it would go unaudited; leave %s out of the request (liqo-janitor writes it), and check that the "+
		"webhook is installed: kubectl get mutatingwebhookconfigurations -l app.kubernetes.io/name=liqo-janitor",
		describe(fc), liqojanitor.OverrideFenceDeadlineAnnotation, liqojanitor.FenceDeadlineOverriddenAnnotation,
		liqojanitor.FenceDeadlineOverriddenAnnotation)
}

func msgDeadlineOverrideEarly(fc *liqov1beta1.ForeignCluster) string {
	return fmt.Sprintf("%s: %s overrides the provider's fence deadline for one mark, and counts only in the request that sets "+
		"the mark, never ahead of it (gate rule 31): placed earlier it would hold for a mark nobody has made yet; leave it "+
		"out now (to remove one: kubectl annotate foreigncluster %s %s-), and if you must mark before the deadline, give it "+
		"with the mark: %s", describe(fc), liqojanitor.OverrideFenceDeadlineAnnotation, fc.Name,
		liqojanitor.OverrideFenceDeadlineAnnotation, deadlineOverrideCmd(fc))
}

// warnDeadlineOverridden is the warning answered to a mark set before the provider's fence deadline by the
// override (rule 31).
func warnDeadlineOverridden(fc *liqov1beta1.ForeignCluster, deadline time.Time) string {
	return fmt.Sprintf("%s marked before the provider's fence completes (by %s), by the override %s: the provider may "+
		"still run this consumer's workloads until then, while Liqo ≥ v1.1 force-deletes their pods here on the mark and "+
		"their controllers replace them: they may run twice; if the provider answers, fence it: kubectl liqo-janitor fence %s "+
		"--provider-kubeconfig <provider kubeconfig>", describe(fc), deadline.UTC().Format(time.RFC3339),
		liqojanitor.OverrideFenceDeadlineAnnotation, fc.Spec.ClusterID)
}
