package statemachine_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/tendhq/tend/statemachine"
)

type (
	sm      = statemachine.Definition[string, string]
	phase   = statemachine.PhaseSpec[string]
	settle  = statemachine.Settle[string, string]
	rule    = statemachine.Rule[string, string]
	rename  = statemachine.Rename[string]
	mstatus = statemachine.Status[string, string]
)

// serviceV1 is the first version of a small machine: a service
// provisioned in three steps, drained in one, with a restart-like "rotate"
// request and a state "Legacy" it will retire. It has no Fault phase.
func serviceV1() sm {
	return sm{
		Name:    "Service",
		States:  []string{"Up", "Down", "Legacy"},
		Initial: "New",
		Phases: []phase{
			{Phase: "New"},
			{Phase: "Provisioning", Type: statemachine.Transitional, Steps: []string{"reserve", "configure", "start"},
				Completion: []statemachine.Require{statemachine.Is("running")}, Then: "Ready", FailTo: "Idle"},
			{Phase: "Ready"},
			{Phase: "Draining", Type: statemachine.Transitional, Steps: []string{"drain"},
				Completion: []statemachine.Require{statemachine.Not("running")}, Then: "Idle", FailTo: "Idle"},
			{Phase: "Idle"},
		},
		Settled: []settle{{State: "Up", Phase: "Ready"}, {State: "Legacy", Phase: "Ready"},
			{State: "Down", Phase: "New"}, {State: "Down", Phase: "Idle"}},
		Rules: []rule{{State: "Up", Phase: "New", Begin: "Provisioning"}, {State: "Legacy", Phase: "New", Begin: "Provisioning"},
			{State: "Up", Phase: "Idle", Begin: "Provisioning"}, {State: "Legacy", Phase: "Idle", Begin: "Provisioning"},
			{State: "Down", Phase: "Ready", Begin: "Draining"}},
		Requests: []statemachine.RequestRule[string]{{Name: "rotate", Serve: []statemachine.Edge[string]{{From: "Ready", To: "Provisioning"}}}},
	}
}

// serviceV2 is its next version: Provisioning renamed Deploying, its step
// configure removed, Ready renamed Serving, a Fault phase Broken
// introduced, the state Legacy retired for Up and the request rotate
// dropped. With migrations false it declares none of it.
func serviceV2(migrations bool) sm {
	d := sm{
		Name:    "Service",
		Version: 2,
		States:  []string{"Up", "Down"},
		Initial: "New",
		Phases: []phase{
			{Phase: "New"},
			{Phase: "Deploying", Type: statemachine.Transitional, Steps: []string{"reserve", "start"},
				Completion: []statemachine.Require{statemachine.Is("running")}, Then: "Serving"},
			{Phase: "Serving"},
			{Phase: "Draining", Type: statemachine.Transitional, Steps: []string{"drain"},
				Completion: []statemachine.Require{statemachine.Not("running")}, Then: "Idle"},
			{Phase: "Idle"},
			{Phase: "Broken", Type: statemachine.Fault},
		},
		Settled: []settle{{State: "Up", Phase: "Serving"}, {State: "Down", Phase: "New"}, {State: "Down", Phase: "Idle"}},
		Rules: []rule{{State: "Up", Phase: "New", Begin: "Deploying"}, {State: "Up", Phase: "Idle", Begin: "Deploying"},
			{State: "Down", Phase: "Serving", Begin: "Draining"}, {State: "Up", Phase: "Broken", Begin: "Deploying"},
			{State: "Down", Phase: "Broken", Begin: "Draining"}},
	}
	if migrations {
		d.Migrations = statemachine.Migrations[string, string]{
			States: []rename{{From: "Legacy", To: "Up"}},
			Phases: []rename{{From: "Provisioning", To: "Deploying"}, {From: "Ready", To: "Serving"}},
			Steps:  []statemachine.StepRename{{From: "configure"}},
		}
	}
	return d
}

