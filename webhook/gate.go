package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	jsonpatch "gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// Paths the webhooks are served on; the configurations generated into
// manifests/chart/liqo-janitor/files point at them.
const (
	MutatePath   = "/mutate-liqo-io-v1beta1-foreigncluster"
	ValidatePath = "/validate-liqo-io-v1beta1-foreigncluster"
)

// The configurations below are generated into manifests/chart/liqo-janitor/files (`make manifests`), and
// their matchConditions are written into them from the root package's key lists (MatchConditions,
// matchconditions.go): the API server calls the gate only for requests it could refuse or must stamp.
// The validating webhook emits an Event on a mark by Liqo's uninstaller (rule 18), never on a dry run:
// sideEffects NoneOnDryRun.
//
//nolint:lll // markers are one line each
// +kubebuilder:webhook:path=/mutate-liqo-io-v1beta1-foreigncluster,mutating=true,failurePolicy=fail,sideEffects=None,groups=core.liqo.io,resources=foreignclusters,verbs=create;update,versions=v1beta1,name=mforeigncluster.liqo-janitor.io,admissionReviewVersions=v1,matchPolicy=Equivalent,timeoutSeconds=5,reinvocationPolicy=IfNeeded
// +kubebuilder:webhook:path=/validate-liqo-io-v1beta1-foreigncluster,mutating=false,failurePolicy=fail,sideEffects=NoneOnDryRun,groups=core.liqo.io,resources=foreignclusters,verbs=create;update,versions=v1beta1,name=vforeigncluster.liqo-janitor.io,admissionReviewVersions=v1,matchPolicy=Equivalent,timeoutSeconds=5
// +kubebuilder:webhook:path=/validate-liqo-io-v1beta1-foreigncluster,mutating=false,failurePolicy=fail,sideEffects=None,groups=core.liqo.io,resources=foreignclusters,verbs=delete,versions=v1beta1,name=vforeigncluster-delete.liqo-janitor.io,admissionReviewVersions=v1,matchPolicy=Equivalent,timeoutSeconds=5

// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
// +kubebuilder:rbac:groups=core.liqo.io,resources=foreignclusters,verbs=list
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list
// +kubebuilder:rbac:groups=networking.liqo.io,resources=configurations;connections;gatewayservers;gatewayclients,verbs=list
// +kubebuilder:rbac:groups=authentication.liqo.io,resources=tenants;identities,verbs=list
// +kubebuilder:rbac:groups=offloading.liqo.io,resources=virtualnodes,verbs=list
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch,namespace=liqo
// +kubebuilder:rbac:groups="",resources=pods,verbs=get,namespace=liqo

// The janitor's ConfigMaps the gate gets in the janitor's own namespace — its records (rule 30) and its
// fence renewals (rule 31), by name — are granted in the release namespace by the chart's
// templates/brake-rbac.yaml (a marker cannot name the release namespace).

// gate serves the mutating and validating admission webhooks on ForeignClusters.
type gate struct {
	// client creates SubjectAccessReviews.
	client client.Client
	// reader reads Liqo's cluster-ID ConfigMap, through a cache restricted to its namespace (CacheByObject).
	reader client.Reader
	// apiReader lists ForeignClusters live from the API server (rule 9: a duplicate created a moment ago
	// counts), so webhook-only replicas cache no ForeignClusters.
	apiReader client.Reader
	// options configures the rules.
	options Options
	// clock tells the time (injected for tests).
	clock clock.PassiveClock
	// probe asks whether a provider's API server answers (rule 4); nil when the probe is off.
	probe func(ctx context.Context, fc *liqov1beta1.ForeignCluster) probeResult
	// recorder emits the Event of a mark by Liqo's uninstaller (rule 18); nil emits none.
	recorder events.EventRecorder
}

// CacheByObject restricts the manager's cache for what the gate reads but must not cache cluster-wide:
// only Liqo's cluster-ID ConfigMap, in the Liqo namespace.
func CacheByObject(o Options) map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}: {
			Namespaces: map[string]cache.Config{o.Default().LiqoNamespace: {}},
			Label: labels.SelectorFromSet(labels.Set{
				liqojanitor.ClusterIDConfigMapNameLabel: liqojanitor.ClusterIDConfigMapNameValue}),
		},
	}
}

