package janitor_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	liqojanitor "github.com/liqo-janitor/liqo-janitor"
	"github.com/liqo-janitor/liqo-janitor/janitor"
	"github.com/liqo-janitor/liqo-janitor/test/fixture"
	"github.com/liqo-janitor/liqo-janitor/test/harness"
)

// The janitor's records belong to one mark (janitor rule 15). Here there is no gate (this package
// registers no webhook): an unmark removes the mark alone and stamps nothing, as while the gate is down.
// The janitor ends its records of the removed mark itself, so that the next mark gets its full grace
// window, and a return seen during the earlier mark does not keep the next one from being acted on.
func TestAnUnmarkTheGateDidNotSeeEndsTheJanitorsRecordsOfThatMark(t *testing.T) {
	env := harness.Require(t)
	g := NewWithT(t)
	ctx := t.Context()
	p := build(t, fixture.Spec{Providers: 1, PodsPerProvider: 2}).Providers[0]
	kill(t, p)
	const grace = 4 * time.Second
	startJanitor(t, janitor.Options{GracePeriod: grace})
	annotation := func(key string) func() string {
		return func() string { return get(t, p.ForeignCluster).Annotations[key] }
	}
	unmark := func() {
		g.Expect(fixture.Annotate(ctx, env.Client, p.ForeignCluster, map[string]*string{liqojanitor.MarkAnnotation: nil})).To(Succeed())
	}

	// A first mark: the provider answers during it (a return), then the mark goes.
	g.Expect(fixture.Mark(ctx, env.Client, p)).To(Succeed())
	g.Eventually(annotation(liqojanitor.FirstSeenAnnotation)).ShouldNot(BeEmpty())
	g.Expect(fixture.Revive(ctx, env.Client, p)).To(Succeed())
	g.Eventually(annotation(liqojanitor.CleanupAnnotation)).WithTimeout(30 * time.Second).Should(HavePrefix(liqojanitor.ReturnedPrefix))
	unmark()
	g.Eventually(annotation(liqojanitor.FirstSeenAnnotation)).WithTimeout(30*time.Second).Should(BeEmpty(),
		"the janitor ends its first sight of the removed mark")
	g.Expect(annotation(liqojanitor.GraceEndsAnnotation)()).To(BeEmpty())
	g.Expect(annotation(liqojanitor.CleanupAnnotation)()).To(HavePrefix("ended with its mark: "+liqojanitor.ReturnedPrefix),
		"the earlier mark's return stays as history, not as a current return")

	// A second mark of the provider, dead again: a full grace window, then the clean-up.
	kill(t, p)
	marked := time.Now()
	g.Expect(fixture.Mark(ctx, env.Client, p)).To(Succeed())
	g.Eventually(annotation(liqojanitor.GraceEndsAnnotation)).WithTimeout(30 * time.Second).ShouldNot(BeEmpty())
	ends, err := time.Parse(time.RFC3339, annotation(liqojanitor.GraceEndsAnnotation)())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ends).To(BeTemporally(">=", marked.Add(grace).Truncate(time.Second)), "the new mark's window is whole")
	g.Eventually(func() int { return podsLeft(t, p) }).WithTimeout(60*time.Second).Should(BeZero(),
		"the earlier mark's return does not hold the new one")
	g.Expect(strings.HasPrefix(annotation(liqojanitor.CleanupAnnotation)(), liqojanitor.ReturnedPrefix)).To(BeFalse())
}
