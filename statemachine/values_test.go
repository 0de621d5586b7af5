package statemachine_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/tendhq/tend/statemachine"
)

// TestStatusesStayValues walks random lives of a workspace through every
// function that returns a new status (Request, Due, Observe, Decide and
// Apply, ApplyCommands) and keeps every status each one was given or
// returned. A status shares the slices and pointers a change leaves alone
// with the one it came from, so every later step of the walk must leave
// every status kept exactly as it was when it was made.
func TestStatusesStayValues(t *testing.T) {
	m := workspaceWithRestart(t)
	states := m.States()
	outcomes := []statemachine.Outcome{statemachine.Done, statemachine.Progressed, statemachine.Pending,
		statemachine.Failed, statemachine.FailedTerminal}
	conditions := []string{"volume_ready", "restore_marker_matches", "container_ready", "archive_ready"}
	rapid.Check(t, func(t *rapid.T) {
		type kept struct {
			what string
			st   statemachine.Status[string, string]
			json string
		}
		var all []kept
		keep := func(what string, st statemachine.Status[string, string]) {
			b, err := json.Marshal(st)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, kept{what, st, string(b)})
		}
		now := t0
		st := m.NewStatus()
		var tokens []string
		for i := range rapid.IntRange(1, 40).Draw(t, "moves") {
			now = now.Add(time.Duration(rapid.IntRange(0, 3600).Draw(t, "elapse")) * time.Second)
			intent := rapid.SampledFrom(states).Draw(t, "intent")
			if rapid.IntRange(0, 3).Draw(t, "request") == 0 {
				tokens = append(tokens, fmt.Sprintf("t%d", i))
			}
			keep("before request", st)
			st = st.Request("restart", tokens...)
			keep("after request", st)
			var due time.Time
			if rapid.Bool().Draw(t, "due") {
				due = t0.Add(time.Duration(rapid.IntRange(0, 7200).Draw(t, "at")) * time.Second)
			}
			st = st.Due("nightly", due)
			keep("after due", st)
			if rapid.IntRange(0, 5).Draw(t, "command") == 0 {
				st.Commands = append(st.Commands, statemachine.Command{ID: fmt.Sprintf("c%d", i),
					Verb:    rapid.SampledFrom([]statemachine.Verb{statemachine.VerbRetry, statemachine.VerbSkip, statemachine.VerbRequest}).Draw(t, "verb"),
					Request: "restart"})
				keep("before commands", st)
				st, _ = m.ApplyCommands(intent, st, now)
				keep("after commands", st)
			}
			var obs []statemachine.Observation
			for _, c := range conditions {
				if rapid.Bool().Draw(t, "observe "+c) {
					obs = append(obs, statemachine.Observation{Name: c, Status: rapid.Bool().Draw(t, c), Reason: "seen"})
				}
			}
			st = st.Observe(now, obs...)
			keep("after observe", st)
			d, err := m.Decide(intent, st, now)
			if err != nil {
				if errors.Is(err, statemachine.ErrUnknownState) {
					continue
				}
				t.Fatalf("decide: %v", err)
			}
			r := statemachine.Report{Now: now, OperationID: fmt.Sprintf("op-%d", i), RetryAfter: time.Minute}
			if d.Action == statemachine.Run {
				r.Outcome = rapid.SampledFrom(outcomes).Draw(t, "outcome")
				r.Err = errors.New("boom")
			}
			next, err := m.Apply(st, d, r)
			if err != nil {
				t.Fatalf("apply %+v: %v", d, err)
			}
			st = next
			keep("after "+d.Action.String(), st)
		}
		for i, k := range all {
			b, _ := json.Marshal(k.st)
			if string(b) != k.json {
				t.Fatalf("status %d (%s) changed after it was made:\nthen %s\nnow  %s", i, k.what, k.json, b)
			}
		}
	})
}
