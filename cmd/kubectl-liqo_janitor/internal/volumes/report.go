package volumes

import (
	"fmt"
	"io"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// reportKind is the kind of release-volumes' -o documents.
const reportKind = "ReleaseVolumesReport"

// Report is `release-volumes -o json|yaml`, kind ReleaseVolumesReport (apiVersion output.APIVersion): the
// plan first, and after a confirmed release a second document, the result.
type Report struct {
	metav1.TypeMeta `json:",inline"`
	Plan            *Plan   `json:"plan,omitempty"`
	Result          *Result `json:"result,omitempty"`
}

// DeepCopyObject makes Report a runtime.Object, for cli-runtime's printers.
func (r *Report) DeepCopyObject() runtime.Object { return output.DeepCopyJSON(r) }

// Result is what a confirmed release did: the volumes released and those skipped, and the record.
type Result struct {
	ClusterID string    `json:"clusterID"`
	Released  []Outcome `json:"released,omitempty"`
	Skipped   []Outcome `json:"skipped,omitempty"`
	// Record is the VolumesReleasedAnnotation value written on the ForeignCluster.
	Record string `json:"record,omitempty"`
	// volumes are the released volumes as the record names them.
	volumes []liqojanitor.ReleasedVolume
}

// Outcome is what happened to one volume.
type Outcome struct {
	PVC string `json:"pvc"`
	UID string `json:"uid"`
	// What is what was done, or why it was skipped (then nothing was changed for it, unless it says so).
	What string `json:"what"`
	// DataOn is where its data is: on the dead cluster, abandoned once released.
	DataOn string `json:"dataOn"`
	// PV is what is left of the PV it was bound to (released volumes only).
	PV string `json:"pv,omitempty"`
}

// released adds v, released, to r.
func (r *Result) released(w io.Writer, v liqojanitor.PinnedVolume, what, pv string) {
	fmt.Fprintf(w, "  released: %s\n  %s\n", output.Printable(what), output.Printable(pv))
	r.Released = append(r.Released, Outcome{PVC: output.Printable(v.Namespace + "/" + v.Name), UID: output.Printable(v.UID),
		What: output.Printable(what), DataOn: output.Printable(v.DataOn(r.ClusterID)), PV: output.Printable(pv)})
	r.volumes = append(r.volumes, releasedVolume(v))
}

// skipped adds v, skipped for err, to r.
func (r *Result) skipped(w io.Writer, v liqojanitor.PinnedVolume, err error) {
	why := strings.TrimPrefix(err.Error(), errSkipped.Error()+": ")
	if lines, ok := err.(output.Lines); ok { //nolint:errorlint // only the plugin's own, unwrapped, is on several lines
		why = strings.Join(lines, " ")
	}
	fmt.Fprintf(w, "  skipped: %s\n", output.Printable(why))
	r.Skipped = append(r.Skipped, Outcome{PVC: output.Printable(v.Namespace + "/" + v.Name), UID: output.Printable(v.UID),
		What: output.Printable(why), DataOn: output.Printable(v.DataOn(r.ClusterID))})
}

// err is the command's error when a volume was skipped: the summary said which and why.
func (r *Result) err() error {
	if len(r.Skipped) == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d volumes not released (see why above); run the command again once that is resolved",
		len(r.Skipped), len(r.Skipped)+len(r.Released))
}

// show prints r: the document -o asks for, or the plan's lines and the result's summary.
func (o *Options) show(r *Report) error {
	if o.Output.Document() {
		return o.Output.Print(o.Factory.Out, r)
	}
	if r.Plan != nil {
		printPlan(o.Factory.Out, r.Plan)
	}
	if r.Result != nil {
		printResult(o.Factory.Out, r.Result)
	}
	return nil
}

func printPlan(out io.Writer, p *Plan) {
	fmt.Fprintf(out, "ForeignCluster %s (cluster ID %s): %d volume%s pinned to it (their data is only there)\n",
		p.ForeignCluster, p.ClusterID, len(p.Volumes), plural(len(p.Volumes)))
	for _, v := range p.Volumes {
		fmt.Fprintf(out, "  %s\n    would be %s\n", v.Line(), v.Action)
	}
}

func printResult(out io.Writer, r *Result) {
	fmt.Fprintf(out, "\nReleased %d volume%s, skipped %d.\n", len(r.Released), plural(len(r.Released)), len(r.Skipped))
	for _, v := range r.Released {
		fmt.Fprintf(out, "  released PVC %s (uid %s): %s; data abandoned %s\n    %s\n", v.PVC, v.UID, v.What, v.DataOn, v.PV)
	}
	for _, v := range r.Skipped {
		fmt.Fprintf(out, "  skipped PVC %s (uid %s): %s; data still %s\n", v.PVC, v.UID, v.What, v.DataOn)
	}
	if r.Record != "" {
		fmt.Fprintf(out, "Recorded on the ForeignCluster: %s=%s\n", liqojanitor.VolumesReleasedAnnotation, r.Record)
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
