package webhook

import (
	"fmt"
	"slices"
	"strings"
	"time"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
)

// The gate's options: what the binary's --liqo-namespace, --min-unreachable, --probe-timeout,
// --liqo-uninstaller-users, --storm-min-unreachable and --storm-max-unreachable-share flags configure, and
// their defaults.

// Options configures the gate.
type Options struct {
	// LiqoNamespace is the namespace of Liqo's cluster-ID ConfigMap (rule 3).
	LiqoNamespace string
	// MinUnreachable is how long the APIServerStatus condition must have been not Established before the
	// mark is accepted: a blip is not a death (rule 4); likewise the tunnel's NetworkConnectionStatus, when
	// Liqo keeps one (rule 20). Zero accepts any unreachable provider.
	MinUnreachable time.Duration
	// ProbeTimeout bounds the gate's own probe of the provider's API server (rule 4); zero turns the
	// probe off. It must stay well inside the webhook's timeout (5 s).
	ProbeTimeout time.Duration
	// JanitorUser is the janitor's own identity, the only user who may write the janitor's keys (rule 14).
	// Empty: Setup learns it with a SelfSubjectReview (the binary serves the gate and runs the janitor
	// under one ServiceAccount).
	JanitorUser string
	// LiqoUninstallerUsers are the ServiceAccounts, in LiqoNamespace, whose bare marks the gate accepts as
	// Liqo's uninstaller's (rule 18), from a token bound to a live pod of their Job only. Empty (the
	// default): nobody's — no released Liqo (v1.0.3 to v1.2.0) marks a ForeignCluster when it uninstalls,
	// so the exemption is off until the operator installs a Liqo whose uninstaller does and turns it on
	// (DefaultLiqoUninstallerUsers names its pre-delete Job's).
	LiqoUninstallerUsers []string
	// Storm holds marks back while too many of this consumer's providers are unreachable at once (rule 21);
	// the zero value (MinUnreachable 0) turns the guard off. The binary's default is
	// liqojanitor.DefaultStormGuard.
	Storm liqojanitor.StormGuard
	// Namespace is the janitor's own namespace, where it keeps its records (liqojanitor.RecordsConfigMap):
	// the gate reads a kept return there, and nowhere else. Required (Setup refuses without it); the binary
	// passes its --namespace.
	Namespace string
}

// Defaults of the gate's options (the binary's flag defaults).
const (
	DefaultMinUnreachable = 60 * time.Second
	DefaultProbeTimeout   = 2 * time.Second
)

// DefaultLiqoUninstallerUsers are the identities rule 18 names when the operator turns it on without naming
// any (the chart's liqo.uninstaller.enabled): Liqo's pre-delete Job's ServiceAccount in liqoNamespace.
func DefaultLiqoUninstallerUsers(liqoNamespace string) []string {
	return []string{serviceAccountPrefix + liqoNamespace + ":" + liqojanitor.LiqoPreDeleteServiceAccount}
}

// serviceAccountPrefix begins the username of every ServiceAccount (k8s.io/apiserver
// pkg/authentication/serviceaccount MakeUsername).
const serviceAccountPrefix = "system:serviceaccount:"

// Default returns o with an empty LiqoNamespace set to liqojanitor.DefaultLiqoNamespace.
func (o Options) Default() Options {
	if o.LiqoNamespace == "" {
		o.LiqoNamespace = liqojanitor.DefaultLiqoNamespace
	}
	return o
}

// Validate refuses LiqoUninstallerUsers that rule 18 could never accept: only a ServiceAccount of Liqo's
// namespace runs Liqo's uninstaller Job, and the exemption holds only for a token bound to a pod of it.
func (o Options) Validate() error {
	if o.Namespace == "" {
		return fmt.Errorf("the gate needs the janitor's namespace (Options.Namespace; the binary's --namespace): it reads "+
			"the returns the janitor keeps there (ConfigMap %s) before it lets a marked ForeignCluster go (rule 30)", liqojanitor.RecordsConfigMap)
	}
	for _, user := range o.LiqoUninstallerUsers {
		if ns, _ := splitServiceAccount(user); ns != o.LiqoNamespace {
			return fmt.Errorf("--liqo-uninstaller-users: %q is not a ServiceAccount of Liqo's namespace %q (rule 18 accepts "+
				"a bare mark only from a pod of Liqo's pre-delete Job, which runs as %s<namespace>:<name>): name it so, e.g. %s, or leave the flag empty",
				user, o.LiqoNamespace, serviceAccountPrefix, DefaultLiqoUninstallerUsers(o.LiqoNamespace)[0])
		}
	}
	return nil
}

// isLiqoUninstaller reports whether user is one of the identities rule 18 names (whether the request comes
// from a pod of Liqo's uninstaller Job is uninstallerBinding's to say).
func (o Options) isLiqoUninstaller(user string) bool {
	return user != "" && slices.Contains(o.LiqoUninstallerUsers, user)
}

// splitServiceAccount splits a ServiceAccount's username into its namespace and name; "" for another user.
func splitServiceAccount(user string) (namespace, name string) {
	rest, ok := strings.CutPrefix(user, serviceAccountPrefix)
	if !ok {
		return "", ""
	}
	namespace, name, ok = strings.Cut(rest, ":")
	if !ok || namespace == "" || name == "" || strings.Contains(name, ":") {
		return "", ""
	}
	return namespace, name
}
