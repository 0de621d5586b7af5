package oncall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// View is a document as an operator sees it: its meta, the machine's
// part of its status with states and phases as text, and its spec and
// status as stored.
type View struct {
	Meta store.Meta
	// State is the intent the machine serves (status.target) and Phase the
	// document's progress (status.phase), as their String forms. Both are
	// empty until a controller first wrote the status.
	State, Phase string
	// Since is when the document entered Phase.
	Since      time.Time
	Operation  *statemachine.Operation[string]
	Failure    *statemachine.Failure[string]
	Refused    *statemachine.Refusal[string]
	Conditions []statemachine.Condition
	Paused     *statemachine.Pause
	Commands   []statemachine.Command
	// ObservedGeneration is the generation of the spec the controller
	// last decided on, and ObservedDeletion whether it had seen the
	// document's deletion requested.
	ObservedGeneration int64
	ObservedDeletion   bool
	// Spec and Status are the document's spec and status as stored.
	Spec, Status json.RawMessage
}

// statePaths are the status fields that hold a state or a phase: a user's
// type that is not a TextMarshaler writes them as numbers.
var statePaths = [][]string{
	{"phase"}, {"target"}, {"operation", "phase"}, {"operation", "from"},
	{"failure", "operation", "phase"}, {"failure", "operation", "from"}, {"refused", "intent"},
}

// Decode returns the document d as an Object. States and phases a user's
// type writes as JSON numbers become their decimal text.
func Decode(d store.Document) (View, error) {
	o := View{Meta: d.Meta, Spec: d.Spec, Status: d.Status}
	if len(bytes.TrimSpace(d.Status)) == 0 {
		return o, nil
	}
	st, err := machineStatus(d)
	if err != nil {
		return View{}, err
	}
	o.State, o.Phase, o.Since = st.Target, st.Phase, st.Since
	o.Operation, o.Failure, o.Refused = st.Operation, st.Failure, st.Refused
	o.Conditions, o.Paused, o.Commands = st.Conditions, st.Paused, st.Commands
	o.ObservedGeneration, o.ObservedDeletion = st.ObservedGeneration, st.ObservedDeletion
	return o, nil
}

// machineStatus decodes the machine's part of the status of d, a status
// written: states and phases a user's type writes as JSON numbers become
// their decimal text.
func machineStatus(d store.Document) (statemachine.Status[string, string], error) {
	var st statemachine.Status[string, string]
	if err := json.Unmarshal(d.Status, &st); err != nil {
		// Some state or phase is not a string: write each as its text.
		var raw map[string]any
		dec := json.NewDecoder(bytes.NewReader(d.Status))
		dec.UseNumber()
		if dec.Decode(&raw) != nil {
			return st, fmt.Errorf("oncall: the status of %s %q: %w", d.Meta.Kind, d.Meta.Key, err)
		}
		for _, p := range statePaths {
			textAt(raw, p)
		}
		b, _ := json.Marshal(raw)
		if err := json.Unmarshal(b, &st); err != nil {
			return st, fmt.Errorf("oncall: the status of %s %q: %w", d.Meta.Kind, d.Meta.Key, err)
		}
	}
	return st, nil
}

// textAt replaces the JSON number at path in v with its text.
func textAt(v map[string]any, path []string) {
	for _, name := range path[:len(path)-1] {
		next, ok := v[name].(map[string]any)
		if !ok {
			return
		}
		v = next
	}
	if n, ok := v[path[len(path)-1]].(json.Number); ok {
		v[path[len(path)-1]] = n.String()
	}
}

// InFault reports whether o is in the Fault phase of m.
func (o View) InFault(m *statemachine.Machine[string, string]) bool {
	ps, ok := m.Spec(o.Phase)
	return ok && ps.Type == statemachine.Fault
}

// FailedStep returns the step that failed last and whether one did: in
// the Fault phase, the step of the failure; in an operation, the step it is
// at when that step has failed attempts.
func (o View) FailedStep(m *statemachine.Machine[string, string]) (string, bool) {
	if o.InFault(m) {
		if o.Failure != nil && o.Failure.Step != "" {
			return o.Failure.Step, true
		}
		return "", false
	}
	op := o.Operation
	if op == nil || op.Attempts == 0 {
		return "", false
	}
	ps, ok := m.Spec(op.Phase)
	if !ok {
		return "", false
	}
	i := slices.IndexFunc(ps.Steps, func(s string) bool { return !slices.Contains(op.Done, s) })
	if i < 0 {
		return "", false
	}
	return ps.Steps[i], true
}

// Stuck returns why o needs an operator's eye at now, by the machine m:
// paused, failing, refused, in Fault, past its deadline. None means it is
// not stuck.
func (o View) Stuck(m *statemachine.Machine[string, string], now time.Time) []string {
	var why []string
	if p := o.Paused; p != nil {
		why = append(why, fmt.Sprintf("paused by %s: %s", p.By, p.Reason))
	}
	if step, ok := o.FailedStep(m); ok && !o.InFault(m) {
		why = append(why, fmt.Sprintf("failing: step %s, attempt %d: %s", step, o.Operation.Attempts, o.Operation.LastError))
	}
	if r := o.Refused; r != nil {
		why = append(why, fmt.Sprintf("refused: intent %s: %s", r.Intent, r.Reason))
	}
	if o.InFault(m) {
		if f := o.Failure; f != nil {
			why = append(why, fmt.Sprintf("fault: %s: %s", f.Cause, f.Reason))
		} else {
			why = append(why, "fault")
		}
	}
	if ps, ok := m.Spec(o.Phase); ok && ps.Type == statemachine.Transitional && o.State != "" {
		st := statemachine.Status[string, string]{Phase: o.Phase, Target: o.State, Since: o.Since, Operation: o.Operation, Conditions: o.Conditions}
		if d, err := m.Decide(o.State, st, now); err == nil && !d.Deadline.IsZero() && now.After(d.Deadline) {
			why = append(why, fmt.Sprintf("past deadline: %s since %s", o.Phase, d.Deadline.UTC().Format(time.RFC3339)))
		}
	}
	return why
}
