package webhook

import (
	"slices"
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
	// LiqoUninstallerUsers are the identities whose bare marks the gate accepts as Liqo's uninstaller's
	// (rule 18). Nil: DefaultLiqoUninstallerUsers of LiqoNamespace (Liqo's pre-delete Job); empty and not
	// nil: nobody.
	LiqoUninstallerUsers []string
	// Storm holds marks back while too many of this consumer's providers are unreachable at once (rule 21);
	// the zero value (MinUnreachable 0) turns the guard off. The binary's default is
	// liqojanitor.DefaultStormGuard.
	Storm liqojanitor.StormGuard
	// Namespace is the janitor's own namespace, where it keeps its records (liqojanitor.RecordsConfigMap):
	// the gate reads a kept return there, and nowhere else. The binary passes its --namespace.
	Namespace string
}

// Defaults of the gate's options (the binary's flag defaults).
const (
	DefaultMinUnreachable = 60 * time.Second
	DefaultProbeTimeout   = 2 * time.Second
)

// DefaultLiqoUninstallerUsers are the identities rule 18 trusts when none are configured: Liqo's pre-delete
// Job's ServiceAccount in liqoNamespace.
func DefaultLiqoUninstallerUsers(liqoNamespace string) []string {
	return []string{"system:serviceaccount:" + liqoNamespace + ":" + liqojanitor.LiqoPreDeleteServiceAccount}
}

// Default returns o with an empty LiqoNamespace set to liqojanitor.DefaultLiqoNamespace, and nil LiqoUninstallerUsers
// set to DefaultLiqoUninstallerUsers of it.
func (o Options) Default() Options {
	if o.LiqoNamespace == "" {
		o.LiqoNamespace = liqojanitor.DefaultLiqoNamespace
	}
	if o.LiqoUninstallerUsers == nil {
		o.LiqoUninstallerUsers = DefaultLiqoUninstallerUsers(o.LiqoNamespace)
	}
	return o
}

// isLiqoUninstaller reports whether user is one of the identities rule 18 trusts.
func (o Options) isLiqoUninstaller(user string) bool {
	return user != "" && slices.Contains(o.LiqoUninstallerUsers, user)
}
