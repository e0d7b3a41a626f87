package liqoversion

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The installed Liqo version decides two things the janitor does for an older Liqo what a newer one does
// by itself (janitor rule 12): the legacy InternalFabric finalizer (janitor/target_fabric.go) and the
// drain's selection (janitor/target_pods.go). It is read from what Liqo installed — the image tag of its controller-manager
// Deployment (deployments/liqo/templates/liqo-controller-manager-deployment.yaml: `image:
// <name>:<liqo.version>`, the same template in v1.0.3, v1.1.0 and v1.2.0), else the CRDs it installed
// (deployments/liqo/charts/liqo-crds/crds): ForeignCluster's status.observedGeneration is new in v1.2.0,
// VkOptionsTemplate's spec.tolerations new in v1.1.0. `status` shows it.

// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get,resourceNames=liqo-controller-manager,namespace=liqo
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get,resourceNames=foreignclusters.core.liqo.io;vkoptionstemplates.offloading.liqo.io

// liqoControllerManager is the name of Liqo's controller-manager Deployment in Liqo's namespace
// (deployments/liqo/templates/liqo-controller-manager-deployment.yaml, "liqo.prefixedName").
const liqoControllerManager = "liqo-controller-manager"

// Version is the Liqo version the janitor found installed; the zero Version is unknown.
type Version struct {
	// Minor is the v1 minor version (0, 1, 2, …); Known is false when it could not be told.
	Minor int
	Known bool
	// Text is the version as shown ("v1.2.0", or "v1.1.x" from the CRDs), From where it was read.
	Text, From string
}

// Older reports whether Liqo is known to be older than v1.<minor>.
func (v Version) Older(minor int) bool { return v.Known && v.Minor < minor }

// Before reports whether Liqo is older than v1.<minor> or unknown: what an older Liqo needs from the janitor
// is done when the version cannot be told only where the newer Liqo does the same by itself.
func (v Version) Before(minor int) bool { return !v.Known || v.Minor < minor }

// String is the version as shown, or "unknown".
func (v Version) String() string {
	if !v.Known {
		return "unknown"
	}
	return v.Text
}

// versionTTL is how long a detected version is reused: an upgrade of Liqo is seen within it.
const versionTTL = time.Minute

// Detector detects the installed Liqo version, at most once per versionTTL.
type Detector struct {
	reader    client.Reader
	namespace string
	clock     clock.PassiveClock

	mu   sync.Mutex
	last Version
	at   time.Time
}

// New returns a Detector that reads, through reader, the Liqo installed in namespace (Liqo's namespace),
// and reuses what it found for a minute of clk.
func New(reader client.Reader, namespace string, clk clock.PassiveClock) *Detector {
	return &Detector{reader: reader, namespace: namespace, clock: clk}
}

// Get returns the installed Liqo version; one that cannot be read is unknown (and tried again next time).
func (d *Detector) Get(ctx context.Context) Version {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.last.Known && d.clock.Since(d.at) < versionTTL {
		return d.last
	}
	d.last, d.at = detect(ctx, d.reader, d.namespace), d.clock.Now()
	return d.last
}

// detect reads the version from the controller-manager's image tag, else from the CRDs.
func detect(ctx context.Context, reader client.Reader, namespace string) Version {
	if v, ok := versionFromDeployment(ctx, reader, namespace); ok {
		return v
	}
	return versionFromCRDs(ctx, reader)
}

func versionFromDeployment(ctx context.Context, reader client.Reader, namespace string) (Version, bool) {
	d := &appsv1.Deployment{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: liqoControllerManager}, d); err != nil {
		return Version{}, false
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if minor, tag, ok := parseLiqoTag(c.Image); ok {
			return Version{Minor: minor, Known: true, Text: tag,
				From: fmt.Sprintf("the image of Deployment %s/%s", namespace, liqoControllerManager)}, true
		}
	}
	return Version{}, false
}

// parseLiqoTag reads "v1.<minor>.<patch>[-…]" from an image reference's tag (a digest after it is ignored).
func parseLiqoTag(image string) (minor int, tag string, ok bool) {
	image, _, _ = strings.Cut(image, "@")
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return 0, "", false
	}
	tag = image[i+1:]
	parts := strings.SplitN(strings.TrimPrefix(tag, "v"), ".", 3)
	if len(parts) < 3 || parts[0] != "1" || !strings.HasPrefix(tag, "v") {
		return 0, "", false
	}
	minor, err := strconv.Atoi(parts[1])
	if err != nil {
		return 0, "", false
	}
	return minor, tag, true
}

// versionFromCRDs tells v1.2, v1.1 and v1.0 apart by fields their CRDs added.
func versionFromCRDs(ctx context.Context, reader client.Reader) Version {
	from := "the CRDs Liqo installed"
	has, err := crdHasField(ctx, reader, "foreignclusters.core.liqo.io", "status", "observedGeneration")
	if err != nil {
		return Version{}
	}
	if has {
		return Version{Minor: 2, Known: true, Text: "v1.2.x", From: from}
	}
	if has, err = crdHasField(ctx, reader, "vkoptionstemplates.offloading.liqo.io", "spec", "tolerations"); err != nil {
		return Version{}
	}
	if has {
		return Version{Minor: 1, Known: true, Text: "v1.1.x", From: from}
	}
	return Version{Minor: 0, Known: true, Text: "v1.0.x", From: from}
}

// crdHasField reports whether the v1beta1 schema of the CRD named name has the property top.field.
func crdHasField(ctx context.Context, reader client.Reader, name, top, field string) (bool, error) {
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	if err := reader.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		return false, err
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, ok := v.(map[string]any)
		if !ok || m["name"] != "v1beta1" {
			continue
		}
		_, found, _ := unstructured.NestedMap(m, "schema", "openAPIV3Schema", "properties", top, "properties", field)
		return found, nil
	}
	return false, nil
}
