package statemachine_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/tendhq/tend/statemachine"
)

type def = statemachine.Definition[string, string]

// named is an offending value an error must name: a pair, a phase or a state.
type named struct {
	state, phase string
	err          error
}

// offenders returns what each joined error names.
func offenders(err error) []named {
	var out []named
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else if err != nil {
		errs = []error{err}
	}
	for _, e := range errs {
		var pe *statemachine.PairError[string, string]
		var phe *statemachine.PhaseError[string]
		var se *statemachine.StateError[string]
		switch {
		case errors.As(e, &pe):
			out = append(out, named{pe.State, pe.Phase, pe.Err})
		case errors.As(e, &phe):
			out = append(out, named{"", phe.Phase, phe.Err})
		case errors.As(e, &se):
			out = append(out, named{se.State, "", se.Err})
		default:
			out = append(out, named{err: errors.Unwrap(e)})
		}
	}
	return out
}

func TestNewValid(t *testing.T) {
	for name, d := range map[string]def{"light": light(), "runtimeDomain": runtimeDomain(), "workspace": workspace()} {
		if _, err := statemachine.New(d); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := statemachine.New(gateway()); err != nil {
		t.Errorf("gateway: %v", err)
	}
}

// TestNewRejects has one case per check New makes; each names what it rejects.
func TestNewRejects(t *testing.T) {
	tests := []struct {
		name string
		edit func(*def)
		want []named
	}{
		{"no states", func(d *def) { d.States = nil }, []named{{err: statemachine.ErrInvalid}}},
		{"no phases", func(d *def) { d.Phases = nil; d.Settled, d.Rules = nil, nil }, []named{{err: statemachine.ErrInvalid}, {phase: "Dark", err: statemachine.ErrUnknownPhase}}},
		{"duplicate state", func(d *def) { d.States = append(d.States, "On") }, []named{{state: "On", err: statemachine.ErrDuplicate}}},
		{"duplicate phase", func(d *def) { d.Phases = append(d.Phases, statemachine.PhaseSpec[string]{Phase: "Lit"}) }, []named{{phase: "Lit", err: statemachine.ErrDuplicate}}},
		{"unknown initial phase", func(d *def) { d.Initial = "Dusk" }, []named{{phase: "Dusk", err: statemachine.ErrUnknownPhase}}},
		{"unknown phase type", func(d *def) { d.Phases[0].Type = 9 }, []named{{phase: "Dark", err: statemachine.ErrInvalid}}},
		{"rule with unknown state", func(d *def) {
			d.Rules = append(d.Rules, statemachine.Rule[string, string]{State: "Blink", Phase: "Dark", Begin: "Brightening"})
		},
			[]named{{"Blink", "Dark", statemachine.ErrUnknownState}}},
		{"rule beginning unknown phase", func(d *def) { d.Rules[0].Begin = "Flaring" }, []named{{"On", "Dark", statemachine.ErrUnknownPhase}}},
		{"settled in unknown phase", func(d *def) { d.Settled[0].Phase = "Dusk" }, []named{{"Off", "Dusk", statemachine.ErrUnknownPhase}}},
		{"unreachable pair with unknown state", func(d *def) {
			d.Unreachable = append(d.Unreachable, statemachine.Pair[string, string]{State: "Blink", Phase: "Dark"})
		},
			[]named{{"Blink", "Dark", statemachine.ErrUnknownState}}},
		{"duplicate rule", func(d *def) { d.Rules = append(d.Rules, d.Rules[0]) }, []named{{"On", "Dark", statemachine.ErrDuplicate}}},
		{"conflicting rules", func(d *def) {
			d.Rules = append(d.Rules, statemachine.Rule[string, string]{State: "On", Phase: "Dark", Begin: "Dimming"})
		},
			[]named{{"On", "Dark", statemachine.ErrContradiction}}},
		{"settled twice", func(d *def) { d.Settled = append(d.Settled, d.Settled[0]) }, []named{{"Off", "Dark", statemachine.ErrDuplicate}}},
		{"settled and ruled", func(d *def) {
			d.Settled = append(d.Settled, statemachine.Settle[string, string]{State: "On", Phase: "Dark"})
		},
			[]named{{"On", "Dark", statemachine.ErrContradiction}}},
		{"unreachable and settled", func(d *def) {
			d.Unreachable = append(d.Unreachable, statemachine.Pair[string, string]{State: "Off", Phase: "Dark"})
		},
			[]named{{"Off", "Dark", statemachine.ErrContradiction}}},
		{"unreachable and ruled", func(d *def) {
			d.Unreachable = append(d.Unreachable, statemachine.Pair[string, string]{State: "On", Phase: "Dark"})
		},
			[]named{{"On", "Dark", statemachine.ErrContradiction}}},
		{"unreachable twice", func(d *def) {
			d.Rules = d.Rules[1:]
			d.Unreachable = []statemachine.Pair[string, string]{{State: "On", Phase: "Dark"}, {State: "On", Phase: "Dark"}}
		}, []named{{"On", "Dark", statemachine.ErrDuplicate}}},
		{"rule in a transitional phase", func(d *def) {
			d.Rules = append(d.Rules, statemachine.Rule[string, string]{State: "Off", Phase: "Brightening", Begin: "Dimming"})
		},
			[]named{{"Off", "Brightening", statemachine.ErrInvalid}}},
		{"settled in a transitional phase", func(d *def) {
			d.Settled = append(d.Settled, statemachine.Settle[string, string]{State: "On", Phase: "Brightening"})
		},
			[]named{{"On", "Brightening", statemachine.ErrInvalid}}},
		{"unreachable in a transitional phase", func(d *def) {
			d.Unreachable = append(d.Unreachable, statemachine.Pair[string, string]{State: "On", Phase: "Brightening"})
		}, []named{{"On", "Brightening", statemachine.ErrInvalid}}},
		{"rule beginning a resting phase", func(d *def) { d.Rules[0].Begin = "Lit" }, []named{{"On", "Dark", statemachine.ErrInvalid}}},
		{"rule leaving a terminal phase", func(d *def) { d.Phases[2].Type = statemachine.Terminal }, []named{{"Off", "Lit", statemachine.ErrTerminalExit}}},
		{"transitional without steps", func(d *def) { d.Phases[1].Steps = nil }, []named{{phase: "Brightening", err: statemachine.ErrIncomplete}}},
		{"transitional without completion", func(d *def) { d.Phases[1].Completion = nil }, []named{{phase: "Brightening", err: statemachine.ErrIncomplete}}},
		{"transitional completing into an undeclared phase", func(d *def) { d.Phases[1].Then = "Glowing" }, []named{{phase: "Brightening", err: statemachine.ErrIncomplete}}},
		{"transitional completing into itself", func(d *def) { d.Phases[1].Then = "Brightening" }, []named{{phase: "Brightening", err: statemachine.ErrInvalid}}},
		{"duplicate step", func(d *def) { d.Phases[1].Steps = []string{"switch_on", "switch_on"} }, []named{{phase: "Brightening", err: statemachine.ErrDuplicate}}},
		{"empty step name", func(d *def) { d.Phases[1].Steps = []string{""} }, []named{{phase: "Brightening", err: statemachine.ErrInvalid}}},
		{"contradicting completion", func(d *def) { d.Phases[1].Completion = append(d.Phases[1].Completion, statemachine.Not("lit")) },
			[]named{{phase: "Brightening", err: statemachine.ErrContradiction}}},
		{"unnamed condition", func(d *def) { d.Phases[1].Completion = []statemachine.Require{statemachine.Is("")} }, []named{{phase: "Brightening", err: statemachine.ErrInvalid}}},
		{"steps on a resting phase", func(d *def) { d.Phases[0].Steps = []string{"wait"} }, []named{{phase: "Dark", err: statemachine.ErrInvalid}}},
		{"two fault phases", func(d *def) {
			d.Phases = append(d.Phases, statemachine.PhaseSpec[string]{Phase: "Broken", Type: statemachine.Fault}, statemachine.PhaseSpec[string]{Phase: "Fused", Type: statemachine.Fault})
		}, []named{{phase: "Fused", err: statemachine.ErrDuplicate}}},
		{"health on a transitional phase", func(d *def) {
			d.Phases[1].Health, d.Phases[1].Repair = []statemachine.Require{statemachine.Is("lit")}, "Dimming"
		}, []named{{phase: "Brightening", err: statemachine.ErrInvalid}}},
		{"health without a repair", func(d *def) { d.Phases[2].Health = []statemachine.Require{statemachine.Is("lit")} },
			[]named{{phase: "Lit", err: statemachine.ErrIncomplete}}},
		{"repair that is not an operation", func(d *def) {
			d.Phases[2].Health, d.Phases[2].Repair = []statemachine.Require{statemachine.Is("lit")}, "Dark"
		}, []named{{phase: "Lit", err: statemachine.ErrInvalid}}},
		{"request served from an operation", func(d *def) {
			d.Requests = []statemachine.RequestRule[string]{{Name: "flash", Serve: []statemachine.Edge[string]{{From: "Brightening", To: "Dimming"}}}}
		}, []named{{phase: "Brightening", err: statemachine.ErrInvalid}}},
		{"request served nowhere", func(d *def) { d.Requests = []statemachine.RequestRule[string]{{Name: "flash"}} },
			[]named{{err: statemachine.ErrIncomplete}}},
		{"request refused without a reason", func(d *def) {
			d.Requests = []statemachine.RequestRule[string]{{Name: "flash", Refuse: []string{"Dark"}}}
		}, []named{{err: statemachine.ErrInvalid}}},
		{"timer beginning a resting phase", func(d *def) {
			d.Timers = []statemachine.Timer[string]{{Name: "dim", Phase: "Lit", After: time.Hour, Begin: "Dark"}}
		}, []named{{phase: "Lit", err: statemachine.ErrInvalid}}},
		{"timers named twice", func(d *def) {
			t := statemachine.Timer[string]{Name: "dim", Phase: "Lit", After: time.Hour, Begin: "Dimming"}
			d.Timers = []statemachine.Timer[string]{t, t}
		}, []named{{err: statemachine.ErrDuplicate}}},
		{"phase unreachable from the initial phase", func(d *def) {
			d.Phases = append(d.Phases, statemachine.PhaseSpec[string]{Phase: "Attic"})
			d.Settled = append(d.Settled, statemachine.Settle[string, string]{State: "On", Phase: "Attic"}, statemachine.Settle[string, string]{State: "Off", Phase: "Attic"})
		}, []named{{phase: "Attic", err: statemachine.ErrUnreachable}}},
		{"sanctioned cycle that is no edge", func(d *def) { d.Cycles = []statemachine.Edge[string]{{From: "Dark", To: "Lit"}} }, []named{{phase: "Dark", err: statemachine.ErrInvalid}}},
		{"pair not covered", func(d *def) { d.Rules = d.Rules[:1] }, []named{{"Off", "Lit", statemachine.ErrUncovered}}},
		{"intent held constant loops", func(d *def) { d.Phases[3].Then = "Lit" }, []named{
			{"Off", "Brightening", statemachine.ErrNoProgress}, {"Off", "Lit", statemachine.ErrNoProgress}, {"Off", "Dimming", statemachine.ErrNoProgress}}},
		{"declared unreachable, reached by an operation", func(d *def) {
			d.Rules = d.Rules[:1]
			d.Unreachable = []statemachine.Pair[string, string]{{State: "Off", Phase: "Lit"}}
			d.Phases = d.Phases[:3]
		}, []named{{"Off", "Brightening", statemachine.ErrNoProgress}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := light()
			tt.edit(&d)
			m, err := statemachine.New(d)
			if err == nil {
				t.Fatalf("New accepted the definition: %s", m.Mermaid())
			}
			got := offenders(err)
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("error does not name %+v; got %+v:\n%v", w, got, err)
				}
				if !errors.Is(err, w.err) {
					t.Errorf("errors.Is(err, %v) = false", w.err)
				}
			}
		})
	}
}