// Setup registers the gate's two webhooks with the manager's webhook server, and starts the cluster-ID
// ConfigMap informer with the manager so the first marking does not wait for it. The manager's cache must
// be narrowed with CacheByObject.
func Setup(ctx context.Context, mgr manager.Manager, o Options) error {
	if _, err := mgr.GetCache().GetInformer(ctx, &corev1.ConfigMap{}); err != nil {
		return fmt.Errorf("watching Liqo's cluster-ID ConfigMap: %w", err)
	}
	o = o.Default()
	if err := o.Validate(); err != nil {
		return err
	}
	if o.JanitorUser == "" {
		user, err := selfUser(ctx, mgr.GetClient())
		if err != nil {
			return err
		}
		o.JanitorUser = user
	}
	g := &gate{client: mgr.GetClient(), reader: mgr.GetCache(), apiReader: mgr.GetAPIReader(), options: o,
		recorder: mgr.GetEventRecorder(liqojanitor.Name)}
	if o.ProbeTimeout > 0 {
		prober, live := liqojanitor.NewProber(o.ProbeTimeout), mgr.GetAPIReader()
		g.probe = func(ctx context.Context, fc *liqov1beta1.ForeignCluster) probeResult {
			// With the provider's CA known (its control-plane Identity), only an answer with a certificate of
			// that CA vetoes: an HTTPS proxy or a recycled address answering does not make the provider
			// unmarkable. Without it, any answer at the status' URLs does (the safe direction).
			if t, _ := liqojanitor.ProviderTargets(ctx, live, fc); len(t.CA) > 0 {
				u, _ := prober.ProbeTargets(ctx, t)
				return probeResult{Answered: u}
			}
			return probeResult{Answered: prober.Probe(ctx, fc)}
		}
	}
	warmPeeringMappings(mgr.GetRESTMapper())
	mutating, validating := g.webhooks()
	mgr.GetWebhookServer().Register(MutatePath, mutating)
	mgr.GetWebhookServer().Register(ValidatePath, validating)
	mgr.GetWebhookServer().Register(PeeringPath, &admission.Webhook{Handler: admission.HandlerFunc(g.WarnPeering),
		RecoverPanic: ptr.To(true), LogConstructor: requestLogger})
	return nil
}

// warmPeeringMappings resolves, at start, the REST mapping of every kind a deletion lists (rule 16), so
// that the first deletion does not pay the API discovery of four groups inside the webhook's 5 s. A kind
// it cannot resolve now is resolved by that deletion (one Liqo does not install has no objects).
func warmPeeringMappings(mapper meta.RESTMapper) {
	for _, k := range liqojanitor.PeeringKinds {
		_, _ = mapper.RESTMapping(k.GVK.GroupKind(), k.GVK.Version)
	}
}

// webhooks builds the mutating and the validating webhook.
func (g *gate) webhooks() (mutating, validating *admission.Webhook) {
	if g.clock == nil {
		g.clock = clock.RealClock{}
	}
	// The mutating webhook is a raw handler: it answers with a JSON patch of exactly the annotations it
	// stamps, where the typed Defaulter would diff the whole re-marshalled object.
	mutating = &admission.Webhook{Handler: admission.HandlerFunc(g.Mutate), RecoverPanic: ptr.To(true), LogConstructor: requestLogger}
	// The validating webhook is a raw handler over the typed methods (Validate): it decodes each object once
	// (decodeForeignCluster), where admission.WithValidator passes each through the scheme's universal
	// decoder, which reads the whole JSON twice.
	validating = &admission.Webhook{Handler: admission.HandlerFunc(g.Validate), RecoverPanic: ptr.To(true), LogConstructor: requestLogger}
	return mutating, validating
}

// Validate is the validating webhook: it decodes the request's objects and applies validate (CREATE,
// UPDATE) or validateDelete, answering as admission.WithValidator does: an error carrying an API status
// (Err's) goes back as that status, any other as a denial with its message, the warnings either way.
func (g *gate) Validate(ctx context.Context, req admission.Request) admission.Response {
	ctx = admission.NewContextWithRequest(ctx, req)
	var warnings admission.Warnings
	var err error
	switch req.Operation {
	case admissionv1.Connect:
	case admissionv1.Create, admissionv1.Update:
		fc, old, decodeErr := g.decode(req)
		if decodeErr != nil {
			return admission.Errored(http.StatusBadRequest, decodeErr)
		}
		warnings, err = g.validate(ctx, old, fc)
	case admissionv1.Delete:
		old := &liqov1beta1.ForeignCluster{}
		if decodeErr := decodeForeignCluster(req.OldObject.Raw, old); decodeErr != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the deleted ForeignCluster: %w", decodeErr))
		}
		warnings, err = g.validateDelete(ctx, old)
	default:
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("unknown operation %q", req.Operation))
	}
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return admission.Allowed("").WithWarnings(warnings...)
	case errors.As(err, &status):
		result := status.Status()
		return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Result: &result}}.WithWarnings(warnings...)
	default:
		return admission.Denied(err.Error()).WithWarnings(warnings...)
	}
}

