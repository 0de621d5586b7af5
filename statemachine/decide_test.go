package statemachine_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tendhq/tend/statemachine"
)

var time0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

type status = statemachine.Status[string, string]

func mustNew[S, P comparable](t *testing.T, d statemachine.Definition[S, P]) *statemachine.Machine[S, P] {
	t.Helper()
	m, err := statemachine.New(d)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func op(id, phase, from string, done ...string) *statemachine.Operation[string] {
	return &statemachine.Operation[string]{ID: id, Phase: phase, From: from, Done: done}
}

func TestDecide(t *testing.T) {
	ws := mustNew(t, workspace())
	rd := mustNew(t, runtimeDomain())
	cond := func(st status, name string, v bool) status {
		return st.Observe(time0, statemachine.Observation{Name: name, Status: v})
	}
	tests := []struct {
		name   string
		m      *statemachine.Machine[string, string]
		intent string
		st     status
		want   statemachine.Decision[string, string]
	}{
		{"new object begins its initial operation", rd, "Active", rd.NewStatus(),
			statemachine.Decision[string, string]{Action: statemachine.Begin, Intent: "Active", Phase: "Creating", Next: "Creating"}},
		{"transitional phase without operation begins it", ws, "RUNNING", status{Phase: "STARTING"},
			statemachine.Decision[string, string]{Action: statemachine.Begin, Intent: "RUNNING", Phase: "STARTING", Next: "STARTING"}},
		{"first unfinished step runs", ws, "STANDBY", status{Phase: "RESTORING", Operation: op("o1", "RESTORING", "ARCHIVED", "provision")},
			statemachine.Decision[string, string]{Action: statemachine.Run, Intent: "STANDBY", Phase: "RESTORING", Step: "restore", Operation: *op("o1", "RESTORING", "ARCHIVED", "provision")}},
		{"operation is not pre-empted by a new intent", ws, "ARCHIVED", status{Phase: "STARTING", Operation: op("o2", "STARTING", "STANDBY")},
			statemachine.Decision[string, string]{Action: statemachine.Run, Intent: "ARCHIVED", Phase: "STARTING", Step: "start", Operation: *op("o2", "STARTING", "STANDBY")}},
		{"steps done, conditions not yet observed", ws, "STANDBY", cond(status{Phase: "RESTORING", Operation: op("o1", "RESTORING", "ARCHIVED", "provision", "restore")}, "volume_ready", true),
			statemachine.Decision[string, string]{Action: statemachine.Wait, Intent: "STANDBY", Phase: "RESTORING", Operation: *op("o1", "RESTORING", "ARCHIVED", "provision", "restore"),
				Pending: []statemachine.Require{statemachine.Is("restore_marker_matches")}}},
		{"steps done, conditions hold", ws, "RUNNING", cond(status{Phase: "STARTING", Operation: op("o2", "STARTING", "STANDBY", "start")}, "container_ready", true),
			statemachine.Decision[string, string]{Action: statemachine.Complete, Intent: "RUNNING", Phase: "STARTING", Next: "RUNNING", Operation: *op("o2", "STARTING", "STANDBY", "start")}},
		{"actuator success is not completion", ws, "RUNNING", cond(status{Phase: "STARTING", Operation: op("o2", "STARTING", "STANDBY", "start")}, "container_ready", false),
			statemachine.Decision[string, string]{Action: statemachine.Wait, Intent: "RUNNING", Phase: "STARTING", Operation: *op("o2", "STARTING", "STANDBY", "start"),
				Pending: []statemachine.Require{statemachine.Is("container_ready")}}},
		{"settled pair", ws, "RUNNING", status{Phase: "RUNNING", Target: "RUNNING"},
			statemachine.Decision[string, string]{Action: statemachine.Nothing, Intent: "RUNNING", Phase: "RUNNING"}},
		{"final pair", ws, "DELETED", status{Phase: "DELETED", Target: "DELETED"},
			statemachine.Decision[string, string]{Action: statemachine.Nothing, Intent: "DELETED", Phase: "DELETED", Final: true}},
		{"ruled pair", ws, "DELETED", status{Phase: "RUNNING", Target: "RUNNING"},
			statemachine.Decision[string, string]{Action: statemachine.Begin, Intent: "DELETED", Phase: "RUNNING", Next: "STOPPING"}},
		{"fault phase holds for an operator", ws, "RUNNING", status{Phase: "ERROR", Failure: &statemachine.Failure[string]{Step: "restore", Reason: "checksum mismatch"}},
			statemachine.Decision[string, string]{Action: statemachine.Hold, Intent: "RUNNING", Phase: "ERROR", Reason: "checksum mismatch"}},
		{"fault phase with a rule", ws, "DELETED", status{Phase: "ERROR"},
			statemachine.Decision[string, string]{Action: statemachine.Begin, Intent: "DELETED", Phase: "ERROR", Next: "DELETING"}},
		{"sanctioned cycle", rd, "Active", status{Phase: "Deleted", Target: "Inactive"},
			statemachine.Decision[string, string]{Action: statemachine.Begin, Intent: "Active", Phase: "Deleted", Next: "Creating"}},
		{"intent admitted past no return when still reachable", rd, "Active", status{Phase: "Deleting", Target: "Inactive", Operation: op("o3", "Deleting", "Created")},
			statemachine.Decision[string, string]{Action: statemachine.Run, Intent: "Active", Phase: "Deleting", Step: "delete_routes", Operation: *op("o3", "Deleting", "Created")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.m.Decide(tt.intent, tt.st, now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecideErrors(t *testing.T) {
	g := mustNew(t, gateway())
	ws := mustNew(t, workspace())
	un := mustNew(t, statemachine.Definition[string, string]{
		Name: "Seeded", States: []string{"A", "B"}, Initial: "Init",
		Phases: []statemachine.PhaseSpec[string]{{Phase: "Init"},
			{Phase: "Go", Type: statemachine.Transitional, Unbounded: true, Steps: []string{"go"}, Completion: []statemachine.Require{statemachine.Is("gone")}, Then: "Done"},
			{Phase: "Done"}},
		Settled:     []statemachine.Settle[string, string]{{State: "A", Phase: "Done"}, {State: "B", Phase: "Done"}},
		Rules:       []statemachine.Rule[string, string]{{State: "A", Phase: "Init", Begin: "Go"}},
		Unreachable: []statemachine.Pair[string, string]{{State: "B", Phase: "Init"}}, // objects are created with intent A
	})
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"unknown intent", decideErr(g, "Paused", statemachine.Status[State, Phase]{Phase: Created}), statemachine.ErrUnknownState},
		{"unknown phase", decideErr(g, Running, statemachine.Status[State, Phase]{Phase: "Paused"}), statemachine.ErrUnknownPhase},
		{"refused intent without an admitted target", decideErr(g, Running, statemachine.Status[State, Phase]{Phase: DeletedPhase}), statemachine.ErrIntentRefused},
		{"pair declared unreachable", decideErr(un, "B", status{Phase: "Init"}), statemachine.ErrDeclaredUnreachable},
		{"workspace refuses RUNNING once deleted", ws.Admit("RUNNING", "DELETED"), statemachine.ErrIntentRefused},
		{"admit unknown intent", ws.Admit("PAUSED", "RUNNING"), statemachine.ErrUnknownState},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, tt.want) {
				t.Fatalf("got %v, want %v", tt.err, tt.want)
			}
		})
	}
	var re *statemachine.RefusalError[State, Phase]
	if err := g.Admit(Stopped, Deleting); !errors.As(err, &re) || re.Phase != Deleting || re.Intent != Stopped {
		t.Fatalf("Admit(Stopped, Deleting) = %v, want a RefusalError naming Deleting", err)
	}
	if err := un.Admit("B", "Init"); !errors.Is(err, statemachine.ErrIntentRefused) {
		t.Fatalf("Admit(B, Init) = %v, want a refusal of a pair declared unreachable", err)
	}
	if err := un.Admit("B", "Done"); err != nil {
		t.Fatalf("Admit(B, Done) = %v", err)
	}
}

func decideErr[S, P comparable](m *statemachine.Machine[S, P], s S, st statemachine.Status[S, P]) error {
	_, err := m.Decide(s, st, now)
	return err
}

func TestApply(t *testing.T) {
	ws := mustNew(t, workspace())
	g := mustNew(t, gateway())
	archiving := status{Phase: "ARCHIVING", Target: "ARCHIVED", Operation: op("o9", "ARCHIVING", "STANDBY", "archive")}
	run := statemachine.Decision[string, string]{Action: statemachine.Run, Intent: "ARCHIVED", Phase: "ARCHIVING", Step: "delete_volume", Operation: *op("o9", "ARCHIVING", "STANDBY", "archive")}
	failedOnce := status{Phase: "ARCHIVING", Target: "ARCHIVED", Operation: &statemachine.Operation[string]{ID: "o9", Phase: "ARCHIVING", From: "STANDBY",
		Done: []string{"archive"}, Attempts: 1, LastError: "timeout", RetryAt: now}}
	tests := []struct {
		name string
		st   status
		d    statemachine.Decision[string, string]
		r    statemachine.Report
		want status
		err  error
	}{
		{"done moves the checkpoint", archiving, run, statemachine.Report{Outcome: statemachine.Done},
			status{Phase: "ARCHIVING", Target: "ARCHIVED", Operation: op("o9", "ARCHIVING", "STANDBY", "archive", "delete_volume")}, nil},
		{"progress keeps the checkpoint", archiving, run, statemachine.Report{Outcome: statemachine.Progressed}, archiving, nil},
		{"progress clears the failures", failedOnce, run, statemachine.Report{Outcome: statemachine.Progressed}, archiving, nil},
		{"pending keeps the failures", failedOnce, run, statemachine.Report{Outcome: statemachine.Pending}, failedOnce, nil},
		{"transient failure counts attempts", archiving, run, statemachine.Report{Outcome: statemachine.Failed, Err: errors.New("timeout")},
			status{Phase: "ARCHIVING", Target: "ARCHIVED", Operation: &statemachine.Operation[string]{ID: "o9", Phase: "ARCHIVING", From: "STANDBY", Done: []string{"archive"}, Attempts: 1, LastError: "timeout"}}, nil},
		{"terminal failure moves to the fault phase", archiving, run, statemachine.Report{Outcome: statemachine.FailedTerminal, Err: errors.New("data loss")},
			status{Phase: "ERROR", Target: "ARCHIVED", Failure: &statemachine.Failure[string]{
				Operation: statemachine.Operation[string]{ID: "o9", Phase: "ARCHIVING", From: "STANDBY", Done: []string{"archive"}, Attempts: 1, LastError: "data loss"},
				Step:      "delete_volume", Cause: statemachine.CauseTerminal, Reason: "data loss"}}, nil},
		{"begin records the operation id and adopts the intent", status{Phase: "ERROR", Target: "ARCHIVED", Failure: &statemachine.Failure[string]{Reason: "x"}},
			statemachine.Decision[string, string]{Action: statemachine.Begin, Intent: "DELETED", Phase: "ERROR", Next: "DELETING"}, statemachine.Report{OperationID: "o10"},
			status{Phase: "DELETING", Target: "DELETED", Operation: func() *statemachine.Operation[string] {
				o := op("o10", "DELETING", "ERROR")
				o.Trigger = "intent DELETED"
				return o
			}()}, nil},
		{"complete moves on and remembers the phase", status{Phase: "STOPPING", Target: "STANDBY", Operation: op("o4", "STOPPING", "RUNNING", "stop")},
			statemachine.Decision[string, string]{Action: statemachine.Complete, Intent: "STANDBY", Phase: "STOPPING", Next: "STANDBY", Operation: *op("o4", "STOPPING", "RUNNING", "stop")}, statemachine.Report{},
			status{Phase: "STANDBY", Target: "STANDBY"}, nil},
		{"nothing adopts a new intent", status{Phase: "STANDBY", Target: "RUNNING"},
			statemachine.Decision[string, string]{Action: statemachine.Nothing, Intent: "STANDBY", Phase: "STANDBY"}, statemachine.Report{},
			status{Phase: "STANDBY", Target: "STANDBY"}, nil},
		{"wait changes nothing", archiving, statemachine.Decision[string, string]{Action: statemachine.Wait, Phase: "ARCHIVING"}, statemachine.Report{}, archiving, nil},
		{"begin without an id", status{Phase: "STANDBY"}, statemachine.Decision[string, string]{Action: statemachine.Begin, Intent: "RUNNING", Phase: "STANDBY", Next: "STARTING"},
			statemachine.Report{}, status{Phase: "STANDBY"}, statemachine.ErrMissingID},
		{"decision from another phase", archiving, statemachine.Decision[string, string]{Action: statemachine.Nothing, Phase: "STANDBY"}, statemachine.Report{}, archiving, statemachine.ErrStaleDecision},
		{"step of another operation", archiving, func() statemachine.Decision[string, string] { d := run; d.Operation.ID = "o8"; return d }(),
			statemachine.Report{Outcome: statemachine.Done}, archiving, statemachine.ErrStaleDecision},
		{"step that is not next", archiving, func() statemachine.Decision[string, string] { d := run; d.Step = "archive"; return d }(),
			statemachine.Report{Outcome: statemachine.Done}, archiving, statemachine.ErrStaleDecision},
		{"run without an outcome", archiving, run, statemachine.Report{}, archiving, statemachine.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := cloneJSON(t, tt.st)
			got, err := ws.Apply(tt.st, tt.d, tt.r)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if after := cloneJSON(t, tt.st); after != before {
				t.Errorf("Apply modified its input:\n%s\n%s", before, after)
			}
		})
	}

	l := mustNew(t, light())
	st := status{Phase: "Brightening", Target: "On", Operation: op("o1", "Brightening", "Dark")}
	d, _ := l.Decide("On", st, now)
	if _, err := l.Apply(st, d, statemachine.Report{Outcome: statemachine.FailedTerminal}); !errors.Is(err, statemachine.ErrNoFaultPhase) {
		t.Fatalf("terminal failure without a fault phase: err = %v", err)
	}
	_ = g
}