// A path from a point of no return back to it is rejected unless sanctioned.
func TestNewNoReturn(t *testing.T) {
	d := runtimeDomain()
	d.Cycles = nil
	_, err := statemachine.New(d)
	var pe *statemachine.PhaseError[string]
	if !errors.Is(err, statemachine.ErrNoReturn) || !errors.As(err, &pe) || pe.Phase != "Deleting" {
		t.Fatalf("want ErrNoReturn naming Deleting, got %v", err)
	}
	if !strings.Contains(err.Error(), "Deleting → Deleted → Creating → Created → Deleting") {
		t.Errorf("error does not show the path back: %v", err)
	}

	g := gateway()
	g.Phases[6].Then = Created // Deleting completing into Created leads back
	if _, err := statemachine.New(g); !errors.Is(err, statemachine.ErrNoReturn) {
		t.Fatalf("want ErrNoReturn, got %v", err)
	}
}

// TestStuckGatewayHoles rebuilds a gateway machine from task handlers as they
// were when a gateway got stuck for ever: handleDeletedState matched Deleted
// in Created, Started and Stopped; handleStoppedState matched only Stopped in
// Started; nothing handled Restarting. The build names every pair no handler
// covers, so such a machine never runs.
func TestStuckGatewayHoles(t *testing.T) {
	d := gateway()
	d.Settled = []statemachine.Settle[State, Phase]{
		{State: Running, Phase: Started},
		{State: Stopped, Phase: StoppedPhase},
		{State: Deleted, Phase: DeletedPhase, Final: true},
	}
	d.Rules = []statemachine.Rule[State, Phase]{
		{State: Running, Phase: Created, Begin: Starting},
		{State: Running, Phase: StoppedPhase, Begin: Starting},
		{State: Stopped, Phase: Started, Begin: Stopping},
		{State: Deleted, Phase: Created, Begin: Deleting},
		{State: Deleted, Phase: Started, Begin: Deleting},
		{State: Deleted, Phase: StoppedPhase, Begin: Deleting},
		{State: Deleted, Phase: Failed, Begin: Deleting},
	}
	_, err := statemachine.New(d)
	if !errors.Is(err, statemachine.ErrUncovered) {
		t.Fatalf("want ErrUncovered, got %v", err)
	}
	want := []statemachine.Pair[State, Phase]{
		{State: Stopped, Phase: Created},
		{State: Restarting, Phase: Created},
		{State: Restarting, Phase: Started},
		{State: Restarting, Phase: StoppedPhase},
	}
	var got []statemachine.Pair[State, Phase]
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var pe *statemachine.PairError[State, Phase]
		if errors.As(e, &pe) && errors.Is(pe, statemachine.ErrUncovered) {
			got = append(got, statemachine.Pair[State, Phase]{State: pe.State, Phase: pe.Phase})
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("uncovered pairs = %v, want %v\n%v", got, want, err)
	}
	if !strings.Contains(err.Error(), "ApiGateway (State Stopped, Phase Created)") {
		t.Errorf("message does not name the pair: %v", err)
	}
}

