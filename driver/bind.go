package driver

import (
	"context"
	"maps"
	"slices"

	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// Step is a step of a machine's operation bound to its action: the name the
// machine knows it by and the function that does it, declared once. Make one
// with [NewStep] or [Do], name it in a phase with [Operation] (or by
// [Step.Name] in a statemachine.PhaseSpec), and give it to the builder that
// drives the machine (manager.Drive) or to [Config.Bind]. The zero Step binds
// nothing.
type Step[Spec, Status any] struct {
	name string
	run  StepFunc[Spec, Status]
}

// NewStep returns the step called name that runs run. Spec and Status are
// inferred from run.
func NewStep[Spec, Status any](name string, run StepFunc[Spec, Status]) Step[Spec, Status] {
	return Step[Spec, Status]{name: name, run: run}
}

// Do returns the step called name that runs do, for the common step that
// either does its work or fails: a nil error is [statemachine.Done], an
// error [statemachine.Failed] (retried with backoff), an error matching
// [ErrTerminal] a terminal failure. A step that must report Progressed or
// Pending is made with [NewStep].
func Do[Spec, Status any](name string, do func(ctx context.Context, obj *store.Object[Spec, Status], opID string) error) Step[Spec, Status] {
	return NewStep(name, func(ctx context.Context, obj *store.Object[Spec, Status], opID string) (statemachine.Outcome, error) {
		if err := do(ctx, obj, opID); err != nil {
			return statemachine.Failed, err
		}
		return statemachine.Done, nil
	})
}

// Name returns the name the machine knows the step by.
func (s Step[Spec, Status]) Name() string { return s.name }

// Condition is a condition of a machine's completions bound to its
// observer, declared once. Make one with [Observe]; require it in a phase
// with [Condition.Is] and [Condition.Not], and give it to the builder that
// drives the machine (manager.Drive) or to [Config.Bind].
type Condition[Spec, Status any] struct {
	name    string
	observe ObserverFunc[Spec, Status]
}

// Observe returns the condition called name, observed by observe. Spec and
// Status are inferred from observe.
func Observe[Spec, Status any](name string, observe ObserverFunc[Spec, Status]) Condition[Spec, Status] {
	return Condition[Spec, Status]{name: name, observe: observe}
}

// Name returns the name the machine knows the condition by.
func (c Condition[Spec, Status]) Name() string { return c.name }

// Is returns the requirement that the condition holds.
func (c Condition[Spec, Status]) Is() statemachine.Require { return statemachine.Is(c.name) }

// Not returns the requirement that the condition does not hold.
func (c Condition[Spec, Status]) Not() statemachine.Require { return statemachine.Not(c.name) }

// Operation begins the declaration of the transitional phase that runs
// steps, in order: its steps are named by the values that do them, so a
// step's name is written once. Finish it with [OperationSpec.Until] and
// [OperationSpec.Then]:
//
//	driver.Operation(Booting, boot).Until(running.Is()).Then(Up)
//
// is the statemachine.PhaseSpec {Phase: Booting, Type: Transitional, Steps:
// []string{"boot"}, Completion: []Require{Is("running")}, Then: Up}.
func Operation[P comparable, Spec, Status any](phase P, steps ...Step[Spec, Status]) OperationSpec[P] {
	spec := statemachine.PhaseSpec[P]{Phase: phase, Type: statemachine.Transitional}
	for _, s := range steps {
		spec.Steps = append(spec.Steps, s.name)
	}
	return OperationSpec[P]{spec: spec}
}

// OperationSpec is a transitional phase being declared by [Operation].
type OperationSpec[P comparable] struct {
	spec statemachine.PhaseSpec[P]
}

// Until returns the operation completed when every requirement holds,
// after its steps are done (statemachine.PhaseSpec.Completion).
func (o OperationSpec[P]) Until(completion ...statemachine.Require) OperationSpec[P] {
	o.spec.Completion = append(slices.Clip(o.spec.Completion), completion...)
	return o
}

// Then returns the declaration of the phase, which moves to next on
// completion. Set the other fields of statemachine.PhaseSpec (Bounds,
// FailTo…) on the value it returns.
func (o OperationSpec[P]) Then(next P) statemachine.PhaseSpec[P] {
	o.spec.Then = next
	return o.spec
}

// Bind returns cfg with the actions of steps and the observers of
// conditions added to Config.Steps and Config.Observers under their names.
// It does not modify cfg's maps. A name bound twice, or already in cfg, is
// reported by [New] as an action or observer given twice.
func (cfg Config[Spec, Status]) Bind(steps []Step[Spec, Status], conditions []Condition[Spec, Status]) Config[Spec, Status] {
	var twice []string
	cfg.Steps, twice = bind(cfg.Steps, steps, func(s Step[Spec, Status]) (string, StepFunc[Spec, Status]) { return s.name, s.run },
		"action of step ", twice)
	cfg.Observers, twice = bind(cfg.Observers, conditions,
		func(c Condition[Spec, Status]) (string, ObserverFunc[Spec, Status]) { return c.name, c.observe }, "observer of condition ", twice)
	cfg.twice = append(slices.Clip(cfg.twice), twice...)
	return cfg
}

// bind returns a copy of m with each of values added under its name, and
// twice with what (followed by the name) appended for each name bound
// already. With no values, it returns m itself.
func bind[V, F any](m map[string]F, values []V, entry func(V) (string, F), what string, twice []string) (map[string]F, []string) {
	if len(values) == 0 {
		return m, twice
	}
	out := make(map[string]F, len(m)+len(values))
	maps.Copy(out, m)
	for _, v := range values {
		name, f := entry(v)
		if _, dup := out[name]; dup {
			twice = append(twice, what+name)
		}
		out[name] = f
	}
	return out, twice
}
