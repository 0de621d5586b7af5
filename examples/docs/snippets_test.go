package docs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// imports are the packages a fragment may use without importing them, by
// the name it refers to them with. Whole files import what they use.
var imports = map[string]string{
	"context":      "context",
	"errors":       "errors",
	"fmt":          "fmt",
	"log":          "log",
	"os":           "os",
	"slices":       "slices",
	"strings":      "strings",
	"sync":         "sync",
	"testing":      "testing",
	"time":         "time",
	"zap":          "go.uber.org/zap",
	"prometheus":   "github.com/prometheus/client_golang/prometheus",
	"rapid":        "pgregory.net/rapid",
	"clientv3":     "go.etcd.io/etcd/client/v3",
	"rest":         "k8s.io/client-go/rest",
	"cascade":      "github.com/tendhq/tend/cascade",
	"controller":   "github.com/tendhq/tend/controller",
	"driver":       "github.com/tendhq/tend/driver",
	"manager":      "github.com/tendhq/tend/manager",
	"registry":     "github.com/tendhq/tend/registry",
	"oncall":       "github.com/tendhq/tend/oncall",
	"drivertest":   "github.com/tendhq/tend/driver/drivertest",
	"expectations": "github.com/tendhq/tend/expectations",
	"finalizer":    "github.com/tendhq/tend/finalizer",
	"history":      "github.com/tendhq/tend/history",
	"redact":       "github.com/tendhq/tend/redact",
	"statemachine": "github.com/tendhq/tend/statemachine",
	"smtest":       "github.com/tendhq/tend/statemachine/smtest",
	"store":        "github.com/tendhq/tend/store",
	"storetest":    "github.com/tendhq/tend/store/storetest",
	"workqueue":    "github.com/tendhq/tend/workqueue",
	"queueprom":    "github.com/tendhq/tend/workqueue/queueprom",
	"historyprom":  "github.com/tendhq/tend/history/historyprom",
	"memory":       "github.com/tendhq/tend/backends/memory",
	"etcd":         "github.com/tendhq/tend/backends/etcd",
	"postgres":     "github.com/tendhq/tend/backends/postgres",
	"kube":         "github.com/tendhq/tend/backends/kube",
}

// A program is a package built from a page's blocks.
type program struct {
	dir    string // directory under the workspace's module
	where  string // page:line of its main block
	main   bool
	output *string // the output block after it, if any
	tests  bool    // a test file follows it
}

var testFunc = regexp.MustCompile(`(?m)^func Test\w*\(`)

