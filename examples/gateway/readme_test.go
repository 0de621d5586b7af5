package main

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/tendhq/tend/examples/gateway/platform"
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
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	want := readme
	for _, d := range []struct{ name, mermaid string }{
		{gm.Name(), gm.Mermaid()},
		{dm.Name(), dm.Mermaid()},
	} {
		begin := "<!-- BEGIN GENERATED " + d.name + " diagram: go generate ./examples/gateway -->\n"
		end := "<!-- END GENERATED " + d.name + " diagram -->"
		i, j := strings.Index(want, begin), strings.Index(want, end)
		if i < 0 || j < i {
			t.Fatalf("README.md lacks the markers of the %s diagram", d.name)
		}
		want = want[:i+len(begin)] + "```mermaid\n" + strings.TrimSuffix(d.mermaid, "\n") + "\n```\n" + want[j:]
	}
	if want == readme {
		return
	}
	if *update {
		if err := os.WriteFile("README.md", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Error("README.md's diagrams are stale: run go generate ./examples/gateway")
}