// Mutate stamps marked-by and marked-at on marking, stamps a fence record and a released-volumes record on a
// marked cluster, and removes the stamps, the confirmation and those records on unmarking (stamp).
func (g *gate) Mutate(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	fc, old, err := g.decode(req)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	marks, uninstaller := transitionOf(old, fc) == marking, false
	if marks {
		uninstaller, _ = g.liqoUninstaller(ctx, req.UserInfo)
	}
	now := g.clock.Now()
	set, remove := stamp(old, fc, req.UserInfo.Username, uninstaller, now)
	if marks {
		set[liqojanitor.MarkTargetsAnnotation] = g.markTargets(ctx, fc, now)
		if overridesDeadline(fc) { // rule 31: who marked before the provider's fence deadline, and what it was
			set[liqojanitor.FenceDeadlineOverriddenAnnotation] = g.deadlineOverride(ctx, fc, req.UserInfo.Username, now)
		}
	}
	if len(set) == 0 && len(remove) == 0 {
		return admission.Allowed("")
	}
	return admission.Patched("", annotationPatch(fc.Annotations, set, remove)...)
}

// markTargetsTimeout bounds the mutating webhook's read of the provider's control-plane Identity (rule 23),
// well inside the webhook's 5 s with the validating webhook's probe after it.
const markTargetsTimeout = time.Second

// markTargets is the gate's record of where fc's provider is as Liqo knows it now (rule 23): what
// liqojanitor.ProviderTargets gathers — the status' URLs, and the Identity's API server, proxy and CA where
// it can be read within markTargetsTimeout (read live; when it cannot, the record's from says so).
func (g *gate) markTargets(ctx context.Context, fc *liqov1beta1.ForeignCluster, now time.Time) string {
	ctx, cancel := context.WithTimeout(ctx, markTargetsTimeout)
	defer cancel()
	t, from := liqojanitor.ProviderTargets(ctx, g.apiReader, fc)
	return liqojanitor.MarkTargets{Targets: t, From: from, At: now}.String()
}

// deadlineOverride is the gate's stamp of a mark that carries the fence deadline's override (rule 31): now,
// the requester, and the provider's fence deadline as the gate reads it now (none when there is none or
// the janitor's record cannot be read: the validating webhook refuses nothing for that, the override
// being given).
func (g *gate) deadlineOverride(ctx context.Context, fc *liqov1beta1.ForeignCluster, user string, now time.Time) string {
	o := liqojanitor.FenceDeadlineOverride{At: now, By: user}
	if r, err := g.fenceRenewal(ctx, fc); err == nil {
		o.Deadline, _, _ = r.Deadline()
	}
	return o.String()
}

// fenceRenewalReadTimeout bounds the read of the janitor's renewal record (rule 31), inside the webhook's
// 5 s with the probe after it.
const fenceRenewalReadTimeout = time.Second

// fenceRenewal is the janitor's record of its renewals of fc's provider's fence Lease (rule 31): read live
// from liqojanitor.FenceRenewalsConfigMap in the janitor's own namespace (Options.Namespace) and nowhere
// else, by spec.clusterID; the zero record when the ConfigMap or the provider's entry is not there.
func (g *gate) fenceRenewal(ctx context.Context, fc *liqov1beta1.ForeignCluster) (liqojanitor.FenceRenewal, error) {
	ctx, cancel := context.WithTimeout(ctx, fenceRenewalReadTimeout)
	defer cancel()
	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: g.options.Namespace, Name: liqojanitor.FenceRenewalsConfigMap}
	switch err := g.apiReader.Get(ctx, key, cm); {
	case apierrors.IsNotFound(err):
		return liqojanitor.FenceRenewal{}, nil
	case err != nil:
		return liqojanitor.FenceRenewal{}, fmt.Errorf("reading ConfigMap %s: %w", key, err)
	}
	r, _, err := liqojanitor.ReadFenceRenewal(cm, string(fc.Spec.ClusterID))
	if err != nil {
		return liqojanitor.FenceRenewal{}, fmt.Errorf("ConfigMap %s: %w", key, err)
	}
	return r, nil
}

