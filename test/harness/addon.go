package harness

import (
	"context"
	"fmt"
	"slices"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/webhook"
)

// ClusterIDConfigMap is Liqo's cluster-ID ConfigMap for a local cluster named id, in namespace ns.
func ClusterIDConfigMap(ns, id string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "liqo-clusterid-configmap", Namespace: ns,
			Labels: map[string]string{liqojanitor.ClusterIDConfigMapNameLabel: liqojanitor.ClusterIDConfigMapNameValue}},
		Data: map[string]string{liqojanitor.ClusterIDConfigMapKey: id},
	}
}

// InstallLocalClusterID creates Liqo's namespace (unless DefaultInstall made it for the install's Role
// there) and its cluster-ID ConfigMap, as Liqo's chart does.
func (e *Env) InstallLocalClusterID(ctx context.Context, ns, id string) error {
	if err := ensureNamespace(ctx, e.Client, ns); err != nil {
		return err
	}
	cm := ClusterIDConfigMap(ns, id)
	if err := e.Client.Create(ctx, cm); err != nil {
		return fmt.Errorf("creating %s: %w", cm.Name, err)
	}
	return nil
}

// InstallFile is the rendered install (manifests.InstallFile).
const InstallFile = "manifests/default/install.yaml"

// EditorRole is a ClusterRole that lets its users update ForeignClusters (and nothing more).
const EditorRole = "foreigncluster-editor"

// InstallOperators creates the shipped break-glass ClusterRole and the EditorRole, and binds users: editors
// may update ForeignClusters; markers may update them and, through the shipped role, mark them dead.
func (e *Env) InstallOperators(ctx context.Context, markers, editors []string) error {
	markRole := &rbacv1.ClusterRole{}
	if err := e.Installed("ClusterRole", liqojanitor.MarkRoleName, markRole); err != nil {
		return err
	}
	objs := []client.Object{
		markRole,
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: EditorRole}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"core.liqo.io"}, Resources: []string{"foreignclusters"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch"},
		}}},
		ClusterRoleBinding(EditorRole, EditorRole, append(slices.Clone(markers), editors...)...),
		ClusterRoleBinding(markRole.Name, markRole.Name, markers...),
	}
	for _, o := range objs {
		if err := e.Client.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// PluginRole is the install's ClusterRole that lets the kubectl plugin find the janitor's namespace
// (aggregated into the cluster's view role).
const PluginRole = liqojanitor.Name + ":plugin"

// InstallPlanReaders lets users read what `kubectl liqo-janitor plan` reads, as a cluster's view role and
// Liqo's read roles give it: Liqo's objects, nodes, pods, namespaces, ConfigMaps (the janitor-wide brake
// `status` shows), events and what the plan reads of the volumes pinned to a dead cluster (PVCs, PVs,
// StorageClasses, StatefulSets), and the install's PluginRole, which view aggregates.
func (e *Env) InstallPlanReaders(ctx context.Context, users ...string) error {
	pluginRole := &rbacv1.ClusterRole{} // the janitor's namespace, from the gate's webhook configuration
	if err := e.Installed("ClusterRole", PluginRole, pluginRole); err != nil {
		return err
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "plan-reader"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes", "pods", "namespaces", "configmaps"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"get", "list"}},
		// the volumes pinned to a dead cluster the plan lists (janitor.PlanVolumes, issue 38)
		{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims", "persistentvolumes"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"storageclasses"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"core.liqo.io", "offloading.liqo.io", "authentication.liqo.io"}, Resources: []string{"*"}, Verbs: []string{"get", "list"}},
	}}
	if err := e.Client.Create(ctx, pluginRole); client.IgnoreAlreadyExists(err) != nil { // applied with the install, or not yet
		return fmt.Errorf("creating ClusterRole %s: %w", PluginRole, err)
	}
	for _, o := range []client.Object{role, ClusterRoleBinding(role.Name, role.Name, users...), ClusterRoleBinding(PluginRole, PluginRole, users...)} {
		if err := e.Client.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// InstallGateWebhookConfiguration creates the gate's ValidatingWebhookConfiguration as the install renders
// it (its name, and its webhooks calling the Service in the release namespace) but with no rules: the API
// server never calls it (a test's gate serves the generated configurations the harness registers); the
// kubectl plugin reads the janitor's namespace from it (the plan readers may get it: PluginRole).
func (e *Env) InstallGateWebhookConfiguration(ctx context.Context) error {
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := e.Installed("ValidatingWebhookConfiguration", liqojanitor.Name, cfg); err != nil {
		return err
	}
	for i := range cfg.Webhooks {
		cfg.Webhooks[i].Rules = nil
	}
	if err := e.Client.Create(ctx, cfg); err != nil {
		return fmt.Errorf("creating ValidatingWebhookConfiguration %s: %w", cfg.Name, err)
	}
	return nil
}

// Installed reads the object of the given kind and name from the rendered install into obj, strictly (an
// unknown field fails).
func (e *Env) Installed(kind, name string, obj client.Object) error {
	docs, err := e.documents(InstallFile)
	if err != nil {
		return err
	}
	for _, u := range docs {
		if u.GetKind() == kind && u.GetName() == name {
			if err := fromUnstructured(u, obj); err != nil {
				return fmt.Errorf("%s: %w", InstallFile, err)
			}
			return nil
		}
	}
	return fmt.Errorf("%s has no %s %s: run make manifests", InstallFile, kind, name)
}

// ClusterRoleBinding binds role to users.
func ClusterRoleBinding(name, role string, users ...string) *rbacv1.ClusterRoleBinding {
	b := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}}
	for _, u := range users {
		b.Subjects = append(b.Subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: u})
	}
	return b
}