// TestSnippets compiles every go block of every page in a temporary
// workspace that uses the repository's modules, runs each program followed
// by an output block and compares what it prints, and runs the test files
// shown after programs.
func TestSnippets(t *testing.T) {
	work := t.TempDir()
	mod := filepath.Join(work, "snippets")
	writeWorkspace(t, work, mod)

	var progs []*program
	for _, p := range pages(t) {
		if !snippetPage(p.path) {
			continue
		}
		var last *program // the page's last program, for the blocks that follow it
		for i, b := range p.blocks {
			if b.lang != "go" {
				continue
			}
			where := fmt.Sprintf("%s:%d", p.path, b.line)
			dir := filepath.Join(mod, strings.NewReplacer("/", "_", ".", "_", "-", "_").Replace(p.path)+fmt.Sprintf("_%d", b.line))
			name, whole := packageOf(b.text)
			var src, file string
			switch {
			case whole && name == "main" && testFunc.MatchString(b.text):
				if last == nil || !last.main {
					t.Errorf("%s: a test file in package main must follow a program on the same page", where)
					continue
				}
				last.tests = true
				dir, file, src = last.dir, "snippet_test.go", lineDirective(p.path, b.line)+b.text
			case whole && testFunc.MatchString(b.text):
				file, src = "snippet_test.go", lineDirective(p.path, b.line)+b.text
				progs = append(progs, &program{dir: dir, where: where, tests: true})
			case whole:
				file, src = "snippet.go", lineDirective(p.path, b.line)+b.text
				last = &program{dir: dir, where: where, main: name == "main"}
				if next := nextBlock(p.blocks, i); next != nil && next.lang == "output" {
					if !last.main {
						t.Errorf("%s: only a package main block can be followed by an output block", where)
					}
					last.output = &next.text
				}
				progs = append(progs, last)
			default:
				var err error
				file = "snippet.go"
				if src, err = fragment(p.path, b); err != nil {
					t.Errorf("%s: %v", where, err)
					continue
				}
				progs = append(progs, &program{dir: dir, where: where})
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, file), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(progs) == 0 {
		t.Fatal("found no go blocks: the parser is broken")
	}
	if t.Failed() {
		return
	}

	if out, err := goCmd(t, work, mod, "build", "./..."); err != nil {
		t.Fatalf("the documentation's go blocks do not build:\n%s", out)
	}
	bin := filepath.Join(work, "bin") + string(filepath.Separator)
	args := []string{"build", "-o", bin}
	for _, pr := range progs {
		if pr.output != nil {
			args = append(args, "./"+filepath.Base(pr.dir))
		}
	}
	if len(args) > 3 {
		if out, err := goCmd(t, work, mod, args...); err != nil {
			t.Fatalf("building the programs with output blocks:\n%s", out)
		}
	}
	var testDirs []string
	for _, pr := range progs {
		if pr.tests {
			testDirs = append(testDirs, "./"+filepath.Base(pr.dir))
		}
		if pr.output == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, filepath.Join(bin, filepath.Base(pr.dir)))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		cancel()
		if err != nil {
			t.Errorf("%s: the program failed: %v\n%s", pr.where, err, stderr.String())
			continue
		}
		if got, want := stdout.String(), *pr.output; got != want {
			t.Errorf("%s: the program printed\n%s\nbut the output block shows\n%s", pr.where, got, want)
		}
	}
	if len(testDirs) > 0 {
		sort.Strings(testDirs)
		args := append([]string{"test", "-count=1"}, testDirs...)
		if out, err := goCmd(t, work, mod, args...); err != nil {
			t.Errorf("the documentation's tests fail:\n%s", out)
		}
	}
}

// snippetPage reports whether the go blocks of the page at path are checked:
// those of README.md and docs/. The READMEs of examples and backends are
// checked for links and diagrams only, so far.
func snippetPage(path string) bool {
	return path == "README.md" || strings.HasPrefix(path, "docs/")
}

// writeWorkspace writes a go.work for an empty module of snippets that uses
// the repository's modules and keeps the repository's replacements, as its
// own go.work does.
func writeWorkspace(t *testing.T, work, mod string) {
	t.Helper()
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "work", "edit", "-json", filepath.Join(abs, "go.work"))
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("reading go.work: %v", err)
	}
	type modulePath struct{ Path, Version string }
	var ws struct {
		Use     []struct{ DiskPath string }
		Replace []struct{ Old, New modulePath }
	}
	if err := json.Unmarshal(raw, &ws); err != nil {
		t.Fatal(err)
	}
	if len(ws.Use) == 0 {
		t.Fatal("go.work uses no module")
	}
	local := func(p string) string {
		if strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../") || p == "." {
			return filepath.Join(abs, p)
		}
		return p
	}
	w := "go 1.26.0\n\nuse (\n\t./snippets\n"
	for _, u := range ws.Use {
		w += "\t" + local(u.DiskPath) + "\n"
	}
	w += ")\n"
	for _, r := range ws.Replace {
		w += fmt.Sprintf("\nreplace %s %s => %s %s\n", r.Old.Path, r.Old.Version, local(r.New.Path), r.New.Version)
	}
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		filepath.Join(work, "go.work"): w,
		filepath.Join(mod, "go.mod"):   "module snippets\n\ngo 1.26.0\n",
	}
	if sum, err := os.ReadFile(filepath.Join(abs, "go.work.sum")); err == nil {
		files[filepath.Join(work, "go.work.sum")] = string(sum)
	}
	for name, content := range files {
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// goCmd runs the go command in dir under the workspace work.
func goCmd(t *testing.T, work, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(work, "go.work"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// packageOf returns the package clause's name if text is a whole file.
func packageOf(text string) (string, bool) {
	f, err := parser.ParseFile(token.NewFileSet(), "", text, parser.PackageClauseOnly)
	if err != nil {
		return "", false
	}
	return f.Name.Name, true
}

// nextBlock returns the first block after blocks[i] that is not a shell
// block: a program's output block may follow the commands that run it.
func nextBlock(blocks []block, i int) *block {
	for j := i + 1; j < len(blocks); j++ {
		if blocks[j].lang != "sh" {
			return &blocks[j]
		}
	}
	return nil
}

// lineDirective makes the compiler report the lines that follow as lines of
// the page, starting at line.
func lineDirective(page string, line int) string {
	return fmt.Sprintf("//line %s:%d\n", page, line)
}

// fragment makes a compilable file of a block without a package clause: the
// declarations of its snippet comment, then the block itself as top-level
// declarations if it parses as such, or else as the body of a function
// returning an error. It imports the packages of [imports] the file refers
// to and does not declare.
func fragment(page string, b block) (string, error) {
	var body string
	decls := "package snippet\n\n" + lineDirective(page, b.line) + b.text
	if _, err := parser.ParseFile(token.NewFileSet(), "", decls, 0); err == nil {
		body = lineDirective(page, b.line) + b.text
	} else {
		body = "func _() error {\n" + lineDirective(page, b.line) + b.text + unused(b.text) + "\treturn nil\n}\n"
	}
	if strings.TrimSpace(b.snippet) != "" {
		body = lineDirective(page, b.snipAt) + b.snippet + "\n" + body
	}
	src := "package snippet\n\n" + body
	f, err := parser.ParseFile(token.NewFileSet(), "", src, 0)
	if err != nil {
		return "", fmt.Errorf("neither declarations nor statements: %v", err)
	}
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && id.Obj == nil && imports[id.Name] != "" {
				used[id.Name] = true
			}
		}
		return true
	})
	var names []string
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	var imp strings.Builder
	for _, n := range names {
		fmt.Fprintf(&imp, "import %q\n", imports[n])
	}
	return "package snippet\n\n" + imp.String() + "\n" + body, nil
}

// unused returns blank assignments of the variables that the statements of
// a fragment declare at their outermost level, so a fragment may declare a
// variable it does not go on to use.
func unused(stmts string) string {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\nfunc _() {\n"+stmts+"\n}\n", 0)
	if err != nil {
		return ""
	}
	var b strings.Builder
	blank := func(id *ast.Ident) {
		if id.Name != "_" {
			fmt.Fprintf(&b, "\t_ = %s\n", id.Name)
		}
	}
	for _, st := range f.Decls[0].(*ast.FuncDecl).Body.List {
		switch st := st.(type) {
		case *ast.AssignStmt:
			if st.Tok == token.DEFINE {
				for _, e := range st.Lhs {
					if id, ok := e.(*ast.Ident); ok {
						blank(id)
					}
				}
			}
		case *ast.DeclStmt:
			if g, ok := st.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
				for _, sp := range g.Specs {
					for _, id := range sp.(*ast.ValueSpec).Names {
						blank(id)
					}
				}
			}
		}
	}
	return b.String()
}
