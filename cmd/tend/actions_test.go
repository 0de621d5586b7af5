package main

import (
	"errors"
	"strings"
	"testing"
)

// actionCommands act on the documents a controller run left, each first
// without confirmation, and check what the actions left.
var actionCommands = [][]string{
	{"pause", "Widget", "w-ready", "--reason", "INC-1: investigating"},
	{"pause", "Widget", "w-ready", "--reason", "INC-1: investigating", "--yes"},
	{"get", "Widget", "w-ready"},
	{"stuck", "Widget"},
	{"resume", "Widget", "w-ready", "--yes"},
	{"resume", "Widget", "w-ready", "--yes"},
	{"retry", "Widget", "w-failing"},
	{"retry", "Widget", "w-failing", "--yes"},
	{"retry", "Widget", "w-ready", "--yes"},
	{"skip", "Widget", "w-fault", "nope", "--yes"},
	{"skip", "Widget", "w-fault", "configure", "--yes"},
	{"move", "Widget", "w-fault", "Creating", "--yes"},
	{"request", "Widget", "w-ready", "nope", "--yes"},
	{"request", "Widget", "w-ready", "rebuild", "-y"},
	{"remove-finalizer", "Widget", "w-down", "tend.dev/machine"},
	{"remove-finalizer", "Widget", "w-down", "tend.dev/machine", "--yes"},
	{"retry", "Widget", "nope", "--yes"},
	{"retry", "Gadget", "w-ready", "--yes"},
	{"skip", "Widget", "w-fault"},
	{"describe", "Widget", "w-fault"},
	{"describe", "Widget", "w-ready"},
	{"get", "Widget", "w-down", "-o", "json"},
}

func TestActionsMemory(t *testing.T) {
	_, path := memorySnapshot(t)
	spec := "memory:" + path
	golden(t, "actions", transcript(t, spec, actionCommands...))
	r := tend(t, "--store", spec, "retry", "Widget", "w-failing", "--yes", "--wait")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--wait needs a store the controllers share") {
		t.Errorf("retry --wait on a snapshot: exit %d, %q", r.code, r.stderr)
	}
}

func TestConfirm(t *testing.T) {
	for _, c := range []struct {
		yes, interactive bool
		answer           string
		want             error
	}{
		{yes: true, want: nil},
		{yes: true, interactive: true, want: nil},
		{interactive: true, answer: "y\n", want: nil},
		{interactive: true, answer: " YES \n", want: nil},
		{interactive: true, answer: "n\n", want: errNotConfirmed},
		{interactive: true, answer: "\n", want: errNotConfirmed},
		{interactive: true, answer: "", want: errNotConfirmed},
		{answer: "y\n", want: errNotConfirmed}, // not a terminal: only --yes counts
	} {
		var prompt strings.Builder
		a := &action{options: &options{yes: c.yes, interactive: c.interactive, in: strings.NewReader(c.answer), errOut: &prompt}, verb: "retry"}
		err := a.confirm("Retry Widget w-1")
		if !errors.Is(err, c.want) || (err == nil) != (c.want == nil) {
			t.Errorf("yes=%v interactive=%v answer %q: %v, want %v", c.yes, c.interactive, c.answer, err, c.want)
		}
		if asked := prompt.String() != ""; asked != (c.interactive && !c.yes) {
			t.Errorf("yes=%v interactive=%v: prompt %q", c.yes, c.interactive, prompt.String())
		}
	}
}
