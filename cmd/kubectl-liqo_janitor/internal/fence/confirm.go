package fence

import (
	"fmt"

	"github.com/liqo-janitor/liqo-janitor/cmd/kubectl-liqo_janitor/internal/output"
)

// confirm asks the operator to type the provider's cluster ID as fence read it there (unless --yes):
// what is typed names the one cluster fence acts on, not this consumer, whose ID is the same for all
// its providers.
func (o *Options) confirm(s *scope, plan *Plan) error {
	if o.Yes {
		return nil
	}
	w := o.progress()
	want := s.providerRead.id
	if plan.empty() {
		fmt.Fprintf(w, "\nThis records provider %s %s on the ForeignCluster, which ends its returned-provider alarm.\n", output.Printable(want), VerifiedClean)
	} else {
		fmt.Fprintf(w, "\nThis deletes on provider %s what this consumer left running there; nothing brings it back.\n", output.Printable(want))
	}
	fmt.Fprintf(w, "Type the PROVIDER's cluster ID, as read there (%s, %s), to confirm: ", output.Printable(want), s.providerRead.from)
	got, err := o.Factory.ReadLine()
	if err != nil {
		return fmt.Errorf("reading the confirmation: %w", err)
	}
	fmt.Fprintln(w)
	if got == want {
		return nil
	}
	hint := ""
	if got == s.localID {
		hint = " (that is this consumer's own: type the provider's)"
	}
	return fmt.Errorf("you typed %q, not the provider's cluster ID %q%s: nothing was deleted or written", got, want, hint)
}
