package main

import (
	"flag"
	"testing"

	"github.com/tendhq/tend/examples/gateway/platform"
	"github.com/tendhq/tend/examples/internal/generated"
)

var update = flag.Bool("update", false, "rewrite the generated diagrams in README.md")

// TestREADMEDiagrams fails when the Mermaid diagrams in README.md are not the
// ones the machines generate; go generate (or -update) rewrites them.
func TestREADMEDiagrams(t *testing.T) {
	gm, err := platform.GatewayMachine()
	if err != nil {
		t.Fatal(err)
	}
	dm, err := platform.DomainMachine()
	if err != nil {
		t.Fatal(err)
	}
	generated.Check(t, "README.md", "go generate ./examples/gateway", *update,
		generated.Section{Name: gm.Name() + " diagram", Body: "```mermaid\n" + gm.Mermaid() + "```"},
		generated.Section{Name: dm.Name() + " diagram", Body: "```mermaid\n" + dm.Mermaid() + "```"},
	)
}
