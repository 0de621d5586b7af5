package docs_test

import (
	"go/scanner"
	"go/token"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The bounds of the getting-started guide's program: what a newcomer reads
// before a controller runs.
const (
	guidePage     = "docs/getting-started.md"
	guideMaxLines = 57 // non-blank lines that are not comments
	guideMaxNames = 15 // distinct exported names of tend packages
)

var (
	// importPath matches a quoted import of a tend package, with its alias.
	importPath = regexp.MustCompile(`(?m)^\s*(?:import\s+)?(\w+\s+)?"(github\.com/tendhq/tend(?:/[\w/]+)?)"`)
	// qualified matches pkg.Name with an exported Name.
	qualified = regexp.MustCompile(`\b([a-z]\w*)\.([A-Z]\w*)`)
)

// guideFigures measures the code a reader of the page p has to write: its
// go blocks that are not tests. It returns their non-blank, non-comment
// lines, the distinct exported names of the tend packages they import
// (pkg.Name), and each string literal written more than once.
func guideFigures(t *testing.T, p *page) (lines int, names, repeated []string) {
	t.Helper()
	var blocks []string
	for _, b := range p.blocks {
		if b.lang == "go" && !testFunc.MatchString(b.text) && !strings.Contains(b.text, "*testing.T") {
			blocks = append(blocks, b.text)
		}
	}
	if len(blocks) == 0 {
		t.Fatalf("%s has no go block", p.path)
	}
	tend := map[string]bool{}
	for _, text := range blocks {
		for _, m := range importPath.FindAllStringSubmatch(text, -1) {
			name := strings.TrimSpace(m[1])
			if name == "" {
				name = m[2][strings.LastIndex(m[2], "/")+1:]
			}
			tend[name] = true
		}
	}
	seen := map[string]int{}
	for _, text := range blocks {
		for l := range strings.SplitSeq(text, "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "//") {
				lines++
			}
		}
		for _, m := range qualified.FindAllStringSubmatch(text, -1) {
			if tend[m[1]] && !slices.Contains(names, m[0]) {
				names = append(names, m[0])
			}
		}
		var s scanner.Scanner
		fset := token.NewFileSet()
		s.Init(fset.AddFile("", -1, len(text)), []byte(text), nil, 0)
		for {
			_, tok, lit := s.Scan()
			if tok == token.EOF {
				break
			}
			if tok == token.STRING {
				if v, err := strconv.Unquote(lit); err == nil {
					lit = v
				}
				if seen[lit]++; seen[lit] == 2 {
					repeated = append(repeated, strconv.Quote(lit))
				}
			}
		}
	}
	slices.Sort(names)
	return lines, names, repeated
}

// TestGuideStaysSmall keeps the getting-started program within its bounds,
// so that what it takes to write a first controller cannot grow back
// unnoticed: lines, names to learn, and no string written twice (a name
// written twice is a name the compiler cannot check).
func TestGuideStaysSmall(t *testing.T) {
	var guide *page
	for _, p := range pages(t) {
		if p.path == guidePage {
			guide = p
		}
	}
	if guide == nil {
		t.Fatalf("no page %s", guidePage)
	}
	lines, names, repeated := guideFigures(t, guide)
	t.Logf("%s: %d lines, %d names: %s", guidePage, lines, len(names), strings.Join(names, " "))
	if lines > guideMaxLines {
		t.Errorf("%s: the program has %d lines of code, more than %d", guidePage, lines, guideMaxLines)
	}
	if len(names) > guideMaxNames {
		t.Errorf("%s: the program uses %d names of tend packages, more than %d: %s", guidePage, len(names), guideMaxNames,
			strings.Join(names, " "))
	}
	if len(repeated) > 0 {
		t.Errorf("%s: string literals written more than once: %s", guidePage, strings.Join(repeated, " "))
	}
}
