package statemachine_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/tendhq/tend/statemachine"
)

// A descriptor survives JSON and rebuilds into a machine that draws exactly
// the original's diagrams.
func TestDescriptorRebuildsTheSameDiagrams(t *testing.T) {
	typed := mustNew(t, gateway())
	machines := map[string]interface {
		Descriptor() statemachine.Descriptor
		Mermaid() string
		DOT() string
	}{
		"gateway":       typed,
		"runtimedomain": mustNew(t, runtimeDomain()),
		"workspace":     mustNew(t, workspace()),
		"enum":          mustNew(t, enumMachine()),
	}
	for name, m := range machines {
		t.Run(name, func(t *testing.T) {
			desc := m.Descriptor()
			data, err := json.Marshal(desc)
			if err != nil {
				t.Fatal(err)
			}
			rebuilt, err := statemachine.ParseDescriptor(data)
			if err != nil {
				t.Fatalf("ParseDescriptor: %v\n%s", err, data)
			}
			if got, want := rebuilt.Mermaid(), m.Mermaid(); got != want {
				t.Errorf("Mermaid differs:\n%s\nwant:\n%s", got, want)
			}
			if got, want := rebuilt.DOT(), m.DOT(); got != want {
				t.Errorf("DOT differs:\n%s\nwant:\n%s", got, want)
			}
			if again := rebuilt.Descriptor(); !reflect.DeepEqual(again, desc) {
				t.Errorf("descriptor of the rebuilt machine differs:\n%+v\nwant:\n%+v", again, desc)
			}
		})
	}
}

