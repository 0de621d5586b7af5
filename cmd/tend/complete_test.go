package main

import (
	"fmt"
	"strings"
	"testing"
)

func TestCompletionScripts(t *testing.T) {
	for shell, want := range map[string]string{
		"bash":       "__start_tend",
		"zsh":        "#compdef tend",
		"fish":       "complete -c tend",
		"powershell": "Register-ArgumentCompleter",
	} {
		r := tend(t, "completion", shell)
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("completion %s: exit %d, output without %q:\n%.300s%s", shell, r.code, want, r.stdout, r.stderr)
		}
	}
	if r := tend(t, "completion", "tcsh"); r.code != exitUsage {
		t.Errorf("completion tcsh: exit %d, want %d", r.code, exitUsage)
	}
}

// TestCompletionFromStore checks that kinds and keys are completed from the
// store TEND_STORE names.
func TestCompletionFromStore(t *testing.T) {
	_, path := memorySnapshot(t)
	env := []string{"TEND_STORE=memory:" + path}
	var b strings.Builder
	for _, args := range [][]string{
		{"get", ""},
		{"get", "Widget", ""},
		{"describe", "Widget", "w-f"},
		{"retry", "Widget", "w-fault", ""},
		{"machine", "Widget", "--format", ""},
	} {
		r := tendEnv(t, env, append([]string{"__complete"}, args...)...)
		fmt.Fprintf(&b, "$ tend __complete %s\n%s[exit %d]\n\n", strings.Join(args, " "), r.stdout, r.code)
	}
	golden(t, "completion", b.String())
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {}} {
		r := tend(t, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "Exit codes:") || !strings.Contains(r.stdout, "5  stuck found") {
			t.Errorf("tend %v: exit %d, help without the exit codes:\n%s%s", args, r.code, r.stdout, r.stderr)
		}
	}
}
