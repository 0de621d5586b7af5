package statemachine_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/tendhq/tend/statemachine"
)

// workspaceWithRestart is the workspace machine with a restart request,
// served from RUNNING, moot in STANDBY, refused in ARCHIVED.
func workspaceWithRestart(t testing.TB) *statemachine.Machine[string, string] {
	t.Helper()
	def := workspace()
	def.Requests = []statemachine.RequestRule[string]{{Name: "restart",
		Serve:  []statemachine.Edge[string]{{From: "RUNNING", To: "STOPPING"}},
		Moot:   []string{"STANDBY"},
		Refuse: []string{"ARCHIVED"}, Reason: "an archived workspace does not run"}}
	m, err := statemachine.New(def)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestApplyCommands(t *testing.T) {
	m := workspaceWithRestart(t)
	now := t0.Add(time.Hour)
	failing := statemachine.Status[string, string]{Phase: "ARCHIVING", Target: "ARCHIVED", Since: now.Add(-time.Minute),
		Operation: &statemachine.Operation[string]{ID: "op-1", Phase: "ARCHIVING", From: "STANDBY", Done: []string{"archive"},
			Attempts: 3, LastError: "boom", RetryAt: now.Add(time.Minute)}}
	failed := statemachine.Status[string, string]{Phase: "ERROR", Target: "RUNNING", Since: t0,
		Failure: &statemachine.Failure[string]{Step: "restore", Cause: statemachine.CauseTerminal, Reason: "boom", At: t0,
			Operation: statemachine.Operation[string]{ID: "op-2", Phase: "RESTORING", From: "ARCHIVED", Done: []string{"provision"}, Attempts: 1, LastError: "boom"}}}
	with := func(st statemachine.Status[string, string], cmds ...statemachine.Command) statemachine.Status[string, string] {
		st.Commands = cmds
		return st
	}
	retry := statemachine.Command{ID: "c1", Verb: statemachine.VerbRetry, By: "ann"}
	for _, tc := range []struct {
		name   string
		intent string
		st     statemachine.Status[string, string]
		want   func(t *testing.T, out statemachine.Status[string, string])
		reason string // of the one outcome; "" when applied
	}{
		{name: "retry a step in backoff", intent: "ARCHIVED", st: with(failing, retry),
			want: func(t *testing.T, out statemachine.Status[string, string]) {
				op := out.Operation
				if op.ID != "op-1" || op.Attempts != 0 || !op.RetryAt.IsZero() || op.LastError != "" || !slices.Equal(op.Done, []string{"archive"}) {
					t.Errorf("operation %+v: want op-1 with its attempts forgotten and its checkpoint kept", op)
				}
				if d, _ := m.Decide("ARCHIVED", out, now); d.Action != statemachine.Run || d.Step != "delete_volume" {
					t.Errorf("decision %v %q, want run delete_volume", d.Action, d.Step)
				}
			}},
		{name: "retry from fault resumes", intent: "RUNNING", st: with(failed, retry),
			want: func(t *testing.T, out statemachine.Status[string, string]) {
				op := out.Operation
				if out.Phase != "RESTORING" || out.Failure != nil || !out.Since.Equal(now) || op.ID != "op-2" ||
					op.Attempts != 0 || op.From != "ERROR" || !slices.Equal(op.Done, []string{"provision"}) {
					t.Errorf("status %+v, operation %+v: want RESTORING resumed as op-2", out, op)
				}
			}},
		{name: "retry from fault with a rule out", intent: "DELETED", st: with(failed, retry),
			reason: "intent DELETED is not held in ERROR: it begins DELETING"},
		{name: "retry nothing", intent: "RUNNING", st: with(statemachine.Status[string, string]{Phase: "RUNNING", Target: "RUNNING"}, retry),
			reason: "nothing to retry in RUNNING: no failed step, and not in the fault phase"},
		{name: "skip the failed step", intent: "ARCHIVED", st: with(failing, statemachine.Command{ID: "c1", Verb: statemachine.VerbSkip, Step: "delete_volume"}),
			want: func(t *testing.T, out statemachine.Status[string, string]) {
				if op := out.Operation; !slices.Equal(op.Done, []string{"archive", "delete_volume"}) || op.Attempts != 0 {
					t.Errorf("operation %+v: want delete_volume done", op)
				}
			}},
		{name: "skip another step", intent: "ARCHIVED", st: with(failing, statemachine.Command{ID: "c1", Verb: statemachine.VerbSkip, Step: "archive"}),
			reason: `step "archive" is not the step that failed (delete_volume)`},
		{name: "skip from fault", intent: "RUNNING", st: with(failed, statemachine.Command{ID: "c1", Verb: statemachine.VerbSkip, Step: "restore"}),
			want: func(t *testing.T, out statemachine.Status[string, string]) {
				if out.Phase != "RESTORING" || !slices.Equal(out.Operation.Done, []string{"provision", "restore"}) {
					t.Errorf("status %+v: want RESTORING with restore done", out)
				}
			}},
		{name: "move", intent: "RUNNING", st: with(failed, statemachine.Command{ID: "c1", Verb: statemachine.VerbMove, Phase: "STANDBY"}),
			want: func(t *testing.T, out statemachine.Status[string, string]) {
				if out.Phase != "STANDBY" || out.Failure != nil || out.Operation != nil || !out.Since.Equal(now) {
					t.Errorf("status %+v: want STANDBY, failure cleared", out)
				}
			}},
		{name: "move into a transitional phase", intent: "RUNNING", st: with(failed, statemachine.Command{ID: "c1", Verb: statemachine.VerbMove, Phase: "STARTING"}),
			reason: "STARTING is transitional: an operation is begun by the machine, not moved into"},
		{name: "move where the intent is refused", intent: "RUNNING", st: with(failed, statemachine.Command{ID: "c1", Verb: statemachine.VerbMove, Phase: "DELETED"}),
			reason: `statemachine: Workspace: intent RUNNING refused in phase DELETED: a deleted workspace cannot come back`},
		{name: "move out of a phase that is not the fault phase", intent: "ARCHIVED", st: with(failing, statemachine.Command{ID: "c1", Verb: statemachine.VerbMove, Phase: "STANDBY"}),
			reason: "a move leaves the fault phase only; the object is in ARCHIVING"},
		{name: "move to an unknown phase", intent: "RUNNING", st: with(failed, statemachine.Command{ID: "c1", Verb: statemachine.VerbMove, Phase: "NOWHERE"}),
			reason: `"NOWHERE" is not a phase of the machine`},
		{name: "unknown request", intent: "RUNNING", st: with(failed, statemachine.Command{ID: "c1", Verb: statemachine.VerbRequest, Request: "reboot"}),
			reason: `"reboot" is not a request of the machine`},
		{name: "unknown verb", intent: "RUNNING", st: with(failed, statemachine.Command{ID: "c1", Verb: "explode"}),
			reason: `unknown verb "explode"`},
		{name: "no id", intent: "RUNNING", st: with(failed, statemachine.Command{Verb: statemachine.VerbRetry}),
			reason: "the command has no id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, outs := m.ApplyCommands(tc.intent, tc.st, now)
			if len(outs) != 1 || len(out.Commands) != 0 {
				t.Fatalf("outcomes %+v, commands left %+v: want one outcome, no command left", outs, out.Commands)
			}
			if o := outs[0]; o.Reason != tc.reason || o.Applied != (tc.reason == "") || o.Command != tc.st.Commands[0] {
				t.Errorf("outcome %+v, want reason %q", o, tc.reason)
			}
			if tc.want != nil {
				tc.want(t, out)
				return
			}
			st := tc.st
			st.Commands = nil
			if !out.Equal(st) {
				t.Errorf("refused, yet the status changed: %+v", out)
			}
		})
	}
}

