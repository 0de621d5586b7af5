package docs_test

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tendhq/tend/examples/gateway/platform"
	"github.com/tendhq/tend/examples/internal/generated"
	"github.com/tendhq/tend/examples/workspace/dataplane"
)

var update = flag.Bool("update", false, "rewrite docs/diagrams.md from the examples' machines")

// A diagrammed machine: what docs/diagrams.md needs of a statemachine.Machine.
type diagrammed interface {
	Name() string
	Mermaid() string
}

// machines returns every machine of the examples, in the order
// docs/diagrams.md shows them, with the example each belongs to.
func machines(t *testing.T) []struct {
	example string
	m       diagrammed
} {
	t.Helper()
	gw, err := platform.GatewayMachine()
	if err != nil {
		t.Fatal(err)
	}
	dom, err := platform.DomainMachine()
	if err != nil {
		t.Fatal(err)
	}
	ws, err := dataplane.NewMachine()
	if err != nil {
		t.Fatal(err)
	}
	return []struct {
		example string
		m       diagrammed
	}{
		{"gateway", gw},
		{"gateway", dom},
		{"workspace", ws},
	}
}

const diagramsPage = "docs/diagrams.md"

// diagrams renders the generated part of docs/diagrams.md.
func diagrams(t *testing.T) string {
	var b strings.Builder
	b.WriteString("Every State/Phase machine of the examples, drawn from the machine itself by `Machine.Mermaid`. This page is\n")
	b.WriteString("generated: `go generate ./docs` in the examples module rewrites it, and the examples' tests fail when it is\n")
	b.WriteString("stale. A transitional phase lists its steps in order and leaves when its completion holds (\"when …\"); the\n")
	b.WriteString("arrows leaving a resting phase are the machine's rules, labelled with the intents that begin them; a red phase\n")
	b.WriteString("is a point of no return. See [State and Phase machines](statemachine.md) for the vocabulary.\n")
	for _, d := range machines(t) {
		b.WriteString("\n## " + d.m.Name() + "\n\n")
		b.WriteString("From [`examples/" + d.example + "`](../examples/" + d.example + ").\n\n")
		b.WriteString("```mermaid\n" + strings.TrimSuffix(d.m.Mermaid(), "\n") + "\n```\n")
	}
	return b.String()
}

// TestDiagrams checks that every diagram of the documentation is generated
// (it lies between generated markers, which the test owning it keeps
// current) and that docs/diagrams.md holds the examples' machines as they
// are; -update (go generate ./docs) rewrites it.
func TestDiagrams(t *testing.T) {
	generated.Check(t, filepath.Join(root, filepath.FromSlash(diagramsPage)), "go generate ./docs (in the examples module)", *update,
		generated.Section{Name: "machine diagrams", Body: diagrams(t)})
	gw := machines(t)[0].m
	for page, section := range map[string]string{"failures.md": "failure diagram", "requests-timers-drift.md": "requests diagram"} {
		generated.Check(t, filepath.Join(root, "docs", page), "go generate ./docs (in the examples module)", *update,
			generated.Section{Name: section, Body: "```mermaid\n" + gw.Mermaid() + "```\n"})
	}

	n := 0
	for _, p := range pages(t) {
		for _, b := range p.blocks {
			if b.lang != "mermaid" && b.lang != "dot" {
				continue
			}
			n++
			if !b.generated {
				t.Errorf("%s:%d: a %s diagram outside generated markers: generate it from the code it shows", p.path, b.line, b.lang)
			}
		}
	}
	if n < len(machines(t)) {
		t.Errorf("found %d diagrams, fewer than the examples' machines", n)
	}
}