func build(t *testing.T, d sm) *statemachine.Machine[string, string] {
	t.Helper()
	m, err := statemachine.New(d)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var at = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// running is a status of v1 in the middle of provisioning: reserve and
// configure done, start next.
func running() mstatus {
	return mstatus{Phase: "Provisioning", Target: "Up", Since: at, ObservedGeneration: 1,
		Operation: &statemachine.Operation[string]{ID: "op1", Phase: "Provisioning", From: "New",
			Done: []string{"reserve", "configure"}, Attempts: 2, LastError: "busy", Trigger: "intent Up"}}
}

func TestCarry(t *testing.T) {
	v2 := build(t, serviceV2(true))
	tests := []struct {
		name   string
		intent string
		st     mstatus
		want   func(mstatus) mstatus // the carried status, from the stored one
		next   statemachine.Action   // what v2 decides on it
		step   string
	}{
		{name: "renamed phase", intent: "Up", st: mstatus{Phase: "Ready", Target: "Up", ObservedGeneration: 1},
			want: func(s mstatus) mstatus { s.Phase = "Serving"; return s }, next: statemachine.Nothing},
		{name: "step removed mid-operation", intent: "Up", st: running(),
			want: func(s mstatus) mstatus {
				s.Phase = "Deploying"
				s.Operation.Phase, s.Operation.Done = "Deploying", []string{"reserve"}
				return s
			}, next: statemachine.Run, step: "start"},
		{name: "new Fault phase", intent: "Down", st: mstatus{Phase: "Idle", Target: "Up", ObservedGeneration: 3,
			Failure: &statemachine.Failure[string]{Operation: statemachine.Operation[string]{ID: "op0", Phase: "Provisioning", From: "Idle", Done: []string{"reserve", "configure"}},
				Step: "start", Cause: statemachine.CauseDeadline, Reason: "late"}},
			want: func(s mstatus) mstatus {
				s.Failure.Operation.Phase, s.Failure.Operation.Done = "Deploying", []string{"reserve"}
				return s
			}, next: statemachine.Nothing},
		{name: "retired state", intent: "Legacy", st: mstatus{Phase: "Ready", Target: "Legacy", ObservedGeneration: 1},
			want: func(s mstatus) mstatus { s.Phase, s.Target = "Serving", "Up"; return s }, next: statemachine.Nothing},
		{name: "served request and stale timer dropped", intent: "Up",
			st: mstatus{Phase: "Ready", Target: "Up", ObservedGeneration: 1,
				Requests: []statemachine.RequestState{{Name: "rotate", Tokens: []string{"t1"}, Served: []string{"t1"}}},
				Timers:   []statemachine.TimerDue{{Name: "renew", At: at}}},
			want: func(s mstatus) mstatus { s.Phase, s.Requests, s.Timers = "Serving", nil, nil; return s }, next: statemachine.Nothing},
		{name: "never written", intent: "Up", st: mstatus{},
			want: func(s mstatus) mstatus { return s }, next: statemachine.Begin},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stored := deepCopy(t, tt.st)
			got, strand := v2.Carry(tt.intent, tt.st)
			if strand != nil {
				t.Fatalf("stranded: %v", strand)
			}
			want := tt.want(deepCopy(t, tt.st))
			if !got.Equal(want) {
				t.Fatalf("carried\n%+v\nwant\n%+v", got, want)
			}
			if !tt.st.Equal(stored) {
				t.Fatal("Carry modified its argument")
			}
			again, strand := v2.Carry(tt.intent, got)
			if strand != nil || !again.Equal(got) {
				t.Fatalf("carrying again changed %+v into %+v (%v)", got, again, strand)
			}
			if got.Phase == "" {
				got = v2.NewStatus() // as a driver reads a status never written
			}
			dec, err := v2.Decide(v2.CarryIntent(tt.intent), got, at)
			if err != nil {
				t.Fatal(err)
			}
			if dec.Action != tt.next || dec.Step != tt.step {
				t.Fatalf("v2 decides %v %q on it, want %v %q", dec.Action, dec.Step, tt.next, tt.step)
			}
		})
	}
}