func cloneJSON(t *testing.T, st status) string {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A crash at any point resumes at the first unfinished step, never redoing a
// finished one or skipping one: replaying the gateway's cascade from every
// persisted checkpoint runs the remaining steps in order.
func TestCheckpointResume(t *testing.T) {
	g := mustNew(t, gateway())
	spec, _ := g.Spec(Deleting)
	st := statemachine.Status[State, Phase]{Phase: Started, Target: Running}
	d, _ := g.Decide(Deleted, st, now)
	st, _ = g.Apply(st, d, statemachine.Report{OperationID: "op-1"})
	for i := range spec.Steps {
		persisted := st // what a crash falls back to
		var ran []string
		for {
			d, err := g.Decide(Deleted, persisted, now)
			if err != nil {
				t.Fatal(err)
			}
			if d.Action != statemachine.Run {
				break
			}
			if d.Operation.ID != "op-1" {
				t.Fatalf("operation id changed to %s", d.Operation.ID)
			}
			ran = append(ran, d.Step)
			persisted, _ = g.Apply(persisted, d, statemachine.Report{Outcome: statemachine.Done})
		}
		if want := spec.Steps[i:]; !slices.Equal(ran, want) {
			t.Fatalf("resume from checkpoint %d ran %v, want %v", i, ran, want)
		}
		d, _ := g.Decide(Deleted, st, now)
		st, _ = g.Apply(st, d, statemachine.Report{Outcome: statemachine.Done})
	}
}

func TestStatusJSON(t *testing.T) {
	st := statemachine.Status[State, Phase]{
		Phase: Deleting, Target: Deleted,
		Operation:  &statemachine.Operation[Phase]{ID: "op-3", Phase: Deleting, From: StoppedPhase, Done: []string{"delete_cron_triggers"}, Attempts: 2, LastError: "timeout"},
		Conditions: []statemachine.Condition{{Name: "namespace_ready", Status: true, Reason: "Active", LastTransition: time0}},
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"phase":"Deleting","target":"Deleted","operation":{"id":"op-3","phase":"Deleting","from":"Stopped","done":["delete_cron_triggers"],"attempts":2,"lastError":"timeout"},"conditions":[{"name":"namespace_ready","status":true,"reason":"Active","lastTransition":"2025-01-01T00:00:00Z"}]}`
	if string(b) != want {
		t.Fatalf("json:\n%s\nwant:\n%s", b, want)
	}
	var back statemachine.Status[State, Phase]
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Equal(st) {
		t.Fatalf("round trip changed the status: %+v", back)
	}
}

func TestObserve(t *testing.T) {
	st := status{Phase: "Creating", Since: time0}
	st = st.Observe(time0, statemachine.Observation{Name: "volume_ready", Status: false}, statemachine.Observation{Name: "archive_ready", Status: true})
	later := time0.Add(time.Minute)
	next := st.Observe(later, statemachine.Observation{Name: "volume_ready", Status: false, Reason: "absent"}, statemachine.Observation{Name: "archive_ready", Status: false})
	want := []statemachine.Condition{
		{Name: "archive_ready", Status: false, LastTransition: later, Phase: "Creating", PhaseSince: time0, ObservedAt: later},
		{Name: "volume_ready", Status: false, Reason: "absent", LastTransition: time0, Phase: "Creating", PhaseSince: time0, ObservedAt: later},
	}
	if diff := cmp.Diff(want, next.Conditions); diff != "" {
		t.Fatalf("conditions (-want +got):\n%s", diff)
	}
	if c, ok := st.Condition("archive_ready"); !ok || !c.Status {
		t.Fatal("Observe modified its receiver")
	}
	if st.Equal(next) || !next.Equal(next.Observe(later)) || !next.Equal(next.Observe(later.Add(time.Minute), statemachine.Observation{Name: "archive_ready"})) {
		t.Fatal("Equal is wrong")
	}

	// In the next phase, the conditions observed in the last are stale
	// until observed again.
	moved := next
	moved.Phase, moved.Since = "Created", later.Add(time.Minute)
	if c, _ := moved.Condition("volume_ready"); !c.Stale(moved.Since) {
		t.Fatalf("%+v is not stale in %s", c, moved.Phase)
	}
	again := moved.Observe(moved.Since.Add(time.Second), statemachine.Observation{Name: "volume_ready"})
	if c, _ := again.Condition("volume_ready"); c.Stale(again.Since) || c.Phase != "Created" || again.Equal(moved) {
		t.Fatalf("observed again in %s: %+v, and the status changed: %v", again.Phase, c, !again.Equal(moved))
	}
	if c, _ := again.Condition("archive_ready"); !c.Stale(again.Since) {
		t.Fatalf("%+v, not observed again, is not stale", c)
	}
	if (statemachine.Condition{Name: "old"}).Stale(again.Since) {
		t.Fatal("a condition recorded without its phase is stale")
	}
}

func TestAccessors(t *testing.T) {
	g := mustNew(t, gateway())
	if got := g.Steps(); len(got) != 16 || !slices.IsSorted(got) {
		t.Errorf("Steps() = %v", got)
	}
	if got, want := g.Conditions(), []string{"database_ready", "deployment_available", "instance_present", "namespace_ready", "runtime_domain_present"}; !slices.Equal(got, want) {
		t.Errorf("Conditions() = %v, want %v", got, want)
	}
	if !slices.Contains(g.Edges(), statemachine.Edge[Phase]{From: StoppedPhase, To: Deleting}) || slices.Contains(g.Edges(), statemachine.Edge[Phase]{From: Deleting, To: Created}) {
		t.Errorf("Edges() = %v", g.Edges())
	}
	spec, ok := g.Spec(Deleting)
	spec.Steps[0] = "changed"
	if again, _ := g.Spec(Deleting); !ok || again.Steps[0] != "delete_cron_triggers" {
		t.Error("Spec shares the machine's slices")
	}
	def := g.Definition()
	def.Rules[0].Begin = Deleting
	if g.Definition().Rules[0].Begin != Starting {
		t.Error("Definition shares the machine's slices")
	}
}

// An intent that aborts the initial phase's operation, found before that
// operation began (a document created with it), aborts it before its first
// step: no step of the initial phase runs.
func TestInitialOperationAborted(t *testing.T) {
	d := runtimeDomain()
	d.Aborts = []statemachine.AbortRule[string, string]{{State: "Deleted", Phase: "Creating", To: "Deleting"}}
	m := mustNew(t, d)
	st := m.NewStatus()
	dec, err := m.Decide("Deleted", st, time0)
	if err != nil {
		t.Fatal(err)
	}
	if dec.Action != statemachine.Abort || dec.Next != "Deleting" {
		t.Fatalf("decided %v to %q, want Abort to Deleting", dec.Action, dec.Next)
	}
	next, err := m.Apply(st, dec, statemachine.Report{Now: time0, OperationID: "o1"})
	if err != nil {
		t.Fatal(err)
	}
	if next.Phase != "Deleting" || next.Operation == nil || next.Operation.ID != "o1" || next.Target != "Deleted" {
		t.Fatalf("applied: phase %q, target %q, operation %+v", next.Phase, next.Target, next.Operation)
	}
	// The intent that begins the phase's operation still begins it.
	if dec, _ := m.Decide("Active", st, time0); dec.Action != statemachine.Begin {
		t.Fatalf("intent Active decided %v, want Begin", dec.Action)
	}
	// An abort decided before the operation began is stale once one did.
	begun := st
	begun.Operation = op("o0", "Creating", "Creating")
	if _, err := m.Apply(begun, dec, statemachine.Report{Now: time0, OperationID: "o1"}); !errors.Is(err, statemachine.ErrStaleDecision) {
		t.Fatalf("applying an abort decided before the operation began to one begun: %v, want ErrStaleDecision", err)
	}
}
