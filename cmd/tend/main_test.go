package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata with the command's output")

// binary is the tend command, built once for every test.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "tend-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "tend")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building tend: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		// client-go keeps a connection per API server for the life of
		// the process.
		if err := goleak.Find(goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop")); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// result is what one run of the command did.
type result struct {
	stdout, stderr string
	code           int
}

// tend runs the command with args, with stdin not a terminal.
func tend(t testing.TB, args ...string) result {
	t.Helper()
	return tendEnv(t, nil, args...)
}

// tendEnv runs the command with args and the environment variables env.
func tendEnv(t testing.TB, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(append(os.Environ(), "TEND_STORE=", "TEND_ACTOR=tester"), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return result{out.String(), errOut.String(), code}
}

// transcript runs each command line against the store and returns what a
// person would have seen, normalised (see normalise).
func transcript(t testing.TB, storeSpec string, lines ...[]string) string {
	t.Helper()
	return transcriptWith(t, nil, []string{"--store", storeSpec}, storeSpec, lines...)
}

// transcriptWith is transcript connected with the flags connect and the
// environment variables env; where stands for where it connects, replaced
// by STORE.
func transcriptWith(t testing.TB, env, connect []string, where string, lines ...[]string) string {
	t.Helper()
	var b strings.Builder
	for _, args := range lines {
		r := tendEnv(t, env, append(slices.Clone(connect), args...)...)
		fmt.Fprintf(&b, "$ tend %s\n%s", shellWords(args), r.stdout)
		if r.stderr != "" {
			fmt.Fprintf(&b, "[stderr]\n%s", r.stderr)
		}
		fmt.Fprintf(&b, "[exit %d]\n\n", r.code)
	}
	return normalise(strings.ReplaceAll(b.String(), where, "STORE"))
}

// shellWords writes args as a shell would need them typed.
func shellWords(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "" || strings.ContainsAny(a, " \t'\"$\\") {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}

var normalisers = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`reconcile=\S+`), "reconcile=ID"},
	// times and ages
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`), "TIME"},
	{regexp.MustCompile(`\b\d+(d\d+h|h\d+m|m\d+s|[smhd])\b`), "AGE"},
	// revisions, ids and uids, which differ between stores and runs
	{regexp.MustCompile(`took=\S+`), "took=DURATION"},
	{regexp.MustCompile(`("revision": |revision: |Revision:\s+)\d+`), "${1}N"},
	{regexp.MustCompile(`("(uid|id|UID)": ")[^"]+"`), `${1}ID"`},
	{regexp.MustCompile(`(?m)^(\s*uid: )\S+$`), "${1}ID"},
	{regexp.MustCompile(`(UID:\s+|ID:\s+|command=|command |Operation:\s+)[A-Za-z0-9-]{8,}`), "${1}ID"},
	{regexp.MustCompile(`\b[A-Z2-7]{26}\b`), "ID"},
	{regexp.MustCompile(`\b\d+-[a-z0-9]{8,}\b`), "ID"}, // commands' ids
	// columns aligned around values of other lengths
	{regexp.MustCompile(`(\S) {2,}`), "$1  "},
	{regexp.MustCompile(`(?m) +$`), ""},
}

// normalise replaces what differs from run to run (times, ages, revisions,
// ids) with placeholders, so that one golden file fits every store.
func normalise(s string) string {
	for _, n := range normalisers {
		s = n.re.ReplaceAllString(s, n.with)
	}
	return s
}

// golden compares got with testdata/NAME.golden, or rewrites it with -update.
func golden(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the command's output (run go test -update to accept it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
