package drivertest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// carried returns the operator's retry, skip and move commands of before
// that after no longer holds: the write from before to after carried
// them out or refused them. (A request command stays until its token is
// served.)
func carried[S, P comparable](before, after *statemachine.Status[S, P]) []statemachine.Command {
	var out []statemachine.Command
	for _, c := range before.Commands {
		if c.Verb != statemachine.VerbRequest && !slices.ContainsFunc(after.Commands, func(d statemachine.Command) bool { return d.ID == c.ID }) {
			out = append(out, c)
		}
	}
	return out
}

// intentOf returns the intent the driver serves for obj: the final state
// once its deletion is requested.
func (r *run[Spec, Status, S, P]) intentOf(obj *store.Object[Spec, Status]) S {
	if obj.Terminating() && r.final != nil {
		return *r.final
	}
	return r.cfg.Machine.CarryIntent(obj.Spec.Intent())
}

// commanded returns what the machine makes of the operator's commands of
// before, the status a write of obj started from, when that write carried
// some out: the status they lead to and their outcomes. ok is false when
// the write carried out none. The driver carries out the commands it
// reads, before it decides anything, in one write of their effect: that
// write's status is the one returned.
func (r *run[Spec, Status, S, P]) commanded(obj *store.Object[Spec, Status], before statemachine.Status[S, P]) (_ statemachine.Status[S, P], _ []statemachine.CommandOutcome, ok bool) {
	cmds := carried(&before, status[Spec, Status, S, P](obj))
	if len(cmds) == 0 {
		return before, nil, false
	}
	if before.Phase == *new(P) {
		before.Phase = r.cfg.Machine.Initial()
	}
	next, outcomes := r.cfg.Machine.ApplyCommands(r.intentOf(obj), before, time.Now())
	outcomes = slices.DeleteFunc(outcomes, func(o statemachine.CommandOutcome) bool {
		return !slices.ContainsFunc(cmds, func(c statemachine.Command) bool { return c.ID == o.Command.ID })
	})
	return next, outcomes, true
}

// commandsCarried does, as the driver's write that carried out operator
// commands is stored (before its next step call), what those the machine
// applies change for the run's checks: a retry or a skip forgets the
// step's failed attempts, so its next call comes at once; an operation
// resumed from Fault has a new deadline, so only what happens from now on
// explains another Fault; and a skip or a move tells the machine something
// of the world the harness cannot check.
func (r *run[Spec, Status, S, P]) commandsCarried(obj *store.Object[Spec, Status], before statemachine.Status[S, P]) {
	_, outcomes, ok := r.commanded(obj, before)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range outcomes {
		if !o.Applied {
			continue
		}
		r.streak = nil
		switch o.Command.Verb {
		case statemachine.VerbRetry:
			if o.To != "" {
				rec := r.op(o.Operation)
				rec.lastFailed, rec.cut = false, len(r.partitioned) > 0
			}
		case statemachine.VerbSkip:
			if r.asserted == "" {
				r.asserted = fmt.Sprintf("an operator skipped step %s of %s", o.Step, r.op(o.Operation).name)
			}
		case statemachine.VerbMove:
			if r.asserted == "" {
				r.asserted = "an operator moved the document to " + o.To
			}
		}
	}
}

// checkCommands checks a write of obj that carried out operator commands
// of before, the status stored before it: it must store what the machine
// makes of them. It reports whether the write moved the phase as the
// commands ask (an operator's move or a resumed operation, along no edge
// of the machine).
func (r *run[Spec, Status, S, P]) checkCommands(obj *store.Object[Spec, Status], before statemachine.Status[S, P], phase P, revision int64) bool {
	want, outcomes, ok := r.commanded(obj, before)
	if !ok {
		return false
	}
	r.seen.carried(outcomes)
	got := status[Spec, Status, S, P](obj)
	if g, w := r.sketch(got, phase), r.sketch(&want, want.Phase); g != w {
		r.problem("the write that carried out %s (revision %d) stored %s; the machine makes the status read %s",
			describeOutcomes(outcomes), revision, g, w)
		return false
	}
	return want.Phase == phase && before.Phase != phase
}

// sketch describes what an operator's command changes of st, in phase.
func (r *run[Spec, Status, S, P]) sketch(st *statemachine.Status[S, P], phase P) string {
	op := "no operation"
	if o := st.Operation; o != nil {
		op = fmt.Sprintf("%s (%v), steps done %v, %d failed attempts", r.opName(o.ID), o.Phase, o.Done, o.Attempts)
	}
	return fmt.Sprintf("phase %v, %s, failure recorded %t", phase, op, st.Failure != nil)
}

// describeOutcomes describes operator commands and what the machine makes
// of them, for a report.
func describeOutcomes(outcomes []statemachine.CommandOutcome) string {
	parts := make([]string, len(outcomes))
	for i, o := range outcomes {
		c := o.Command
		what := "the operator's " + string(c.Verb)
		switch c.Verb {
		case statemachine.VerbSkip:
			what += " of step " + c.Step
		case statemachine.VerbMove:
			what += " to " + c.Phase
		}
		if o.Applied {
			parts[i] = what + ", which the machine applies"
		} else {
			parts[i] = what + ", which the machine refuses (" + o.Reason + ")"
		}
	}
	return strings.Join(parts, "; ")
}

// pendingCommands describes the operator's retry, skip and move commands
// of st, which the driver carries out or refuses as soon as it reads the
// document unpaused: "" when there are none.
func pendingCommands[S, P comparable](st *statemachine.Status[S, P]) string {
	var out []string
	for _, c := range st.Commands {
		if c.Verb != statemachine.VerbRequest {
			out = append(out, fmt.Sprintf("%s %s", c.Verb, c.ID))
		}
	}
	return strings.Join(out, ", ")
}

// worldProblem records a broken check of the world, unless an operator's
// skip or move told the machine what the harness cannot check: the world
// may then differ from the document's phase for good, and the run logs the
// check instead.
func (r *run[Spec, Status, S, P]) worldProblem(format string, args ...any) {
	r.mu.Lock()
	asserted := r.asserted
	r.mu.Unlock()
	if asserted != "" {
		r.logf("  not held against the driver (%s): "+format, append([]any{asserted}, args...)...)
		return
	}
	r.problem(format, args...)
}

// assertedUnchecked describes the skip or move an operator's command told
// the machine of the world, or "" when none was carried out or a command
// is still pending in obj: after one, the world may stay apart from what
// the document records for good (a step skipped whose effect never
// happened can make every later step of every operation fail), so a
// document that never settles is not held against the driver; a command
// never carried out still is.
func (r *run[Spec, Status, S, P]) assertedUnchecked(obj *store.Object[Spec, Status]) string {
	if pendingCommands(status[Spec, Status, S, P](obj)) != "" {
		return ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.asserted
}