// decode reads the ForeignCluster of a CREATE or UPDATE and, on UPDATE, the old one.
func (g *gate) decode(req admission.Request) (fc, old *liqov1beta1.ForeignCluster, err error) {
	fc = &liqov1beta1.ForeignCluster{}
	if err := decodeForeignCluster(req.Object.Raw, fc); err != nil {
		return nil, nil, fmt.Errorf("decoding the ForeignCluster: %w", err)
	}
	if req.Operation == admissionv1.Update {
		old = &liqov1beta1.ForeignCluster{}
		if err := decodeForeignCluster(req.OldObject.Raw, old); err != nil {
			return nil, nil, fmt.Errorf("decoding the old ForeignCluster: %w", err)
		}
	}
	return fc, old, nil
}

// decodeForeignCluster reads one of a request's objects. The API server sends it as JSON of the
// configuration's version (core.liqo.io/v1beta1; matchPolicy Equivalent converts to it), which is
// unmarshalled straight into the typed object, as the scheme's JSON serializer does after a first pass over
// the whole JSON for its kind, the pass this skips; anything but a ForeignCluster of that version is
// refused, as the serializer refuses it.
func decodeForeignCluster(raw []byte, into *liqov1beta1.ForeignCluster) error {
	if len(raw) == 0 {
		return errors.New("there is no content to decode")
	}
	if err := utiljson.Unmarshal(raw, into); err != nil {
		return err
	}
	if into.Kind != foreignClusterKind || (into.APIVersion != "" && into.APIVersion != liqov1beta1.GroupVersion.String()) {
		return fmt.Errorf("got %q of %q, want a %s of %s", into.Kind, into.APIVersion, foreignClusterKind, liqov1beta1.GroupVersion)
	}
	return nil
}

// foreignClusterKind is the kind the gate admits.
const foreignClusterKind = "ForeignCluster"

// validateDelete applies rules 16, 17 and 30: a marked ForeignCluster stays while its unpeering runs or
// its provider's recorded return is not fenced (the webhook configuration sends only deletions of marked
// ForeignClusters).
func (g *gate) validateDelete(ctx context.Context, old *liqov1beta1.ForeignCluster) (admission.Warnings, error) {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return nil, err
	}
	d := &deletion{Old: old, User: req.UserInfo}
	if liqojanitor.IsMarked(old.Annotations) {
		g.gatherDeletion(ctx, d)
	}
	v := decideDelete(d)
	if v.Reason == reasonOverride {
		// The API server's audit log has the request; the gate's log says what the override let through.
		logf.FromContext(ctx).Info("Deleting a marked ForeignCluster by the break-glass override",
			"foreignCluster", klog.KObj(old), "clusterID", old.Spec.ClusterID, "user", req.UserInfo.Username,
			"left", leftToUnpeer(d), "unfencedReturn", d.unfenced(), "dryRun", ptr.Deref(req.DryRun, false))
	}
	countDecision(string(req.Operation), &v)
	return v.Warnings, v.Err(old)
}

// gatherDeletion reads, live, what the decision on deleting the marked d.Old depends on: the peering
// objects left (rule 16), the provider's recorded return (rule 30) and, only when the override is there
// and something holds the ForeignCluster, the break-glass review (rule 17).
func (g *gate) gatherDeletion(ctx context.Context, d *deletion) {
	// Bounded inside the webhook's timeout, so that a slow API server is refused with the gate's own words
	// (fail closed, retry) rather than the API server's "context deadline exceeded".
	reads, cancel := context.WithTimeout(ctx, deletionReadTimeout)
	defer cancel()
	// One of each kind is enough to hold the deletion and to name it.
	d.Peering, d.PeeringErr = liqojanitor.PeeringLeft(reads, g.apiReader, string(d.Old.Spec.ClusterID), 1)
	d.Return, d.ReturnErr = g.recordedReturn(reads, d.Old)
	if (d.running() || d.unfenced()) && overrides(d.Old) {
		d.permission = g.checkPermission(ctx, d.Old, d.User)
	}
}

// deletionReadTimeout bounds the reads of a deletion's decision (the webhook's timeout is 5 s).
const deletionReadTimeout = 4 * time.Second

