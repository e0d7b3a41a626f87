package janitor

import (
	"sync"
	"time"

	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	"k8s.io/apimachinery/pkg/types"
)

// pacing is what paces the next pass over a cluster whose writes other admission webhooks refused
// (janitor rule 11): the kinds whose first write goes alone, and how long the next pass waits. Unlike the
// reports' memory it decides; like it, it lives in this process only, behind its own lock: a restarted
// janitor starts unpaced, which costs one refused write per kind.
type pacing struct {
	mu       sync.Mutex
	clusters map[types.UID]*paced
}

// paced is how one ForeignCluster's passes are paced.
type paced struct {
	// kinds are the kinds whose writes were refused in the last pass.
	kinds []string
	// backoff is how long the next pass waits (0: it comes when its events bring it).
	backoff time.Duration
}

// Backoff of the passes over a cluster whose writes other admission webhooks refuse: short, so that the rest
// goes within seconds of them answering again, and capped, so that a long outage costs a write every few
// seconds rather than a storm (janitor rule 11).
const (
	firstWebhookBackoff = time.Second
	maxWebhookBackoff   = 8 * time.Second
)

func newPacing() *pacing {
	return &pacing{clusters: map[types.UID]*paced{}}
}

// cluster returns fc's pacing, creating it. p.mu must be held.
func (p *pacing) cluster(fc *liqov1beta1.ForeignCluster) *paced {
	c, ok := p.clusters[fc.UID]
	if !ok {
		c = &paced{}
		p.clusters[fc.UID] = c
	}
	return c
}

// refused paces the passes after one whose writes admission webhooks refused (none: the pass went
// through), of kinds (none for a write of the janitor's own record): the backoff doubles, capped, while
// they refuse, and is none once they do not.
func (p *pacing) refused(fc *liqov1beta1.ForeignCluster, webhooks, kinds []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.cluster(fc)
	c.kinds = kinds
	switch {
	case len(webhooks) == 0:
		c.backoff = 0
	case c.backoff == 0:
		c.backoff = firstWebhookBackoff
	default:
		c.backoff = min(2*c.backoff, maxWebhookBackoff)
	}
}

// retryKinds are the kinds whose writes admission webhooks refused in fc's last pass: the next pass
// writes one of each alone first.
func (p *pacing) retryKinds(fc *liqov1beta1.ForeignCluster) map[string]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	kinds := map[string]bool{}
	for _, k := range p.cluster(fc).kinds {
		kinds[k] = true
	}
	return kinds
}

// backoff is how long the next pass over fc waits because admission webhooks refused the last one's
// writes (0 when none did).
func (p *pacing) backoff(fc *liqov1beta1.ForeignCluster) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cluster(fc).backoff
}

// forget drops the pacing of a ForeignCluster that is no longer marked (or gone).
func (p *pacing) forget(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.clusters, uid)
}
