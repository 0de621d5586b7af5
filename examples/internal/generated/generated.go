// Package generated keeps the generated sections of the examples' Markdown
// pages current.
//
// A generated section lies between two markers:
//
//	<!-- BEGIN generated: NAME; run COMMAND, do not edit -->
//	…
//	<!-- END generated: NAME -->
//
// [Check] renders each section from code and fails the test when the page
// differs; run with -update (what the examples' go:generate directives do),
// it rewrites the page instead. The documentation tests treat anything between
// such markers as generated, so a diagram outside them fails CI.
package generated

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// Section is one generated part of a page.
type Section struct {
	// Name identifies the section on its page.
	Name string
	// Body is the section's content as the code renders it now.
	Body string
}

// Check compares the sections of the page at path with what the code renders.
// regenerate is the command that rewrites the page, named in the markers and
// in the failure. With update set, Check rewrites the page instead of failing.
func Check(t testing.TB, path, regenerate string, update bool, sections ...Section) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(raw)
	want, err := Render(page, regenerate, sections...)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if want == page {
		return
	}
	if !update {
		t.Fatalf("%s is stale: run %s", path, regenerate)
	}
	if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Render returns page with each section's body between its markers. It fails
// when a section's markers are missing or out of order.
func Render(page, regenerate string, sections ...Section) (string, error) {
	for _, s := range sections {
		beginPrefix := "<!-- BEGIN generated: " + s.Name + ";"
		end := "<!-- END generated: " + s.Name + " -->"
		i := strings.Index(page, beginPrefix)
		j := strings.Index(page, end)
		if i < 0 || j < i {
			return "", fmt.Errorf("the markers of section %q are missing or out of order", s.Name)
		}
		begin := fmt.Sprintf("%s run %s, do not edit -->\n", beginPrefix, regenerate)
		page = page[:i] + begin + strings.TrimSuffix(s.Body, "\n") + "\n" + page[j:]
	}
	return page, nil
}