// recordedReturn is the return of fc's provider recorded for its current mark: on the ForeignCluster (the
// janitor's cleanup annotation), else the one the janitor kept in its records ConfigMap
// (liqojanitor.RecordsConfigMap), read live in the janitor's own namespace (Options.Namespace) and nowhere
// else: a look-alike in another namespace is nobody's record.
func (g *gate) recordedReturn(ctx context.Context, fc *liqov1beta1.ForeignCluster) (*recordedReturn, error) {
	if r := returnOnForeignCluster(fc); r != nil {
		return r, nil
	}
	cm := &corev1.ConfigMap{}
	switch err := g.apiReader.Get(ctx, client.ObjectKey{Namespace: g.options.Namespace, Name: liqojanitor.RecordsConfigMap}, cm); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading the janitor's records (ConfigMap %s/%s): %w", g.options.Namespace, liqojanitor.RecordsConfigMap, err)
	}
	return keptReturn(cm, fc), nil
}

func (g *gate) validate(ctx context.Context, old, fc *liqov1beta1.ForeignCluster) (admission.Warnings, error) {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return nil, err
	}
	r := &inputs{Old: old, New: fc, User: req.UserInfo, Now: g.clock.Now(), JanitorUser: g.options.JanitorUser}
	g.gather(ctx, r)
	v := decide(r, g.options)
	// The probe costs up to ProbeTimeout: made only for a mark every other rule accepts.
	if v.Allowed() && g.probe != nil && transitionOf(old, fc) == marking {
		r.Probe = g.probe(ctx, fc)
		v = decide(r, g.options)
	}
	if v.Reason == reasonUninstallerMark && !ptr.Deref(req.DryRun, false) {
		g.auditUninstallerMark(ctx, fc, req.UserInfo.Username)
	}
	countDecision(string(req.Operation), &v)
	return v.Warnings, v.Err(fc)
}

// gather reads what the decision on r.New depends on beyond the request: on a mark the cluster context
// (needsClusterContext: the uninstaller's pod, the local cluster ID, every ForeignCluster, the fence
// renewal record) and, when needsPermission, the break-glass review. The live reads are independent of
// each other and made at once, each into its own inputs: a mark waits for the slowest of them rather
// than for their sum.
func (g *gate) gather(ctx context.Context, r *inputs) {
	var wg sync.WaitGroup
	if needsClusterContext(transitionOf(r.Old, r.New)) {
		wg.Go(func() { r.LiqoUninstaller, r.NotUninstaller = g.liqoUninstaller(ctx, r.User) })
		wg.Go(func() {
			fcs, err := g.foreignClusters(ctx)
			r.Duplicates, r.DuplicatesErr = duplicatesOf(fcs, r.New), err
			r.Storm, r.StormErr = liqojanitor.CountStorm(fcs, r.New), err
		})
		wg.Go(func() { r.FenceRenewal, r.FenceRenewalErr = g.fenceRenewal(ctx, r.New) })
		r.LocalClusterID, r.LocalClusterIDErr = g.localClusterID(ctx) // from the cache
	}
	if needsPermission(r.Old, r.New) {
		wg.Go(func() { r.permission = g.checkPermission(ctx, r.New, r.User) })
	}
	wg.Wait()
}

// auditUninstallerMark audits a mark by Liqo's uninstaller (rule 18): an Event on the ForeignCluster
// (reason MarkedByLiqoUninstaller, in the janitor's name, beside its own) and a log line with the user.
// Never on a dry run: the validating webhook declares sideEffects NoneOnDryRun.
func (g *gate) auditUninstallerMark(ctx context.Context, fc *liqov1beta1.ForeignCluster, user string) {
	logf.FromContext(ctx).Info("Accepting a mark by Liqo's uninstaller", "foreignCluster", klog.KObj(fc),
		"clusterID", fc.Spec.ClusterID, "user", user)
	if g.recorder != nil {
		g.recorder.Eventf(fc, nil, corev1.EventTypeNormal, reasonUninstallerMark, "Mark", "%s", msgUninstallerMark(fc, user))
	}
}

// localClusterID reads this cluster's Liqo cluster ID from Liqo's cluster-ID ConfigMap.
func (g *gate) localClusterID(ctx context.Context) (string, error) {
	return liqojanitor.LocalClusterID(ctx, g.reader, g.options.LiqoNamespace)
}

