package drivertest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tendhq/tend/statemachine"
)

// End is an end of a run the harness accepts beside those it explains
// itself (see [Config.Accept]): a document held in a Fault phase for a
// reason the harness cannot see, such as a backend of the world that fails
// an operation on its own without any step call failing.
type End[S, P comparable] struct {
	// Phase is the Fault phase the document is held in. Required.
	Phase P
	// Intents are the intents the end is accepted with; empty means any.
	Intents []S
	// Reason says why the end is correct, for whoever reads the test.
	// Required.
	Reason string
}

// validateEnds returns the problems of cfg's accepted ends.
func validateEnds[S, P comparable](m *statemachine.Machine[S, P], ends []End[S, P]) []string {
	var problems []string
	for i, e := range ends {
		if ps, ok := m.Spec(e.Phase); !ok || ps.Type != statemachine.Fault {
			problems = append(problems, fmt.Sprintf("Accept[%d]: %v is not a Fault phase of machine %s", i, e.Phase, m.Name()))
		}
		if strings.TrimSpace(e.Reason) == "" {
			problems = append(problems, fmt.Sprintf("Accept[%d]: no Reason", i))
		}
	}
	return problems
}

// opRecord is what a run saw of one operation's step calls.
type opRecord struct {
	name       string         // op1, op2, …: stable across replays
	calls      map[string]int // step → calls
	order      []string       // the steps called, first call first
	lastFailed bool           // the last step call failed, whoever failed it
	cut        bool           // the harness cut a replica off, slowed a call past a lease or held it paused while time passed (since an operator last resumed it from Fault)
}

// op returns the record of operation id, made on first sight. r.mu must be
// held.
func (r *run[Spec, Status, S, P]) op(id string) *opRecord {
	rec, ok := r.ops[id]
	if !ok {
		rec = &opRecord{name: fmt.Sprintf("op%d", len(r.ops)+1), calls: map[string]int{}}
		r.ops[id] = rec
	}
	return rec
}

// opName returns the stable name of operation id.
func (r *run[Spec, Status, S, P]) opName(id string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.op(id).name
}

// calls describes the step calls of rec: "create_disk ×1, power_on ×2".
func (rec *opRecord) describeCalls() string {
	if len(rec.order) == 0 {
		return "no step call"
	}
	parts := make([]string, len(rec.order))
	for i, s := range rec.order {
		parts[i] = fmt.Sprintf("%s ×%d", s, rec.calls[s])
	}
	return strings.Join(parts, ", ")
}

// unexplainedHold returns why a document held in the Fault phase with
// intent and status st is held for no reason the run can name, or "" when
// something explains it: a terminal failure, a last step call that failed
// (the harness's fault or the world's own), a replica cut off or a call
// slowed past a lease during the operation, a refused intent, or an end
// the test accepts.
func (r *run[Spec, Status, S, P]) unexplainedHold(intent S, st *statemachine.Status[S, P]) string {
	if st.Refused != nil {
		return ""
	}
	for _, e := range r.cfg.Accept {
		if e.Phase == st.Phase && (len(e.Intents) == 0 || slices.Contains(e.Intents, intent)) {
			return ""
		}
	}
	f := st.Failure
	if f == nil {
		return fmt.Sprintf("held in the Fault phase %v with intent %v, but no failure is recorded", st.Phase, intent)
	}
	if f.Cause == statemachine.CauseTerminal {
		return ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.op(f.Operation.ID)
	if rec.lastFailed || rec.cut {
		return ""
	}
	if r.asserted != "" {
		// The machine acts on what the operator told it of the world,
		// which the harness cannot check: a step skipped whose effect a
		// completion needs, a phase moved to that the world is not in.
		r.logf("  the Fault is not held against the driver: %s", r.asserted)
		return ""
	}
	why := fmt.Sprintf("held in the Fault phase %v, but nothing explains it: operation %s (%v) failed (%s: %s), and every step call succeeded: %s",
		st.Phase, rec.name, f.Operation.Phase, f.Cause, f.Reason, rec.describeCalls())
	if pending := r.pending(f.Operation.Phase, st); pending != "" {
		why += "; conditions that never held: " + pending
	}
	return why
}

// pending returns the completion conditions of phase p that st does not
// show holding, comma-separated.
func (r *run[Spec, Status, S, P]) pending(p P, st *statemachine.Status[S, P]) string {
	ps, ok := r.cfg.Machine.Spec(p)
	if !ok {
		return ""
	}
	var out []string
	for _, req := range ps.Completion {
		if c, ok := st.Condition(req.Condition); !ok || c.Status != req.Status {
			out = append(out, req.String())
		}
	}
	return strings.Join(out, ", ")
}
