package fence

import "testing"

func TestStepLinesAndCounts(t *testing.T) {
	steps := []*Step{
		{Where: "namespace app", DeletedKind: "shadowpods", Deleted: 3, Kind: "pods", Before: 3, Left: 1},
		{Where: "tenant namespace t", DeletedKind: "resourceslices", Deleted: 1, Kind: "resourceslices", Before: 1},
		{Where: "remote namespaces", Kind: "namespaces", Before: 2},
	}
	for i, want := range []string{
		"namespace app: shadowpods 3 deleted, pods 3 → 1 left",
		"tenant namespace t: resourceslices 1 deleted, 1 → 0 left",
		"remote namespaces: namespaces 2 → 0 left",
	} {
		if got := steps[i].line(); got != want {
			t.Errorf("line %d: got %q, want %q", i, got, want)
		}
	}
	if got, want := countsOf(steps[:1], false), "shadowpods 3, pods 2"; got != want {
		t.Errorf("counts: got %q, want %q", got, want)
	}
	if got, want := countsOf(steps, true), "shadowpods 3, pods 2, resourceslices 1, namespacemaps 0, renews 0, namespaces 2"; got != want {
		t.Errorf("counts --all: got %q, want %q", got, want)
	}
}