// foreignClusters lists every ForeignCluster, live from the API server: a duplicate created a moment ago
// counts (rule 9), and so does a provider that turned unreachable a moment ago (rule 21's storm count).
func (g *gate) foreignClusters(ctx context.Context) ([]liqov1beta1.ForeignCluster, error) {
	var fcs liqov1beta1.ForeignClusterList
	if err := g.apiReader.List(ctx, &fcs); err != nil {
		return nil, fmt.Errorf("listing ForeignClusters: %w", err)
	}
	return fcs.Items, nil
}

// duplicatesOf returns the ForeignClusters of fcs that Liqo's lookup could confuse with fc: those whose
// spec.clusterID is fc's, or whose liqo.io/remote-cluster-id label names it (rule 9).
func duplicatesOf(fcs []liqov1beta1.ForeignCluster, fc *liqov1beta1.ForeignCluster) []duplicate {
	var others []duplicate
	for _, o := range liqojanitor.ForeignClustersOf(fcs, fc.Spec.ClusterID) {
		if o.Name != fc.Name {
			others = append(others, duplicate{Name: o.Name, ByLabel: o.Spec.ClusterID != fc.Spec.ClusterID})
		}
	}
	sort.Slice(others, func(i, j int) bool { return others[i].Name < others[j].Name })
	return others
}

// selfUser asks the API server who the binary is (a SelfSubjectReview): the janitor's identity, the only
// one that may write the janitor's keys (rule 14).
func selfUser(ctx context.Context, c client.Client) (string, error) {
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, review); err != nil {
		return "", fmt.Errorf("learning the janitor's own identity with a SelfSubjectReview: %w", err)
	}
	if review.Status.UserInfo.Username == "" {
		return "", errors.New("learning the janitor's own identity: the SelfSubjectReview named no user")
	}
	return review.Status.UserInfo.Username, nil
}

// checkPermission asks the API server whether the requesting user may use the break-glass verb on fc.
func (g *gate) checkPermission(ctx context.Context, fc *liqov1beta1.ForeignCluster, user authenticationv1.UserInfo) permission {
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra(user.Extra),
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: liqojanitor.MarkVerb, Group: liqov1beta1.GroupVersion.Group, Version: liqov1beta1.GroupVersion.Version,
			Resource: "foreignclusters", Name: fc.Name,
		},
	}}
	if err := g.client.Create(ctx, sar); err != nil {
		return permission{Err: err}
	}
	return permission{Allowed: sar.Status.Allowed, Reason: sar.Status.Reason}
}

func extra(in map[string]authenticationv1.ExtraValue) map[string]authorizationv1.ExtraValue {
	if in == nil {
		return nil
	}
	out := make(map[string]authorizationv1.ExtraValue, len(in))
	for k, v := range in {
		out[k] = authorizationv1.ExtraValue(v)
	}
	return out
}

// Err turns a denial into the API error returned to the client: 403 Forbidden for a missing break-glass
// permission, 422 Invalid otherwise, with a cause per rule (field path and message) either way.
func (v *verdict) Err(fc *liqov1beta1.ForeignCluster) error {
	if v.Allowed() {
		return nil
	}
	gk := liqov1beta1.GroupVersion.WithKind("ForeignCluster").GroupKind()
	statusErr := apierrors.NewInvalid(gk, fc.Name, v.Errors)
	if v.unauthorized {
		statusErr.ErrStatus.Code = http.StatusForbidden
		statusErr.ErrStatus.Reason = metav1.StatusReasonForbidden
		statusErr.ErrStatus.Message = fmt.Sprintf("%s %q is forbidden: %s", gk.Kind, fc.Name, v.Errors.ToAggregate())
	}
	return statusErr
}

// annotationPatch returns JSON patch operations that set and remove exactly the given annotations.
func annotationPatch(current, set map[string]string, remove []string) []jsonpatch.JsonPatchOperation {
	var ops []jsonpatch.JsonPatchOperation
	if current == nil && len(set) > 0 {
		ops = append(ops, jsonpatch.JsonPatchOperation{Operation: "add", Path: "/metadata/annotations", Value: map[string]string{}})
	}
	for _, key := range sortedKeys(set) {
		ops = append(ops, jsonpatch.JsonPatchOperation{Operation: "add", Path: "/metadata/annotations/" + escapeJSONPointer(key), Value: set[key]})
	}
	for _, key := range remove {
		ops = append(ops, jsonpatch.JsonPatchOperation{Operation: "remove", Path: "/metadata/annotations/" + escapeJSONPointer(key)})
	}
	return ops
}

func escapeJSONPointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
