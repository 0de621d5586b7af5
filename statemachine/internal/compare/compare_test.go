package compare

import (
	"fmt"
	"strings"
	"testing"
)

func TestVersions(t *testing.T) {
	old := Version{
		Number: 1,
		States: []string{"Up", "Down", "Gone"},
		Phases: []Phase{
			{Name: "Idle", Type: "resting"},
			{Name: "Starting", Type: "transitional", Steps: []string{"pull", "run"}},
			{Name: "Stuck", Type: "resting"},
			{Name: "Old", Type: "resting"},
		},
		Requests: []string{"restart"},
		Timers:   []string{"renew"},
		Settled:  []string{Pair("Up", "Idle")},
		Rules:    []string{Rule("Up", "Idle", "Starting")},
	}
	cur := Version{
		Number:        1,
		States:        []string{"Up", "Down", "Paused"},
		Phases:        []Phase{{Name: "Idle", Type: "resting"}, {Name: "Launching", Type: "transitional"}, {Name: "Stuck", Type: "fault"}},
		RetiredStates: []Rename{{From: "Gone", To: "Down"}},
		RenamedPhases: []Rename{{From: "Starting", To: "Launching"}},
		Timers:        []string{"renew", "expire"},
		Settled:       []string{Pair("Up", "Idle")},
		Rules:         []string{Rule("Up", "Idle", "Launching")},
	}
	var got strings.Builder
	for _, c := range Versions(old, cur) {
		fmt.Fprintf(&got, "%s: %s\n", c.Subject, c.Change)
	}
	want := `state Gone: retired, carried to Down
state Paused: added
phase Starting: renamed to Launching
phase Old: removed
steps of Launching: pull, run → none
phase Stuck: resting → fault
request restart: removed
timer expire: added
rule (Up, Idle) → Starting: removed
rule (Up, Idle) → Launching: added
`
	if got.String() != want {
		t.Fatalf("changes:\n%s\nwant:\n%s", got.String(), want)
	}
	if c := Versions(cur, cur); len(c) != 0 {
		t.Fatalf("a version differs from itself: %v", c)
	}
}
