package liqojanitor

import (
	"fmt"
	"slices"
	"strings"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
)

// StormGuard holds marks back while too many of this consumer's providers are unreachable at once: then
// the cause is more likely on the consumer's side of a cut (its uplink, its gateway, its DNS) than on every
// provider's, and the gate's own probe runs from that same side. Kubernetes' node lifecycle controller
// stops evictions in a zone-wide disruption for the same reason; Cluster API's MachineHealthCheck has
// maxUnhealthy.
type StormGuard struct {
	// MinUnreachable is how many providers must be unreachable at once for a storm (0 turns the guard off).
	MinUnreachable int
	// MaxSharePercent is the share of providers, in percent, that must be exceeded for a storm.
	MaxSharePercent int
}

// Default storm guard: a consumer with one or two providers is never in a storm.
const (
	DefaultStormMinUnreachable      = 3
	DefaultStormMaxUnreachableShare = 50
)

// DefaultStormGuard is the guard with the defaults of --storm-min-unreachable and
// --storm-max-unreachable-share.
var DefaultStormGuard = StormGuard{MinUnreachable: DefaultStormMinUnreachable, MaxSharePercent: DefaultStormMaxUnreachableShare}

// Storm is how many of this consumer's providers Liqo's evidence shows unreachable at once.
type Storm struct {
	// Unreachable are the cluster IDs unreachable by Liqo's evidence (sorted), the one being marked included.
	Unreachable []string
	// Providers is how many cluster IDs this consumer has ForeignClusters for.
	Providers int
}

// CountStorm returns the storm count over fcs (every ForeignCluster of this consumer) for a mark on marking
// (nil when no mark is being set): one entry per cluster ID, unreachable when each of its ForeignClusters
// is by Liqo's evidence, and the one being marked counts as unreachable, whatever its status says.
func CountStorm(fcs []liqov1beta1.ForeignCluster, marking *liqov1beta1.ForeignCluster) Storm {
	reachable := map[string]bool{}
	for i := range fcs {
		id := string(fcs[i].Spec.ClusterID)
		if id == "" {
			continue
		}
		isMarking := marking != nil && fcs[i].UID == marking.UID
		reachable[id] = reachable[id] || (!isMarking && !UnreachableByLiqo(&fcs[i]))
	}
	if marking != nil && marking.Spec.ClusterID != "" {
		if _, ok := reachable[string(marking.Spec.ClusterID)]; !ok {
			reachable[string(marking.Spec.ClusterID)] = false // a create or a list that has not seen it yet
		}
	}
	s := Storm{Providers: len(reachable)}
	for id, up := range reachable {
		if !up {
			s.Unreachable = append(s.Unreachable, id)
		}
	}
	slices.Sort(s.Unreachable)
	return s
}

// In reports whether s is a storm by g: at least g.MinUnreachable providers unreachable and more than
// g.MaxSharePercent of them. A guard with MinUnreachable 0 never sees one.
func (g StormGuard) In(s Storm) bool {
	n := len(s.Unreachable)
	return g.MinUnreachable > 0 && n >= g.MinUnreachable && n*100 > g.MaxSharePercent*s.Providers
}

// Acknowledged reports whether annotations acknowledge s: AcknowledgeUnreachableAnnotation carries the
// number of unreachable providers, as a decimal integer.
func (s Storm) Acknowledged(annotations map[string]string) bool {
	return annotations[AcknowledgeUnreachableAnnotation] == fmt.Sprint(len(s.Unreachable))
}

// String says the count: "3 of 4 providers unreachable by Liqo's evidence (a, b, c)".
func (s Storm) String() string {
	return fmt.Sprintf("%d of %d providers unreachable by Liqo's evidence (%s)", len(s.Unreachable), s.Providers, joinIDs(s.Unreachable))
}

// joinIDs names at most five cluster IDs, and how many more there are.
func joinIDs(ids []string) string {
	const shown = 5
	if len(ids) <= shown {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:shown], ", "), len(ids)-shown)
}
