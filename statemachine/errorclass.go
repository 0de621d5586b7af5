package statemachine

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrorClass declares a class of step errors and how a controller treats
// them: final (the operation fails at once, to its FailTo phase) or retried
// on a schedule of the class's own. A class with neither is retried on the
// controller's backoff, and still names the errors it matches in status,
// history and metrics.
//
// An error that carries its own delay (a Retry-After a server sent) is
// retried after that delay whatever its class, unless the class is final.
type ErrorClass struct {
	// Name names the class in status ([Operation.ErrorClass]), history and
	// metrics labels. Required, unique within the machine.
	Name string `json:"name"`
	// Steps limits the class to these steps of the machine; empty means
	// every step. For a step's error, the classes that name the step are
	// tried before those that name none (see [Machine.Classify]).
	Steps []string `json:"steps,omitempty"`
	// Match reports whether an error belongs to the class: [ErrorIs] or
	// [ErrorAs], or a function of the user's. Required.
	Match ErrorMatcher `json:"-"`
	// Final makes the class's errors final: the step is not retried, and
	// the operation moves to its FailTo phase at once, as for a terminal
	// failure.
	Final bool `json:"final,omitempty"`
	// Retry is the class's schedule: after the n-th consecutive failure of
	// a step the step runs again no sooner than Retry[n-1], the last delay
	// repeating. Each delay must be positive. Empty means the controller's
	// backoff.
	Retry []time.Duration `json:"retry,omitempty"`
}

// ErrorMatcher reports whether an error belongs to an [ErrorClass].
type ErrorMatcher func(err error) bool

// ErrorIs matches the errors that match target with [errors.Is].
func ErrorIs(target error) ErrorMatcher {
	return func(err error) bool { return errors.Is(err, target) }
}

// ErrorAs matches the errors whose chain holds an E, as [errors.As] finds
// it: ErrorAs[*googleapi.Error]() matches every error of that API.
func ErrorAs[E error]() ErrorMatcher {
	return func(err error) bool {
		var target E
		return errors.As(err, &target)
	}
}

// Delay returns how long the class waits after the attempts-th consecutive
// failure of a step, and whether it declares a schedule at all.
func (c ErrorClass) Delay(attempts int) (time.Duration, bool) {
	if len(c.Retry) == 0 {
		return 0, false
	}
	return c.Retry[min(max(attempts, 1), len(c.Retry))-1], true
}

// Classify returns the class of err, an error step returned: the first
// class, in declaration order, that names step and matches err, else the
// first that names no step and matches it. It reports false for a nil error
// and for an error no class matches.
func (m *Machine[S, P]) Classify(step string, err error) (ErrorClass, bool) {
	if err == nil {
		return ErrorClass{}, false
	}
	for _, own := range []bool{true, false} {
		for _, c := range m.def.Errors {
			if (len(c.Steps) > 0) == own && (!own || slices.Contains(c.Steps, step)) && c.Match(err) {
				return c, true
			}
		}
	}
	return ErrorClass{}, false
}

// ErrorClasses returns the names of the machine's error classes, in
// declaration order: the values a metric's class label may take.
func (m *Machine[S, P]) ErrorClasses() []string {
	out := make([]string, len(m.def.Errors))
	for i, c := range m.def.Errors {
		out[i] = c.Name
	}
	return out
}

// errorClasses checks the definition's error classes.
func (b *builder[S, P]) errorClasses(def Definition[S, P]) {
	m := b.m
	steps := m.Steps()
	names := map[string]bool{}
	for _, c := range def.Errors {
		if c.Name == "" || names[c.Name] {
			b.errs = append(b.errs, fmt.Errorf("%s: error class name %q is empty or declared twice: %w", m.name, c.Name, ErrDuplicate))
		}
		names[c.Name] = true
		if c.Match == nil {
			b.errs = append(b.errs, fmt.Errorf("%s: error class %q has no Match: %w", m.name, c.Name, ErrIncomplete))
		}
		if c.Final && len(c.Retry) > 0 {
			b.errs = append(b.errs, fmt.Errorf("%s: error class %q is both final and retried: %w", m.name, c.Name, ErrContradiction))
		}
		for _, d := range c.Retry {
			if d <= 0 {
				b.errs = append(b.errs, fmt.Errorf("%s: error class %q: retry delay %v is not positive: %w", m.name, c.Name, d, ErrInvalid))
			}
		}
		for _, s := range c.Steps {
			if _, ok := slices.BinarySearch(steps, s); !ok {
				b.errs = append(b.errs, fmt.Errorf("%s: error class %q names %q, no step of the machine: %w", m.name, c.Name, s, ErrInvalid))
			}
		}
	}
}
