package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's root, relative to this package's directory.
const root = "../.."

// A page is one markdown file of the documentation.
type page struct {
	path   string // relative to the repository's root, slash-separated
	lines  []string
	blocks []block
}

// A block is one fenced code block of a page.
type block struct {
	line    int    // 1-based line of the block's first content line
	lang    string // the fence's info string
	text    string
	snippet string // Go declarations of a <!-- snippet --> comment just above the block
	snipAt  int    // 1-based line of that comment's first content line
	// generated reports that the block lies between generated markers.
	generated bool
}

// pages reads README.md, every docs/*.md and the READMEs of the examples
// and backends.
func pages(t *testing.T) []*page {
	t.Helper()
	paths := []string{filepath.Join(root, "README.md")}
	for _, pattern := range []string{"docs/*.md", "examples/*/README.md", "backends/*/README.md"} {
		matched, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(pattern)))
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, matched...)
	}
	var ps []*page
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, parse(filepath.ToSlash(rel), string(raw)))
	}
	return ps
}

// parse splits a page into lines and fenced blocks, attaching to each block
// the <!-- snippet --> comment that precedes it (blank lines aside).
func parse(path, text string) *page {
	p := &page{path: path, lines: strings.Split(text, "\n")}
	var (
		cur       *block
		body      []string
		snip      []string
		snipAt    int
		inSnip    bool
		haveSnip  bool
		generated bool
	)
	for i, l := range p.lines {
		trimmed := strings.TrimSpace(l)
		if cur != nil {
			if strings.HasPrefix(trimmed, "```") && strings.TrimLeft(trimmed, "`") == "" {
				cur.text = strings.Join(body, "\n")
				if len(body) > 0 {
					cur.text += "\n"
				}
				p.blocks = append(p.blocks, *cur)
				cur, body = nil, nil
				continue
			}
			body = append(body, l)
			continue
		}
		if inSnip {
			before, _, closed := strings.Cut(l, "-->")
			snip = append(snip, before)
			if closed {
				inSnip, haveSnip = false, true
			}
			continue
		}
		upper := strings.ToUpper(trimmed)
		switch {
		case strings.HasPrefix(upper, "<!-- BEGIN GENERATED"):
			generated = true
		case strings.HasPrefix(upper, "<!-- END GENERATED"):
			generated = false
		case strings.HasPrefix(trimmed, "<!-- snippet"):
			rest := strings.TrimPrefix(strings.TrimPrefix(trimmed, "<!-- snippet"), ":")
			before, _, closed := strings.Cut(rest, "-->")
			snip, snipAt, haveSnip, inSnip = []string{before}, i+1, false, !closed
			if closed {
				haveSnip = true
			}
			continue
		case strings.HasPrefix(trimmed, "```"):
			cur = &block{line: i + 2, lang: strings.TrimSpace(strings.TrimLeft(trimmed, "`")), generated: generated}
			if haveSnip {
				cur.snippet, cur.snipAt = strings.Join(snip, "\n"), snipAt
			}
			haveSnip = false
			continue
		}
		if trimmed != "" {
			haveSnip = false
		}
	}
	return p
}

// prose returns the page's lines outside code blocks, with inline code
// removed, indexed by 1-based line number (code lines are empty).
func (p *page) prose() []string {
	out := make([]string, len(p.lines)+1)
	inCode := false
	for i, l := range p.lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inCode = !inCode
			continue
		}
		if !inCode {
			out[i+1] = inlineCode.ReplaceAllString(l, "")
		}
	}
	return out
}

