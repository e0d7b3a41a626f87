package volumes

import (
	"context"
	"fmt"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/cli"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// A volume is released only from a cluster that is dead when it is released: re-read live before each
// volume, the ForeignCluster is the one first read (same UID), carries the same mark (marked-at), marked
// with the value Liqo honours and confirmed with its cluster ID (liqojanitor.IsMarked, Confirmed), and
// no return of the provider after the mark is recorded without the operator's stamped fence of it — in
// the janitor's cleanup annotation (liqojanitor.ReturnRecordedAt, read as liqojanitor.RecordedReturn) or in
// its kept record of the mark (KeptRecord.Return, in its records in its namespace). A provider that
// answers again may still run the workload, on the very data a release abandons.

// deadness checks that fc is dead now, and returns the janitor's kept record of its mark (empty when it
// keeps none).
func (s *scope) deadness(ctx context.Context, fc *liqov1beta1.ForeignCluster) (liqojanitor.KeptRecord, error) {
	name := output.Printable(fc.Name)
	switch {
	case s.fc.UID != fc.UID:
		return liqojanitor.KeptRecord{}, fmt.Errorf("ForeignCluster %s was deleted and created again since this release began: nothing more is changed", name)
	case !liqojanitor.IsMarked(fc.Annotations) || !liqojanitor.Confirmed(fc):
		return liqojanitor.KeptRecord{}, notDead(fc)
	case fc.Annotations[liqojanitor.MarkedAtAnnotation] != s.fc.Annotations[liqojanitor.MarkedAtAnnotation]:
		return liqojanitor.KeptRecord{}, fmt.Errorf("ForeignCluster %s was marked again since this release began: nothing more is changed; run it again", name)
	}
	kept, err := keptRecord(ctx, s.c, s.janitorNS, fc)
	if err != nil {
		return kept, err
	}
	if returned, fenced := returnOf(fc, kept); returned != "" && !fenced {
		return kept, output.Lines{
			fmt.Sprintf("the provider of ForeignCluster %s answered again after the mark (%s), and no fence of that return is "+
				"recorded: it may still run these workloads, on the data a release would abandon. Nothing was changed.", name, returned),
			"Stop what this consumer left there first: kubectl liqo-janitor fence " + name,
		}
	}
	return kept, nil
}

// stillDead re-reads the ForeignCluster and checks it is dead now (deadness).
func (s *scope) stillDead(ctx context.Context) error {
	fc := &liqov1beta1.ForeignCluster{}
	if err := s.c.Get(ctx, client.ObjectKeyFromObject(s.fc), fc); err != nil {
		return fmt.Errorf("re-reading ForeignCluster %s: %w", output.Printable(s.fc.Name), err)
	}
	_, err := s.deadness(ctx, fc)
	return err
}

// keptRecord is the janitor's record of fc's current mark, in its records in its namespace only.
func keptRecord(ctx context.Context, c client.Reader, ns cli.JanitorNamespace, fc *liqov1beta1.ForeignCluster) (liqojanitor.KeptRecord, error) {
	records, err := cli.ReadJanitorConfigMap(ctx, c, ns.Name, liqojanitor.RecordsConfigMap)
	if err != nil || records.ConfigMap == nil {
		return liqojanitor.KeptRecord{}, err
	}
	rec, _ := liqojanitor.KeptRecordOf(records.ConfigMap, fc.UID, fc.Annotations)
	return rec, nil
}

// returnOf says whether a return of fc's provider after its current mark is recorded — "recorded at …"
// — and whether a stamped fence of it is.
func returnOf(fc *liqov1beta1.ForeignCluster, kept liqojanitor.KeptRecord) (returned string, fenced bool) {
	if r, ok := liqojanitor.RecordedReturn(fc, time.Now()); ok {
		returned, fenced = "recorded at "+r.At.UTC().Format(time.RFC3339Nano)+" by the janitor", r.Fenced != ""
	}
	if kept.Return != nil {
		if returned == "" {
			returned = "kept at " + kept.Return.At + " in the janitor's records"
		}
		fenced = fenced || kept.Return.Fenced
	}
	return returned, fenced
}

func notDead(fc *liqov1beta1.ForeignCluster) error {
	name := output.Printable(fc.Name)
	return output.Lines{
		fmt.Sprintf("ForeignCluster %s is not marked permanently unreachable and confirmed: release-volumes releases only the volumes "+
			"of a provider declared dead. Nothing was changed.", name),
		"To declare it dead first: kubectl liqo-janitor mark " + name + ` --reason "…"`,
	}
}
