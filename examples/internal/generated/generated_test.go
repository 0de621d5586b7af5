package generated

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRender(t *testing.T) {
	page := "# Title\n\n<!-- BEGIN generated: a; old -->\nold body\n<!-- END generated: a -->\ntext\n"
	got, err := Render(page, "go generate .", Section{Name: "a", Body: "new body\n"})
	if err != nil {
		t.Fatal(err)
	}
	want := "# Title\n\n<!-- BEGIN generated: a; run go generate ., do not edit -->\nnew body\n<!-- END generated: a -->\ntext\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	again, err := Render(got, "go generate .", Section{Name: "a", Body: "new body"})
	if err != nil || again != got {
		t.Fatalf("rendering twice changed the page: %q, %v", again, err)
	}
	for _, bad := range []string{
		"no markers",
		"<!-- END generated: a -->\n<!-- BEGIN generated: a; x -->\n",
		"<!-- BEGIN generated: b; x -->\n<!-- END generated: b -->\n",
	} {
		if _, err := Render(bad, "x", Section{Name: "a"}); err == nil {
			t.Errorf("Render(%q) did not fail", bad)
		}
	}
}

// TestCheck shows a stale page failing and -update rewriting it.
func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "page.md")
	stale := "<!-- BEGIN generated: a; x -->\nold\n<!-- END generated: a -->\n"
	if err := os.WriteFile(path, []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{TB: t}
	func() {
		defer func() { _ = recover() }()
		Check(rec, path, "cmd", false, Section{Name: "a", Body: "new"})
	}()
	if !rec.failed {
		t.Fatal("Check passed a stale page")
	}
	Check(t, path, "cmd", true, Section{Name: "a", Body: "new"})
	Check(t, path, "cmd", false, Section{Name: "a", Body: "new"})
}

// recorder records a fatal failure instead of ending the test.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Fatalf(string, ...any) { r.failed = true; panic("fatal") }
func (r *recorder) Helper()               {}