// TestCarryStranded gives the same statuses to the new version declared
// without its migrations (the defect a team makes): each is stranded,
// with the reason.
func TestCarryStranded(t *testing.T) {
	bare := build(t, serviceV2(false))
	withRequest := running()
	withRequest.Phase, withRequest.Operation = "Ready", nil
	withRequest.Requests = []statemachine.RequestState{{Name: "rotate", Tokens: []string{"t1", "t2"}, Served: []string{"t1"}}}
	resting := running()
	resting.Phase = "Ready"
	resting.Operation.Phase = "Ready"
	tests := []struct {
		name   string
		m      *statemachine.Machine[string, string]
		intent string
		st     mstatus
		reason string
		step   string
	}{
		{name: "renamed phase", m: bare, intent: "Up", st: mstatus{Phase: "Ready", Target: "Up"}, reason: "phase Ready is not a phase"},
		{name: "step removed mid-operation", m: build(t, withPhaseRenames(serviceV2(false))), intent: "Up", st: running(),
			reason: "names steps phase Deploying does not declare: configure", step: "configure"},
		{name: "retired state", m: build(t, withPhaseRenames(serviceV2(false))), intent: "Legacy", st: mstatus{Phase: "Ready", Target: "Legacy"},
			reason: "target Legacy is not a state"},
		{name: "pending request", m: build(t, serviceV2(true)), intent: "Up", st: withRequest,
			reason: "request rotate is not a request of the machine, and tokens t2 are not served"},
		{name: "operation in a phase no longer transitional", m: build(t, serviceV2(true)), intent: "Up", st: resting,
			reason: "runs in phase Serving, which is no longer transitional"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, strand := tt.m.Carry(tt.intent, tt.st)
			if strand == nil {
				t.Fatalf("carried to %+v, want stranded", got)
			}
			if !strings.Contains(strings.Join(strand.Reasons, "; "), tt.reason) || strand.Step != tt.step {
				t.Fatalf("stranded %v, want reason %q, step %q", strand, tt.reason, tt.step)
			}
			if !got.Equal(tt.st) {
				t.Fatal("a stranded status was changed")
			}
		})
	}
}

func withPhaseRenames(d sm) sm {
	d.Migrations.Phases = []rename{{From: "Provisioning", To: "Deploying"}, {From: "Ready", To: "Serving"}}
	return d
}

func TestCarryResume(t *testing.T) {
	for _, tt := range []struct {
		at   string
		done []string
		step string
	}{{at: "", step: "reserve"}, {at: "start", done: []string{"reserve"}, step: "start"}} {
		d := withPhaseRenames(serviceV2(false))
		d.Migrations.Resume = []statemachine.Resume[string]{{Phase: "Deploying", At: tt.at}}
		m := build(t, d)
		got, strand := m.Carry("Up", running())
		if strand != nil {
			t.Fatal(strand)
		}
		op := got.Operation
		if op.ID != "op1" || !slices.Equal(op.Done, tt.done) || op.Attempts != 0 || op.LastError != "" {
			t.Fatalf("resume at %q: operation %+v", tt.at, op)
		}
		if dec, err := m.Decide("Up", got, at); err != nil || dec.Step != tt.step {
			t.Fatalf("resume at %q: decides %+v, %v", tt.at, dec, err)
		}
	}
}

