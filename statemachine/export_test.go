package statemachine_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tendhq/tend/statemachine"
)

var update = flag.Bool("update", false, "rewrite golden files and the docs diagram")

// exported is the output of both exports of one machine.
type exported struct{ mermaid, dot string }

func exports(t *testing.T) map[string]exported {
	t.Helper()
	g := mustNew(t, gateway())
	rd := mustNew(t, runtimeDomain())
	ws := mustNew(t, workspace())
	return map[string]exported{
		"gateway":       {g.Mermaid(), g.DOT()},
		"runtimedomain": {rd.Mermaid(), rd.DOT()},
		"workspace":     {ws.Mermaid(), ws.DOT()},
	}
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s is out of date (run go test -update):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestExportGolden(t *testing.T) {
	for name, e := range exports(t) {
		golden(t, name+".mmd", e.mermaid)
		golden(t, name+".dot", e.dot)
	}
}

// Exports depend only on the definition: building again gives the same bytes.
func TestExportDeterministic(t *testing.T) {
	first := exports(t)
	for range 20 {
		for name, e := range exports(t) {
			if e != first[name] {
				t.Fatalf("%s: export changed between builds", name)
			}
		}
	}
}

func TestExportQuoting(t *testing.T) {
	m := mustNew(t, statemachine.Definition[string, string]{
		Name: `say "hi"`, States: []string{"on"}, Initial: "not ready",
		Phases:  []statemachine.PhaseSpec[string]{{Phase: "not ready"}},
		Settled: []statemachine.Settle[string, string]{{State: "on", Phase: "not ready"}},
	})
	if got := m.Mermaid(); !strings.Contains(got, `state "not ready" as phase0`) || !strings.Contains(got, "[*] --> phase0") {
		t.Errorf("Mermaid does not alias a phase name with a space:\n%s", got)
	}
	if got := m.DOT(); !strings.Contains(got, `digraph "say \"hi\""`) {
		t.Errorf("DOT does not escape quotes:\n%s", got)
	}
}

const (
	docsPage    = "../docs/statemachine.md"
	beginMarker = "<!-- BEGIN generated: gateway diagram -->\n"
	endMarker   = "<!-- END generated: gateway diagram -->\n"
)

// TestDocsDiagram keeps the concept page's diagram generated from the gateway
// machine: it fails when the page is out of date, and -update (or go generate)
// rewrites the block between the markers.
func TestDocsDiagram(t *testing.T) {
	page, err := os.ReadFile(docsPage)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok1 := strings.Cut(string(page), beginMarker)
	_, after, ok2 := strings.Cut(rest, endMarker)
	if !ok1 || !ok2 {
		t.Fatalf("%s lacks the generated-diagram markers", docsPage)
	}
	block := "```mermaid\n" + mustNew(t, gateway()).Mermaid() + "```\n"
	want := before + beginMarker + block + endMarker + after
	if want == string(page) {
		return
	}
	if !*update {
		t.Fatalf("%s: diagram out of date; run go generate ./statemachine", docsPage)
	}
	if err := os.WriteFile(docsPage, []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
}