// TestApplyCommandsRequest follows a request command from its issue to its
// token served: it stays in the status, its id a token of the request,
// until the operation that serves it completes.
func TestApplyCommandsRequest(t *testing.T) {
	m := workspaceWithRestart(t)
	cmd := statemachine.Command{ID: "c7", Verb: statemachine.VerbRequest, Request: "restart"}
	st := statemachine.Status[string, string]{Phase: "RUNNING", Target: "RUNNING", Commands: []statemachine.Command{cmd}}
	st, outs := m.ApplyCommands("RUNNING", st, t0)
	if len(outs) != 0 || len(st.Commands) != 1 {
		t.Fatalf("outcomes %+v, commands %+v: want the command kept, no outcome", outs, st.Commands)
	}
	if got := st.RequestCommands("restart"); !slices.Equal(got, []string{"c7"}) {
		t.Fatalf("request tokens %v, want [c7]", got)
	}
	st = st.Request("restart", st.RequestCommands("restart")...)
	d, err := m.Decide("RUNNING", st, t0)
	if err != nil || d.Action != statemachine.Begin || d.Request != "restart" {
		t.Fatalf("decision %+v, %v: want the restart begun", d, err)
	}
	st, _ = m.Apply(st, d, statemachine.Report{OperationID: "op-1", Now: t0})
	if st, outs = m.ApplyCommands("RUNNING", st, t0); len(outs) != 0 || len(st.Commands) != 1 {
		t.Fatalf("outcomes %+v while the restart runs: want none", outs)
	}
	st.Operation.Done = []string{"stop"}
	st = st.Observe(t0, statemachine.Observation{Name: "container_ready"}, statemachine.Observation{Name: "volume_ready", Status: true})
	d, _ = m.Decide("RUNNING", st, t0)
	st, _ = m.Apply(st, d, statemachine.Report{Now: t0})
	st, outs = m.ApplyCommands("RUNNING", st, t0)
	if len(outs) != 1 || !outs[0].Applied || len(st.Commands) != 0 {
		t.Fatalf("outcomes %+v, commands %+v: want the command applied and removed", outs, st.Commands)
	}
	if st = st.Request("restart", st.RequestCommands("restart")...); len(st.Requests) != 0 {
		t.Errorf("requests %+v: want the served token forgotten", st.Requests)
	}

	// Refused in ARCHIVED, with the machine's reason.
	st = statemachine.Status[string, string]{Phase: "ARCHIVED", Target: "ARCHIVED", Commands: []statemachine.Command{cmd}}
	st = st.Request("restart", st.RequestCommands("restart")...)
	d, _ = m.Decide("ARCHIVED", st, t0)
	st, _ = m.Apply(st, d, statemachine.Report{Now: t0})
	if _, outs = m.ApplyCommands("ARCHIVED", st, t0); len(outs) != 1 || outs[0].Applied || outs[0].Reason != "an archived workspace does not run" {
		t.Errorf("outcomes %+v: want the command refused with the machine's reason", outs)
	}
}

