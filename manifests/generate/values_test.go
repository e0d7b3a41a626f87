package main

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestValueRowsReadHelmDocsComments(t *testing.T) {
	g := NewWithT(t)
	rows, err := valueRows([]byte(`# The file's own comment, no value's.

# -- How many.
# Continued on a second line.
replicaCount: 2
image:
  # -- The tag | a pipe.
  tag: ""
  pullPolicy: IfNotPresent
# -- Resources, shown whole.
resources:
  limits:
    cpu: 500m
# -- A documented map whose keys are documented.
gate:
  # -- Off or on.
  enabled: true
labels: {}
# a plain comment is no description
plain: [a]
`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rows).To(Equal([]valueRow{
		{key: "replicaCount", typ: "int", def: "2", description: "How many. Continued on a second line."},
		{key: "image.tag", typ: "string", def: `""`, description: "The tag | a pipe."},
		{key: "image.pullPolicy", typ: "string", def: `"IfNotPresent"`},
		{key: "resources", typ: "object", def: `{"limits":{"cpu":"500m"}}`, description: "Resources, shown whole."},
		{key: "gate", typ: "object", description: "A documented map whose keys are documented."},
		{key: "gate.enabled", typ: "bool", def: "true", description: "Off or on."},
		{key: "labels", typ: "object", def: "{}"},
		{key: "plain", typ: "list", def: `["a"]`},
	}))
	table := valuesTable(rows)
	g.Expect(table).To(ContainSubstring("| `image.tag` | string | `\"\"` | The tag \\| a pipe. |\n"))
	g.Expect(table).To(ContainSubstring("| `gate` | object |  | A documented map whose keys are documented. |\n"))
}

func TestReplaceTableKeepsWhatIsAroundTheMarkers(t *testing.T) {
	g := NewWithT(t)
	page := "# Title\n\nbefore\n" + tableBegin + "\nold table\n" + tableEnd + "\nafter\n"
	out, err := replaceTable([]byte(page), "| new |\n")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(Equal("# Title\n\nbefore\n" + tableBegin + "\n| new |\n" + tableEnd + "\nafter\n"))
	again, err := replaceTable(out, "| new |\n")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(out), "idempotent")

	_, err = replaceTable([]byte("no markers\n"), "| new |\n")
	g.Expect(err).To(MatchError(ContainSubstring("markers")))
}