// New never panics, never mutates its input, and every machine it builds
// keeps its promise: from any status it can be in, with the intent held
// constant and every step succeeding, Decide never fails and the object settles.
func TestNewProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		states := []string{"A", "B", "C"}[:rapid.IntRange(1, 3).Draw(t, "states")]
		phases := []string{"p0", "p1", "p2", "p3", "p4"}[:rapid.IntRange(1, 5).Draw(t, "phases")]
		pick := func(label string, from []string) string { return rapid.SampledFrom(from).Draw(t, label) }
		d := def{Name: "random", States: states, Initial: pick("initial", phases)}
		var transitional []string
		for _, p := range phases {
			ps := statemachine.PhaseSpec[string]{Phase: p, Type: statemachine.PhaseType(rapid.IntRange(0, 3).Draw(t, "kind")),
				NoReturn: rapid.IntRange(0, 3).Draw(t, "noReturn") == 0}
			if rapid.IntRange(0, 2).Draw(t, "transitional") == 0 {
				ps.Type = statemachine.Transitional
			}
			if ps.Type == statemachine.Transitional {
				ps.Steps = []string{"s1", "s2"}[:rapid.IntRange(1, 2).Draw(t, "steps")]
				ps.Completion = []statemachine.Require{statemachine.Is("c_" + p)}
				ps.Then = pick("then", phases)
				transitional = append(transitional, p)
			}
			d.Phases = append(d.Phases, ps)
		}
		// Mostly cover each pair of a non-transitional phase once; sometimes not,
		// sometimes twice.
		for _, ps := range d.Phases {
			if ps.Type == statemachine.Transitional {
				continue
			}
			for _, st := range states {
				switch rapid.IntRange(0, 9).Draw(t, "cover") {
				case 0:
				case 1:
					d.Unreachable = append(d.Unreachable, statemachine.Pair[string, string]{State: st, Phase: ps.Phase})
				case 2, 3, 4:
					d.Settled = append(d.Settled, statemachine.Settle[string, string]{State: st, Phase: ps.Phase, Final: rapid.Bool().Draw(t, "final")})
				default:
					if len(transitional) > 0 {
						d.Rules = append(d.Rules, statemachine.Rule[string, string]{State: st, Phase: ps.Phase, Begin: pick("begin", transitional)})
					}
				}
			}
		}
		for range rapid.IntRange(0, 1).Draw(t, "extra rules") {
			d.Rules = append(d.Rules, statemachine.Rule[string, string]{State: pick("s", states), Phase: pick("p", phases), Begin: pick("begin", phases)})
		}
		for range rapid.IntRange(0, 1).Draw(t, "cycles") {
			d.Cycles = append(d.Cycles, statemachine.Edge[string]{From: pick("from", phases), To: pick("to", phases)})
		}
		before := fmt.Sprintf("%#v", d)
		m, err := statemachine.New(d)
		if fmt.Sprintf("%#v", d) != before {
			t.Fatal("New modified its input")
		}
		if err != nil {
			return
		}
		// Walk: random admitted intents, steps always succeed, conditions always hold.
		st := m.NewStatus()
		intent := pick("intent", states)
		if m.Admit(intent, st.Phase) != nil {
			return
		}
		ids := 0
		for range 200 {
			if rapid.IntRange(0, 9).Draw(t, "change") == 0 {
				if s := pick("intent", states); m.Admit(s, st.Phase) == nil {
					intent = s
				}
			}
			for _, c := range m.Conditions() {
				st = st.Observe(time0, statemachine.Observation{Name: c, Status: true})
			}
			dec, err := m.Decide(intent, st, now)
			if err != nil {
				t.Fatalf("Decide(%v, %+v): %v", intent, st, err)
			}
			var r statemachine.Report
			switch dec.Action {
			case statemachine.Nothing, statemachine.Hold:
				continue
			case statemachine.Wait:
				t.Fatalf("waiting although every condition holds: %+v", dec)
			case statemachine.Begin:
				ids++
				r.OperationID = fmt.Sprint(ids)
			case statemachine.Run:
				r.Outcome = statemachine.Done
			}
			if st, err = m.Apply(st, dec, r); err != nil {
				t.Fatal(err)
			}
		}
		// Hold the intent: it settles within one pass over the phases per phase.
		for range len(phases)*len(phases)*4 + 4 {
			dec, err := m.Decide(intent, st, now)
			if err != nil {
				t.Fatal(err)
			}
			if dec.Action == statemachine.Nothing || dec.Action == statemachine.Hold {
				return
			}
			r := statemachine.Report{OperationID: "x", Outcome: statemachine.Done}
			if st, err = m.Apply(st, dec, r); err != nil {
				t.Fatal(err)
			}
		}
		t.Fatalf("intent %v never settled; status %+v\n%s", intent, st, m.Mermaid())
	})
}

// A pair declared unreachable is a hole wherever the machine can still reach
// it, the Fault phase included: there it must not count as an end.
func TestDeclaredUnreachableFaultPairIsAHole(t *testing.T) {
	d := def{Name: "m", States: []string{"A"}, Initial: "p1",
		Phases: []statemachine.PhaseSpec[string]{
			{Phase: "p0", Type: statemachine.Fault},
			{Phase: "p1", Type: statemachine.Transitional, Steps: []string{"s1"},
				Completion: []statemachine.Require{statemachine.Is("c")}, Then: "p0"},
		},
		Unreachable: []statemachine.Pair[string, string]{{State: "A", Phase: "p0"}},
	}
	if _, err := statemachine.New(d); !errors.Is(err, statemachine.ErrNoProgress) {
		t.Fatalf("New = %v, want ErrNoProgress: every object ends in (A, p0), declared unreachable", err)
	}
}