func TestMigrationsBuild(t *testing.T) {
	tests := []struct {
		name string
		mig  statemachine.Migrations[string, string]
		want error
	}{
		{"retired state still declared", statemachine.Migrations[string, string]{States: []rename{{From: "Up", To: "Down"}}}, statemachine.ErrInvalid},
		{"retired state to an undeclared one", statemachine.Migrations[string, string]{States: []rename{{From: "Legacy", To: "Gone"}}}, statemachine.ErrUnknownState},
		{"state retired twice", statemachine.Migrations[string, string]{States: []rename{{From: "Legacy", To: "Up"}, {From: "Legacy", To: "Down"}}}, statemachine.ErrDuplicate},
		{"renamed phase still declared", statemachine.Migrations[string, string]{Phases: []rename{{From: "Idle", To: "New"}}}, statemachine.ErrInvalid},
		{"phase renamed to an undeclared one", statemachine.Migrations[string, string]{Phases: []rename{{From: "Ready", To: "Readied"}}}, statemachine.ErrUnknownPhase},
		{"step removed but declared", statemachine.Migrations[string, string]{Steps: []statemachine.StepRename{{From: "drain"}}}, statemachine.ErrInvalid},
		{"step renamed to an undeclared one", statemachine.Migrations[string, string]{Steps: []statemachine.StepRename{{From: "configure", To: "setup"}}}, statemachine.ErrInvalid},
		{"step removed twice", statemachine.Migrations[string, string]{Steps: []statemachine.StepRename{{From: "configure"}, {From: "configure"}}}, statemachine.ErrDuplicate},
		{"resume in a resting phase", statemachine.Migrations[string, string]{Resume: []statemachine.Resume[string]{{Phase: "Idle"}}}, statemachine.ErrInvalid},
		{"resume at an undeclared step", statemachine.Migrations[string, string]{Resume: []statemachine.Resume[string]{{Phase: "Deploying", At: "configure"}}}, statemachine.ErrInvalid},
		{"resume in an undeclared phase", statemachine.Migrations[string, string]{Resume: []statemachine.Resume[string]{{Phase: "Provisioning"}}}, statemachine.ErrUnknownPhase},
	}
	for _, tt := range tests {
		d := serviceV2(false)
		d.Migrations = tt.mig
		if _, err := statemachine.New(d); !errors.Is(err, tt.want) {
			t.Errorf("%s: New returned %v, want %v", tt.name, err, tt.want)
		}
	}
	// The descriptor keeps the version and migrations.
	m := build(t, serviceV2(true))
	data, err := json.Marshal(m.Descriptor())
	if err != nil {
		t.Fatal(err)
	}
	back, err := statemachine.ParseDescriptor(data)
	if err != nil {
		t.Fatal(err)
	}
	if back.Version() != 2 || back.CarryIntent("Legacy") != "Up" || back.Digest() != m.Digest() {
		t.Fatalf("the descriptor lost the version or migrations: %s", data)
	}
}

func TestDigestAndCompare(t *testing.T) {
	v1, v2 := build(t, serviceV1()), build(t, serviceV2(true))
	if v1.Digest() != build(t, serviceV1()).Digest() {
		t.Fatal("one machine, two digests")
	}
	if v1.Digest() == v2.Digest() {
		t.Fatal("two machines, one digest")
	}
	bounded := serviceV1()
	bounded.Bounds.Deadline = time.Minute
	if build(t, bounded).Digest() == v1.Digest() {
		t.Fatal("a changed bound does not change the digest")
	}
	if c := v1.Compare(v1.Descriptor()); len(c) != 0 {
		t.Fatalf("a machine differs from itself: %v", c)
	}
	got := v2.Compare(v1.Descriptor()).String()
	want := `version: 0 → 2
state Legacy: retired, carried to Up
phase Provisioning: renamed to Deploying
phase Ready: renamed to Serving
steps of Deploying: reserve, configure, start → reserve, start
phase Broken: added (fault)
request rotate: removed
settled (Up, Ready): removed
settled (Legacy, Ready): removed
settled (Up, Serving): added
rule (Up, New) → Provisioning: removed
rule (Legacy, New) → Provisioning: removed
rule (Up, Idle) → Provisioning: removed
rule (Legacy, Idle) → Provisioning: removed
rule (Down, Ready) → Draining: removed
rule (Up, New) → Deploying: added
rule (Up, Idle) → Deploying: added
rule (Down, Serving) → Draining: added
rule (Up, Broken) → Deploying: added
rule (Down, Broken) → Draining: added
`
	if got != want {
		t.Fatalf("changes:\n%s\nwant:\n%s", got, want)
	}
}