// InstallConfig is a rest.Config as the install's ServiceAccount (DefaultInstall, ServiceAccountConfig):
// what the product runs as. The gate learns it as the janitor's identity (gate rule 14).
func (e *Env) InstallConfig() (*rest.Config, error) {
	inst, err := e.DefaultInstall()
	if err != nil {
		return nil, err
	}
	return e.ServiceAccountConfig(inst.Namespace, inst.ServiceAccount)
}

// JanitorClient is a client as the install's ServiceAccount (InstallConfig): the janitor's own identity,
// for a test that writes what only the janitor may (its keys on a ForeignCluster, gate rule 14).
func (e *Env) JanitorClient() (client.Client, error) {
	cfg, err := e.InstallConfig()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: e.Scheme})
}

// StartGate serves the gate in a manager wired as cmd/liqo-janitor wires it (webhook.Setup, with its cache
// options and the binary's default client rate limits), as the install's ServiceAccount with the install's RBAC (InstallConfig), for the webhook
// configurations registered through Options.WebhookPaths, until Stop; it returns once the webhook server
// accepts connections. An empty opts.Namespace is the release namespace, as the binary passes its own.
func (e *Env) StartGate(opts webhook.Options) error {
	cfg, err := e.InstallConfig()
	if err != nil {
		return err
	}
	// The binary's client rate limits cover the gate's reads too (a deletion lists every kind Liqo
	// re-creates a ForeignCluster from).
	cfg.QPS, cfg.Burst = janitor.DefaultClientQPS, janitor.DefaultClientBurst
	if opts.Namespace == "" {
		inst, _ := e.DefaultInstall() // InstallConfig applied it
		opts.Namespace = inst.Namespace
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          crwebhook.NewServer(e.WebhookOptions()),
		Cache:                  cache.Options{ByObject: webhook.CacheByObject(opts)},
	})
	if err != nil {
		return err
	}
	if err := webhook.Setup(e.ctx, mgr, opts); err != nil {
		return err
	}
	e.Go(mgr.Start)
	return e.WaitForWebhookServer(context.Background())
}

// StartJanitor runs the janitor in a manager of its own, wired as cmd/liqo-janitor wires it (janitor.Setup,
// with its cache options and the binary's default client rate limits), as the install's ServiceAccount
// with the install's RBAC (InstallConfig; with opts.ReleaseIdentitySecrets, the identity-Secrets
// component's too, InstallIdentitySecrets), until stop is called; stop may be called more than once and
// returns the manager's error. Several janitors may run one after the other in a process:
// controller-name validation is off. An opts.Namespace other than the release namespace must be granted
// as the release namespace is (OwnNamespace); without one, the janitor gets a fresh namespace of its own
// (its records and brake are its alone, and a janitor started again without one starts with none).
func (e *Env) StartJanitor(opts janitor.Options) (stop func() error, err error) {
	return e.StartJanitorWith(opts, nil)
}

// StartJanitorWith is StartJanitor with the janitor's client wrapped by wrap (nil: as it is): a test puts a
// failure where the API server cannot be made to fail at will (a conflict at one write).
func (e *Env) StartJanitorWith(opts janitor.Options, wrap func(client.Client) client.Client) (stop func() error, err error) {
	if opts.ReleaseIdentitySecrets {
		if err := e.InstallIdentitySecrets(); err != nil {
			return nil, err
		}
	}
	if opts.Namespace == "" {
		if opts.Namespace, err = e.janitorNamespace(context.Background()); err != nil {
			return nil, err
		}
	}
	cfg, err := e.InstallConfig()
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = janitor.DefaultClientQPS, janitor.DefaultClientBurst
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{ByObject: janitor.CacheByObject(opts)},
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		NewClient: func(cfg *rest.Config, o client.Options) (client.Client, error) {
			c, err := client.New(cfg, o)
			if err != nil || wrap == nil {
				return c, err
			}
			return wrap(c), nil
		},
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := janitor.Setup(ctx, mgr, opts); err != nil {
		cancel()
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	var stopErr error
	return func() error {
		once.Do(func() {
			cancel()
			stopErr = <-done
		})
		return stopErr
	}, nil
}