// The JSON form is the one tools read: lower-case keys, kinds by name.
func TestDescriptorJSON(t *testing.T) {
	data, err := json.Marshal(mustNew(t, enumMachine()).Descriptor().Phases[:2])
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"phase":"Creating","kind":"transitional","steps":["provision"],"completion":[{"condition":"ready","status":true}],"then":"Ready","bounds":{"deadline":60000000000,"maxAttempts":3}},{"phase":"Ready"}]`
	if string(data) != want {
		t.Errorf("json:\n%s\nwant:\n%s", data, want)
	}
}

func TestParseDescriptorErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		json string
		want error
	}{
		"uncovered": {`{"name":"m","states":["A"],"initial":"p","phases":[{"phase":"p"}]}`, statemachine.ErrUncovered},
		"duplicate": {`{"name":"m","states":["A","A"],"initial":"p","phases":[{"phase":"p"}],"settled":[{"state":"A","phase":"p"}]}`, statemachine.ErrDuplicate},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := statemachine.ParseDescriptor([]byte(tc.json)); !errors.Is(err, tc.want) {
				t.Fatalf("ParseDescriptor = %v, want %v", err, tc.want)
			}
		})
	}
	for _, bad := range []string{`{`, `{"phases":[{"phase":"p","kind":"sideways"}]}`, `{"phases":[{"phase":"p","kind":1}]}`, `[]`} {
		if _, err := statemachine.ParseDescriptor([]byte(bad)); err == nil {
			t.Errorf("ParseDescriptor(%s) = nil error", bad)
		}
	}
}

// A machine over types the rebuilt machine does not know decides as the
// original at every step of a random life: intents change, steps fail,
// conditions come and go, time passes.
func TestDescriptorDecidesAsTheOriginal(t *testing.T) {
	orig := mustNew(t, enumMachine())
	rebuilt, err := statemachine.New(orig.Descriptor())
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(t *rapid.T) {
		st, sst := orig.NewStatus(), rebuilt.NewStatus()
		now := time0
		for i := range 60 {
			intent := rapid.SampledFrom(orig.States()).Draw(t, "intent")
			for _, c := range orig.Conditions() {
				v := rapid.Bool().Draw(t, "condition")
				st = st.Observe(now, statemachine.Observation{Name: c, Status: v})
				sst = sst.Observe(now, statemachine.Observation{Name: c, Status: v})
			}
			now = now.Add(time.Duration(rapid.IntRange(0, 40).Draw(t, "seconds")) * time.Second)
			d, err := orig.Decide(intent, st, now)
			sd, serr := rebuilt.Decide(intent.String(), sst, now)
			if (err == nil) != (serr == nil) {
				t.Fatalf("Decide errors differ: %v and %v", err, serr)
			}
			if err != nil {
				return
			}
			if got, want := decisionText(sd), decisionText(d); got != want {
				t.Fatalf("step %d: rebuilt decides %s, original %s", i, got, want)
			}
			r := statemachine.Report{OperationID: fmt.Sprint(i), Now: now, RetryAfter: time.Second,
				Outcome: rapid.SampledFrom([]statemachine.Outcome{statemachine.Done, statemachine.Failed, statemachine.FailedTerminal}).Draw(t, "outcome")}
			if r.Outcome != statemachine.Done {
				r.Err = errors.New("boom")
			}
			st, err = orig.Apply(st, d, r)
			sst, serr = rebuilt.Apply(sst, sd, r)
			if (err == nil) != (serr == nil) {
				t.Fatalf("Apply errors differ: %v and %v", err, serr)
			}
			if err != nil {
				return
			}
			if got, want := sst.Phase, st.Phase.String(); got != want {
				t.Fatalf("step %d: rebuilt is in %s, original in %s", i, got, want)
			}
		}
	})
}

// decisionText prints what a decision asks, with Next only where it is set.
func decisionText[S, P comparable](d statemachine.Decision[S, P]) string {
	next := ""
	switch d.Action {
	case statemachine.Begin, statemachine.Complete, statemachine.Abort, statemachine.Expire:
		next = fmt.Sprint(d.Next)
	}
	return fmt.Sprintf("%v %v %v→%s step=%q reason=%q", d.Action, d.Intent, d.Phase, next, d.Step, d.Reason)
}

// enumState and enumPhase are a machine's types as many programs declare
// them: integers whose zero value is a real state and phase.
type (
	enumState int
	enumPhase int
)

const (
	eUp enumState = iota
	eGone
)

const (
	eCreating enumPhase = iota
	eReady
	eDeleting
	eDeleted
	eBroken
)

func (s enumState) String() string { return [...]string{"Up", "Gone"}[s] }
func (p enumPhase) String() string {
	return [...]string{"Creating", "Ready", "Deleting", "Deleted", "Broken"}[p]
}

// enumMachine's Creating leaves FailTo unset, its zero value: failures go to
// the Fault phase Broken, not to Creating, the phase that zero prints as.
func enumMachine() statemachine.Definition[enumState, enumPhase] {
	T := statemachine.Transitional
	return statemachine.Definition[enumState, enumPhase]{
		Name:    "Enum",
		States:  []enumState{eUp, eGone},
		Initial: eCreating,
		Phases: []statemachine.PhaseSpec[enumPhase]{
			{Phase: eCreating, Type: T, Steps: []string{"provision"}, Completion: []statemachine.Require{statemachine.Is("ready")},
				Then: eReady, Bounds: statemachine.Bounds{Deadline: time.Minute, MaxAttempts: 3}},
			{Phase: eReady},
			{Phase: eDeleting, Type: T, NoReturn: true, Steps: []string{"remove"}, Completion: []statemachine.Require{statemachine.Not("ready")},
				Then: eDeleted, Unbounded: true},
			{Phase: eDeleted, Type: statemachine.Terminal},
			{Phase: eBroken, Type: statemachine.Fault},
		},
		Settled: []statemachine.Settle[enumState, enumPhase]{
			{State: eUp, Phase: eReady},
			{State: eGone, Phase: eDeleted, Final: true},
		},
		Rules: []statemachine.Rule[enumState, enumPhase]{
			{State: eGone, Phase: eReady, Begin: eDeleting},
			{State: eGone, Phase: eBroken, Begin: eDeleting},
		},
		Refusals: []statemachine.RefusalRule[enumState, enumPhase]{{States: []enumState{eUp}, Phases: []enumPhase{eDeleting, eDeleted}, Reason: "deleted"}},
		Aborts:   []statemachine.AbortRule[enumState, enumPhase]{{State: eGone, Phase: eCreating, To: eDeleting}},
	}
}

// FuzzParseDescriptor: any input either fails to parse or builds a machine
// whose own descriptor rebuilds into the same diagram.
func FuzzParseDescriptor(f *testing.F) {
	for _, d := range []statemachine.Descriptor{runtimeDomain(), workspace(), mustNewF(f, enumMachine()).Descriptor()} {
		data, err := json.Marshal(d)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := statemachine.ParseDescriptor(data)
		if err != nil {
			return
		}
		again, err := json.Marshal(m.Descriptor())
		if err != nil {
			t.Fatal(err)
		}
		m2, err := statemachine.ParseDescriptor(again)
		if err != nil {
			t.Fatalf("a built machine's descriptor does not build: %v\n%s", err, again)
		}
		if m2.Mermaid() != m.Mermaid() {
			t.Fatalf("diagram changed through the descriptor:\n%s\n%s", m.Mermaid(), m2.Mermaid())
		}
	})
}

func mustNewF[S, P comparable](f *testing.F, d statemachine.Definition[S, P]) *statemachine.Machine[S, P] {
	m, err := statemachine.New(d)
	if err != nil {
		f.Fatal(err)
	}
	return m
}