func TestStrandedError(t *testing.T) {
	e := &statemachine.StrandedError{Kind: "Service", Machine: "Service"}
	if e.Err() != nil {
		t.Fatal("an empty StrandedError is an error")
	}
	for i := range 150 {
		e.Add(fmt.Sprintf("s%03d", i), statemachine.Strand{State: "Up", Phase: "Ready", Reasons: []string{"phase Ready is not a phase of the machine"}})
	}
	err := e.Err()
	var se *statemachine.StrandedError
	if !errors.Is(err, statemachine.ErrStranded) || !errors.As(err, &se) {
		t.Fatalf("%v does not match ErrStranded", err)
	}
	if se.Total != 150 || len(se.Documents) != statemachine.MaxStranded || se.Documents[99].Key != "s099" {
		t.Fatalf("total %d, %d listed", se.Total, len(se.Documents))
	}
	if !strings.Contains(err.Error(), "150 Service documents stranded") || !strings.Contains(err.Error(), "and 147 more") {
		t.Fatal(err)
	}
}

func deepCopy(t interface {
	Helper()
	Fatal(...any)
}, s mstatus) mstatus {
	t.Helper()
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out mstatus
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Any status version 1 can hold is carried by version 2 with its
// migrations unless it holds tokens of the dropped request rotate not
// served yet; the carried status is carried as it is again, and version
// 2 decides on it. Without the step's removal declared, the property
// fails on the first operation whose checkpoint names it.
func TestCarryProperty(t *testing.T) {
	v1def := serviceV1()
	v2 := build(t, serviceV2(true))
	rapid.Check(t, func(t *rapid.T) {
		ps := rapid.SampledFrom(v1def.Phases).Draw(t, "phase")
		st := mstatus{Phase: ps.Phase, Target: rapid.SampledFrom(v1def.States).Draw(t, "target"), Since: at}
		if ps.Type == statemachine.Transitional {
			var done []string
			for _, s := range ps.Steps {
				if rapid.Bool().Draw(t, "done "+s) {
					done = append(done, s)
				}
			}
			st.Operation = &statemachine.Operation[string]{ID: "op", Phase: ps.Phase, From: "New", Done: done,
				Attempts: rapid.IntRange(0, 3).Draw(t, "attempts")}
		}
		pending := false
		if rapid.Bool().Draw(t, "rotate") {
			r := statemachine.RequestState{Name: "rotate", Tokens: []string{"t1", "t2"}, Served: []string{"t1"}}
			if rapid.Bool().Draw(t, "served") {
				r.Served = append(r.Served, "t2")
			} else {
				pending = true
			}
			st.Requests = []statemachine.RequestState{r}
		}
		stored := deepCopy(t, st)
		carried, strand := v2.Carry(st.Target, st)
		if !st.Equal(stored) {
			t.Fatal("Carry modified its argument")
		}
		if (strand != nil) != pending {
			t.Fatalf("stranded %v, want stranded %v", strand, pending)
		}
		if strand != nil {
			return
		}
		if again, s := v2.Carry(carried.Target, carried); s != nil || !again.Equal(carried) {
			t.Fatalf("carried twice: %+v, %v", again, s)
		}
		if _, err := v2.Decide(v2.CarryIntent(st.Target), carried, at); err != nil {
			t.Fatalf("version 2 cannot decide on %+v: %v", carried, err)
		}
	})
}