// TestApplyCommandsProperties checks, over random statuses and commands,
// that every command is carried out, refused or (a request not served yet)
// kept, exactly once and in order; that a refused command changes nothing
// but its removal; that a status the commands leave is one the machine can
// decide on whenever it could decide on the status before; and that
// carrying out the commands again does nothing.
func TestApplyCommandsProperties(t *testing.T) {
	m := workspaceWithRestart(t)
	phases, states := m.Phases(), m.States()
	rapid.Check(t, func(t *rapid.T) {
		now := t0.Add(time.Duration(rapid.IntRange(0, 7200).Draw(t, "now")) * time.Second)
		intent := rapid.SampledFrom(states).Draw(t, "intent")
		// The fault phase, where most commands apply, is drawn half the time.
		st := statemachine.Status[string, string]{Phase: "ERROR", Target: rapid.SampledFrom(states).Draw(t, "target"), Since: t0}
		if rapid.Bool().Draw(t, "elsewhere") {
			st.Phase = rapid.SampledFrom(phases).Draw(t, "phase")
		}
		operation := func(label, phase string) statemachine.Operation[string] {
			ps, _ := m.Spec(phase)
			op := statemachine.Operation[string]{ID: label, Phase: phase, From: "STANDBY",
				Done: ps.Steps[:rapid.IntRange(0, len(ps.Steps)).Draw(t, label+"done")], Attempts: rapid.IntRange(0, 3).Draw(t, label+"attempts")}
			if op.Attempts > 0 {
				op.LastError, op.RetryAt = "boom", t0.Add(time.Duration(rapid.IntRange(0, 7200).Draw(t, label+"retry"))*time.Second)
			}
			return op
		}
		var transitional []string
		for _, p := range phases {
			if ps, _ := m.Spec(p); ps.Type == statemachine.Transitional {
				transitional = append(transitional, p)
			}
		}
		if ps, _ := m.Spec(st.Phase); ps.Type == statemachine.Transitional {
			op := operation("op-now", st.Phase)
			st.Operation = &op
		}
		if rapid.Bool().Draw(t, "failure") {
			op := operation("op-failed", rapid.SampledFrom(transitional).Draw(t, "failedPhase"))
			ps, _ := m.Spec(op.Phase)
			step := ""
			for _, s := range ps.Steps {
				if !slices.Contains(op.Done, s) {
					step = s
					break
				}
			}
			st.Failure = &statemachine.Failure[string]{Operation: op, Step: step, Cause: statemachine.CauseTerminal, Reason: "boom", At: t0}
		}
		steps := append(m.Steps(), "nowhere")
		n := rapid.IntRange(0, 5).Draw(t, "commands")
		for i := range n {
			c := statemachine.Command{ID: fmt.Sprintf("c%d", i),
				Verb: rapid.SampledFrom([]statemachine.Verb{statemachine.VerbRetry, statemachine.VerbSkip, statemachine.VerbMove, statemachine.VerbRequest, "bogus"}).Draw(t, "verb")}
			switch c.Verb {
			case statemachine.VerbSkip:
				c.Step = rapid.SampledFrom(steps).Draw(t, "step")
			case statemachine.VerbMove:
				c.Phase = rapid.SampledFrom([]string{"PENDING", "STANDBY", "RUNNING", "ARCHIVED", "DELETED", "ERROR", "STARTING", "NOWHERE"}).Draw(t, "to")
			case statemachine.VerbRequest:
				c.Request = rapid.SampledFrom([]string{"restart", "reboot"}).Draw(t, "request")
			}
			if rapid.IntRange(0, 9).Draw(t, "noID") == 0 {
				c.ID = ""
			}
			st.Commands = append(st.Commands, c)
		}
		if served := st.RequestCommands("restart"); len(served) > 0 && rapid.Bool().Draw(t, "served") {
			st.Requests = []statemachine.RequestState{{Name: "restart", Tokens: served, Served: served[:1]}}
		}
		before, _ := json.Marshal(st)

		out, outs := m.ApplyCommands(intent, st, now)

		if after, _ := json.Marshal(st); string(after) != string(before) {
			t.Fatalf("ApplyCommands modified its input:\n%s\n%s", before, after)
		}
		var seen []statemachine.Command
		oi, ki := 0, 0
		for _, c := range st.Commands {
			switch {
			case oi < len(outs) && outs[oi].Command == c:
				o := outs[oi]
				oi++
				if o.Applied == (o.Reason != "") {
					t.Fatalf("outcome %+v: applied with a reason, or refused without one", o)
				}
			case ki < len(out.Commands) && out.Commands[ki] == c:
				ki++
				if c.Verb != statemachine.VerbRequest || c.Request != "restart" {
					t.Fatalf("command %+v kept: only request commands wait", c)
				}
			default:
				t.Fatalf("command %+v neither carried out, refused nor kept in order: outcomes %+v, kept %+v", c, outs, out.Commands)
			}
			seen = append(seen, c)
		}
		if oi != len(outs) || ki != len(out.Commands) {
			t.Fatalf("outcomes %+v and kept %+v beyond the commands %+v", outs, out.Commands, seen)
		}
		if !slices.ContainsFunc(outs, func(o statemachine.CommandOutcome) bool { return o.Applied }) {
			want := st
			want.Commands = out.Commands
			if !out.Equal(want) {
				t.Fatalf("no command applied, yet the status changed:\n%+v\n%+v", st, out)
			}
		}
		for _, o := range outs {
			if o.Applied && o.Command.Verb == statemachine.VerbMove {
				if err := m.Admit(intent, o.To); err != nil || out.Phase != o.To {
					t.Fatalf("moved to %s, where %v; the status is in %s", o.To, err, out.Phase)
				}
			}
			if o.Applied && (o.Command.Verb == statemachine.VerbRetry || o.Command.Verb == statemachine.VerbSkip) {
				if out.Operation == nil || out.Operation.ID != o.Operation || out.Operation.Attempts != 0 || !out.Operation.RetryAt.IsZero() {
					t.Fatalf("%s applied, operation %+v: want %s with its attempts forgotten", o.Command.Verb, out.Operation, o.Operation)
				}
			}
		}
		if _, err := m.Decide(intent, st, now); err == nil {
			if _, err := m.Decide(intent, out, now); err != nil {
				t.Fatalf("the commands left a status the machine cannot decide on: %v\n%+v", err, out)
			}
		}
		again, more := m.ApplyCommands(intent, out, now)
		if len(more) != 0 || !again.Equal(out) {
			t.Fatalf("carried out twice: %+v", more)
		}
	})
}