var (
	inlineCode = regexp.MustCompile("`[^`]*`")
	// link matches [text](target) and ![alt](target), with an optional title.
	link = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// refLink matches a reference definition: [label]: target.
	refLink = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s+(\S+)`)
	heading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	scheme  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// anchors returns the fragment ids GitHub gives the page's headings.
func (p *page) anchors() map[string]bool {
	ids := map[string]bool{}
	seen := map[string]int{}
	inCode := false
	for _, l := range p.lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inCode = !inCode
			continue
		}
		m := heading.FindStringSubmatch(l)
		if inCode || m == nil {
			continue
		}
		id := slug(m[1])
		if n := seen[id]; n > 0 {
			ids[id+"-"+itoa(n)] = true
		} else {
			ids[id] = true
		}
		seen[id]++
	}
	return ids
}

// slug is GitHub's heading id: lower case, spaces become hyphens, and
// everything but letters, digits, hyphens and underscores is dropped.
func slug(h string) string {
	h = link.ReplaceAllStringFunc(h, func(s string) string { // [text](url) keeps its text
		return s[1:strings.Index(s, "]")]
	})
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}

// TestLinks checks that every relative link of every page resolves to a file
// or directory of the repository and, with a #fragment, to a heading of the
// markdown page it names.
func TestLinks(t *testing.T) {
	ps := pages(t)
	byPath := map[string]*page{}
	for _, p := range ps {
		byPath[p.path] = p
	}
	anchorsOf := func(path string) (map[string]bool, bool) {
		p, ok := byPath[path]
		if !ok {
			raw, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path)))
			if err != nil {
				return nil, false
			}
			p = parse(path, string(raw))
			byPath[path] = p
		}
		return p.anchors(), true
	}
	checked := 0
	for _, p := range ps {
		for n, l := range p.prose() {
			var targets []string
			for _, m := range link.FindAllStringSubmatch(l, -1) {
				targets = append(targets, m[1])
			}
			if m := refLink.FindStringSubmatch(l); m != nil {
				targets = append(targets, m[1])
			}
			for _, target := range targets {
				if scheme.MatchString(target) {
					continue // absolute URLs are not checked offline
				}
				checked++
				file, frag, _ := strings.Cut(target, "#")
				dest := p.path
				if file != "" {
					dest = filepath.ToSlash(filepath.Join(filepath.Dir(p.path), file))
					if strings.HasPrefix(dest, "../") {
						t.Errorf("%s:%d: link %q leaves the repository", p.path, n, target)
						continue
					}
					if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest))); err != nil {
						t.Errorf("%s:%d: link %q: %s does not exist", p.path, n, target, dest)
						continue
					}
				}
				if frag == "" {
					continue
				}
				if !strings.HasSuffix(dest, ".md") {
					t.Errorf("%s:%d: link %q: a fragment needs a markdown page", p.path, n, target)
					continue
				}
				ids, ok := anchorsOf(dest)
				if !ok || !ids[frag] {
					t.Errorf("%s:%d: link %q: %s has no heading with id %q", p.path, n, target, dest, frag)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("found no relative links: the link parser is broken")
	}
}

// TestIndexListsEveryPage checks that docs/index.md links every other page
// of docs/.
func TestIndexListsEveryPage(t *testing.T) {
	linked := map[string]bool{}
	var all []string
	for _, p := range pages(t) {
		if p.path == "docs/index.md" {
			for _, l := range p.prose() {
				for _, m := range link.FindAllStringSubmatch(l, -1) {
					file, _, _ := strings.Cut(m[1], "#")
					linked[filepath.ToSlash(filepath.Join("docs", file))] = true
				}
			}
		} else if strings.HasPrefix(p.path, "docs/") {
			all = append(all, p.path)
		}
	}
	sort.Strings(all)
	for _, p := range all {
		if !linked[p] {
			t.Errorf("docs/index.md does not link %s", p)
		}
	}
}

// TestParse checks the block and link parsers on a page that uses every
// convention, so a broken parser cannot make the other tests pass vacuously.
func TestParse(t *testing.T) {
	p := parse("docs/x.md", strings.Join([]string{
		"# Title: one `two`",          // 1
		"<!-- snippet",                // 2
		"var ctx context.Context",     // 3
		"-->",                         // 4
		"",                            // 5
		"```go",                       // 6
		"x := 1",                      // 7
		"```",                         // 8
		"text",                        // 9
		"```output",                   // 10
		"```",                         // 11
		"<!-- BEGIN generated: x -->", // 12
		"```mermaid",                  // 13
		"a",                           // 14
		"```",                         // 15
		"<!-- END generated -->",      // 16
		"## Title: one `two`",         // 17
		"See [x](#title-one-two-1) `[no](y.md)`.", // 18
	}, "\n"))
	if len(p.blocks) != 3 {
		t.Fatalf("got %d blocks, want 3", len(p.blocks))
	}
	if b := p.blocks[0]; b.lang != "go" || b.line != 7 || b.text != "x := 1\n" ||
		strings.TrimSpace(b.snippet) != "var ctx context.Context" || b.snipAt != 2 || b.generated {
		t.Errorf("go block = %+v", b)
	}
	if b := p.blocks[1]; b.lang != "output" || b.text != "" || b.snippet != "" {
		t.Errorf("output block = %+v", b)
	}
	if b := p.blocks[2]; b.lang != "mermaid" || !b.generated {
		t.Errorf("mermaid block = %+v", b)
	}
	ids := p.anchors()
	if !ids["title-one-two"] || !ids["title-one-two-1"] || len(ids) != 2 {
		t.Errorf("anchors = %v", ids)
	}
	if got := link.FindAllStringSubmatch(p.prose()[18], -1); len(got) != 1 || got[0][1] != "#title-one-two-1" {
		t.Errorf("links of line 18 = %v", got)
	}
}
