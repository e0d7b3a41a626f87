package volumes

import (
	"context"
	"fmt"
	"slices"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// The release is recorded on the ForeignCluster (liqojanitor.VolumesReleasedAnnotation, gate rule 32):
// the volumes of the record already there and those released now, with the time and the user the API
// server takes the plugin to be (the gate's mutating webhook stamps both, and refuses the record without
// the break-glass verb `mark` needs). Before anything is deleted, preflight checks that the record can be
// written: the user holds that verb, and the API server (the gate) takes the record of every planned
// volume in a server-side dry run — a release whose record would be refused would abandon data unrecorded.

// preflight checks, before anything is changed, that the release of s's volumes can be recorded.
func (o *Options) preflight(ctx context.Context, s *scope) (user string, err error) {
	name := output.Printable(s.fc.Name)
	if user, err = cli.WhoAmI(ctx, s.c); err != nil {
		return "", fmt.Errorf("%w: nothing was changed", err)
	}
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: liqojanitor.MarkVerb, Group: liqov1beta1.GroupVersion.Group, Resource: "foreignclusters", Name: s.fc.Name},
	}}
	if err := s.c.Create(ctx, review); err != nil {
		return "", fmt.Errorf("asking the API server whether you hold the break-glass verb %s: %w; nothing was changed", liqojanitor.MarkVerb, err)
	}
	if !review.Status.Allowed {
		return "", output.Lines{
			fmt.Sprintf("you do not hold the break-glass verb %s on ForeignCluster %s, which recording a release needs (gate rule 32): "+
				"nothing was changed", liqojanitor.MarkVerb, name),
			"A cluster admin can grant it: kubectl create clusterrolebinding mark-unreachable-<you> --clusterrole=" +
				liqojanitor.MarkRoleName + " --user=<you>",
		}
	}
	planned := make([]liqojanitor.ReleasedVolume, 0, len(s.volumes))
	for _, v := range s.volumes {
		planned = append(planned, releasedVolume(v))
	}
	if _, err := s.writeRecord(ctx, planned, user, client.DryRunAll); err != nil {
		return "", fmt.Errorf("the API server refuses the record of this release on ForeignCluster %s (server-side dry run): %w; "+
			"nothing was changed", name, err)
	}
	o.Factory.DropWarnings() // the dry run's: the real record gets its own
	return user, nil
}

// record writes the record of res's released volumes on the ForeignCluster, as user.
func (o *Options) record(ctx context.Context, s *scope, res *Result, user string) error {
	if len(res.volumes) == 0 {
		return nil
	}
	value, err := s.writeRecord(ctx, res.volumes, user)
	if err != nil {
		return fmt.Errorf("the volumes are released, but recording it on ForeignCluster %s failed: %w; record it with "+
			"kubectl annotate foreigncluster %s %s=%q --overwrite", s.fc.Name, err, s.fc.Name, liqojanitor.VolumesReleasedAnnotation, value)
	}
	o.Factory.PrintWarnings()
	res.Record = output.Printable(value)
	return nil
}

// writeRecord merge-patches the record of the volumes already recorded and released on the ForeignCluster,
// that one annotation, locked on the resourceVersion it read so that a concurrent release's volumes are
// never dropped, and retried on a conflict. It returns the value it wrote (or tried to).
func (s *scope) writeRecord(ctx context.Context, released []liqojanitor.ReleasedVolume, user string, opts ...client.PatchOption) (string, error) {
	var value string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fc := &liqov1beta1.ForeignCluster{}
		if err := s.c.Get(ctx, client.ObjectKeyFromObject(s.fc), fc); err != nil {
			return err
		}
		orig := fc.DeepCopy()
		value = merged(fc.Annotations[liqojanitor.VolumesReleasedAnnotation], released, user, time.Now()).String()
		if fc.Annotations == nil {
			fc.Annotations = map[string]string{}
		}
		fc.Annotations[liqojanitor.VolumesReleasedAnnotation] = value
		return s.c.Patch(ctx, fc, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}), opts...)
	})
	return value, err
}

// releasedVolume is v as the record names it: its claim, and the remote claim holding its data when the
// remote namespace is known.
func releasedVolume(v liqojanitor.PinnedVolume) liqojanitor.ReleasedVolume {
	rv := liqojanitor.ReleasedVolume{PVC: v.Namespace + "/" + v.Name, UID: v.UID}
	if v.RemoteNamespace != "" {
		rv.Remote = v.RemoteNamespace + "/" + v.Name
	}
	return rv
}

// merged is the record of the volumes in the record old (a VolumesReleasedAnnotation value, "" for none)
// and of released, as of at by user.
func merged(old string, released []liqojanitor.ReleasedVolume, user string, at time.Time) liqojanitor.VolumesReleased {
	prev, _ := liqojanitor.ParseVolumesReleased(old)
	out := liqojanitor.VolumesReleased{At: at.UTC().Format(time.RFC3339), By: user, Volumes: slices.Clone(prev.Volumes)}
	for _, v := range released {
		if !slices.ContainsFunc(out.Volumes, func(r liqojanitor.ReleasedVolume) bool { return r.UID == v.UID }) {
			out.Volumes = append(out.Volumes, v)
		}
	}
	return out
}
