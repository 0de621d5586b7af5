package smtest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/tendhq/tend/statemachine"
)

// World is the user's model of the world one object's machine acts on: the
// simulated resources its steps change and its observers read. A World is used
// by one test case, from one goroutine.
type World[S, P comparable] interface {
	// Run performs the side effect of step d.Step of operation d.Operation at
	// time now and returns its outcome. d.Operation.ID is the operation id, the
	// same on every retry.
	Run(d statemachine.Decision[S, P], now time.Time) (statemachine.Outcome, error)
	// Observe returns the conditions as the world shows them at time now.
	Observe(now time.Time) []statemachine.Observation
	// Check returns an error when an invariant of the world is broken. It is
	// called after every action with the current intent and persisted status.
	Check(intent S, st statemachine.Status[S, P]) error
	// Matches returns an error when the world does not match intent. It is
	// called at quiescence, once the machine reports intent settled.
	Matches(intent S, st statemachine.Status[S, P]) error
}

// Config configures [Check] and [Run].
type Config[S, P comparable] struct {
	// Machine is the machine under test. Required.
	Machine *statemachine.Machine[S, P]
	// World returns a fresh world for one test case; it may draw its own
	// parameters (delays, sizes) from t. Required.
	World func(t *rapid.T) World[S, P]
	// TerminalFailures also injects terminal step failures; the machine must
	// then declare a Fault phase. Off by default: a terminal failure holds an
	// object for an operator, so it cannot settle to every intent.
	TerminalFailures bool
	// MaxAdvance bounds one random time advance, and is the step by which time
	// advances while the machine waits at quiescence. Zero means one minute.
	MaxAdvance time.Duration
	// SettleTicks bounds the controller ticks at quiescence. Zero means 1000.
	SettleTicks int
	// Start is the simulated clock's start. Zero means 2025-01-01T00:00:00Z.
	Start time.Time
}

// ErrInvalidConfig reports a Config that cannot be used.
var ErrInvalidConfig = errors.New("smtest: invalid config")

// withDefaults returns a validated copy of c with defaults filled in.
func (c Config[S, P]) withDefaults() (Config[S, P], error) {
	if c.Machine == nil {
		return c, fmt.Errorf("%w: Machine is nil", ErrInvalidConfig)
	}
	if c.World == nil {
		return c, fmt.Errorf("%w: World is nil", ErrInvalidConfig)
	}
	if c.MaxAdvance < 0 || c.SettleTicks < 0 {
		return c, fmt.Errorf("%w: negative MaxAdvance or SettleTicks", ErrInvalidConfig)
	}
	if c.TerminalFailures && !slices.ContainsFunc(c.Machine.Phases(), func(p P) bool {
		ps, _ := c.Machine.Spec(p)
		return ps.Type == statemachine.Fault
	}) {
		return c, fmt.Errorf("%w: TerminalFailures needs a machine with a Fault phase", ErrInvalidConfig)
	}
	if c.MaxAdvance == 0 {
		c.MaxAdvance = time.Minute
	}
	if c.SettleTicks == 0 {
		c.SettleTicks = 1000
	}
	if c.Start.IsZero() {
		c.Start = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return c, nil
}

// Check runs the property-based test of cfg under [rapid.Check]: rapid's
// default number of checks (-rapid.checks), shrinking, and replay of a failure
// with -rapid.seed or -rapid.failfile.
func Check[S, P comparable](t *testing.T, cfg Config[S, P]) {
	t.Helper()
	if _, err := cfg.withDefaults(); err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(rt *rapid.T) { Run(rt, cfg) })
}

// Run runs one test case of cfg inside a rapid property: from a new object, a
// random list of actions (intent changes the machine admits, controller ticks,
// ticks with a transient step failure injected before or after the step's side
// effect, crash-restarts that lose the status back to the last persisted write,
// time advances and, with TerminalFailures, terminal step failures), checking
// after every action that the persisted phase moved only along the machine's
// edges, that checkpoints only grew, that every step ran in order under the
// persisted operation id, that operation ids are never reused, that Decide does
// not fail and that the world's invariants hold. Then, at quiescence (no more
// failures), it ticks until the machine settles or holds and checks that the
// world matches the intent.
func Run[S, P comparable](t *rapid.T, cfg Config[S, P]) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Machine
	h := &harness[S, P]{t: t, cfg: cfg, m: m, world: cfg.World(t), now: cfg.Start, used: map[string]bool{}}
	h.persisted = m.NewStatus()
	h.intent = h.drawIntent(t, "initial intent")
	h.check("start")

	faults := []mode{failBefore, failAfter, crash}
	if cfg.TerminalFailures {
		faults = append(faults, failTerminal)
	}
	actions := map[string]func(*rapid.T){
		"intent": func(t *rapid.T) {
			s := h.drawIntent(t, "intent")
			h.intent = s
			t.Logf("intent %v", s)
		},
		"ticks": func(t *rapid.T) {
			n := rapid.IntRange(1, 8).Draw(t, "ticks")
			for range n {
				h.tick(normal)
				h.check("tick")
			}
		},
		"settle": func(*rapid.T) { h.settle() },
		// An intent the machine then settles to: holes hide in pairs that
		// only a few settled intents in a row reach.
		"intent and settle": func(t *rapid.T) {
			h.intent = h.drawIntent(t, "intent")
			t.Logf("intent %v, then settle", h.intent)
			h.settle()
		},
		"fault": func(t *rapid.T) {
			h.tick(rapid.SampledFrom(faults).Draw(t, "fault"))
		},
		"advance": func(t *rapid.T) {
			d := rapid.Int64Range(1, int64(cfg.MaxAdvance)).Draw(t, "advance")
			h.now = h.now.Add(time.Duration(d))
			t.Logf("advance %v", time.Duration(d))
		},
		"": func(*rapid.T) { h.check("action") },
	}
	t.Repeat(actions)
	h.quiesce()
}

// drawIntent draws an intent other than the current one. An intent whose
// path passes a point of no return ends the exploration of the rest of the
// machine, so it is drawn one time in four only.
func (h *harness[S, P]) drawIntent(t *rapid.T, label string) S {
	var keep, commit []S
	for _, s := range h.m.States() {
		switch {
		case s == h.intent && label != "initial intent":
		case h.m.Admit(s, h.persisted.Phase) != nil:
		case h.commits(s):
			commit = append(commit, s)
		default:
			keep = append(keep, s)
		}
	}
	if len(commit) > 0 && (len(keep) == 0 || rapid.IntRange(0, 3).Draw(t, "past no return") == 3) {
		keep = commit
	}
	if len(keep) == 0 {
		if label == "initial intent" {
			t.Fatalf("no intent is admitted in initial phase %v", h.persisted.Phase)
		}
		return h.intent
	}
	return rapid.SampledFrom(keep).Draw(t, label)
}

// commits reports whether, with intent s and every step succeeding, the
// machine would begin a point of no return before it settles.
func (h *harness[S, P]) commits(s S) bool {
	st := h.persisted
	for range h.cfg.SettleTicks {
		d, err := h.m.Decide(s, st, h.now)
		if err != nil {
			return false
		}
		r := statemachine.Report{Now: h.now}
		if h.m.NeedsOperationID(d) {
			r.OperationID = "simulated"
		}
		switch d.Action {
		case statemachine.Nothing, statemachine.Hold, statemachine.Backoff, statemachine.Expire:
			return false
		case statemachine.Begin, statemachine.Abort:
			if ps, _ := h.m.Spec(d.Next); ps.NoReturn {
				return true
			}
		case statemachine.Run:
			r.Outcome = statemachine.Done
		case statemachine.Wait:
			for _, req := range d.Pending {
				st = st.Observe(h.now, statemachine.Observation{Name: req.Condition, Status: req.Status})
			}
			continue
		}
		if st, err = h.m.Apply(st, d, r); err != nil {
			return false
		}
	}
	return false
}

// mode is how one tick is disturbed.
type mode int

const (
	normal       mode = iota
	failBefore        // the step fails before its side effect
	failAfter         // the step's side effect happens, then it reports a failure
	failTerminal      // the step fails terminally before its side effect
	crash             // the tick runs, then the process dies before the status write
)

var modeNames = [...]string{"tick", "fail-before-effect", "fail-after-effect", "fail-terminal", "crash"}

// errInjected is the error of injected step failures.
var errInjected = errors.New("smtest: injected failure")

// retryAfter is the model's backoff after a failed step: the machine keeps
// the retry time in status, and the harness advances time past it.
const retryAfter = time.Second

// harness is one test case: a simulated controller, its store and clock.
type harness[S, P comparable] struct {
	t         *rapid.T
	cfg       Config[S, P]
	m         *statemachine.Machine[S, P]
	world     World[S, P]
	intent    S
	persisted statemachine.Status[S, P] // the last status written to the store
	now       time.Time
	ids       int
	used      map[string]bool // operation ids ever persisted
}

// tick runs one controller tick: read the persisted status, observe, decide,
// act, fold, write. It returns the decision.
func (h *harness[S, P]) tick(md mode) statemachine.Decision[S, P] {
	t := h.t
	st := h.persisted.Observe(h.now, h.world.Observe(h.now)...)
	d, err := h.m.Decide(h.intent, st, h.now)
	if err != nil {
		t.Fatalf("%s: decide(intent %v, phase %v): %v", modeNames[md], h.intent, st.Phase, err)
	}
	r := statemachine.Report{Now: h.now, RetryAfter: retryAfter}
	if h.m.NeedsOperationID(d) {
		h.ids++
		r.OperationID = fmt.Sprintf("op-%d", h.ids)
	}
	what := d.Action.String()
	switch d.Action {
	case statemachine.Begin:
		what = fmt.Sprintf("begin %v (%s)", d.Next, r.OperationID)
	case statemachine.Abort:
		what = fmt.Sprintf("abort %v → %v", d.Phase, d.Next)
	case statemachine.Expire:
		what = fmt.Sprintf("expire %v → %v: %s", d.Phase, d.Next, d.Reason)
	case statemachine.Backoff:
		what = fmt.Sprintf("backoff in %v until %v", d.Phase, d.Until)
	case statemachine.Run:
		h.checkStep(d)
		switch md {
		case failBefore:
			r.Outcome, r.Err = statemachine.Failed, errInjected
		case failTerminal:
			r.Outcome, r.Err = statemachine.FailedTerminal, errInjected
		case failAfter:
			_, _ = h.world.Run(d, h.now)
			r.Outcome, r.Err = statemachine.Failed, errInjected
		default:
			r.Outcome, r.Err = h.world.Run(d, h.now)
			if r.Outcome == statemachine.Done && r.Err != nil {
				t.Fatalf("step %q of %v returned Done with error %v", d.Step, d.Phase, r.Err)
			}
		}
		what = fmt.Sprintf("run %v/%s (%s) → %v", d.Phase, d.Step, d.Operation.ID, r.Outcome)
	case statemachine.Complete:
		what = fmt.Sprintf("complete %v → %v", d.Phase, d.Next)
	case statemachine.Wait:
		what = fmt.Sprintf("wait in %v for %v", d.Phase, d.Pending)
	case statemachine.Nothing:
		what = fmt.Sprintf("settled (%v, %v)", d.Intent, d.Phase)
	}
	next, err := h.m.Apply(st, d, r)
	if err != nil {
		t.Fatalf("%s: apply %s: %v", modeNames[md], what, err)
	}
	if md == crash {
		t.Logf("crash after %s: status not written", what)
		return d
	}
	t.Logf("%s: %s", modeNames[md], what)
	h.checkWrite(h.persisted, next)
	h.persisted = next
	return d
}

// checkStep checks that a Run decision names the next unfinished step of the
// persisted operation, under its persisted id.
func (h *harness[S, P]) checkStep(d statemachine.Decision[S, P]) {
	op := h.persisted.Operation
	if op == nil || op.ID != d.Operation.ID || h.persisted.Phase != d.Phase {
		h.t.Fatalf("step %q runs under operation %q, which is not persisted (persisted: %+v)", d.Step, d.Operation.ID, op)
	}
	ps, _ := h.m.Spec(d.Phase)
	for _, s := range ps.Steps {
		if s == d.Step {
			return
		}
		if !slices.Contains(op.Done, s) {
			h.t.Fatalf("step %q runs before earlier step %q is done", d.Step, s)
		}
	}
	h.t.Fatalf("step %q is not a step of %v", d.Step, d.Phase)
}

// checkWrite checks one status write: legal phase change, checkpoints that
// only grow, fresh operation ids.
func (h *harness[S, P]) checkWrite(old, next statemachine.Status[S, P]) {
	t := h.t
	if old.Phase != next.Phase && !slices.Contains(h.m.Edges(), statemachine.Edge[P]{From: old.Phase, To: next.Phase}) {
		t.Fatalf("illegal transition %v → %v", old.Phase, next.Phase)
	}
	if next.Operation == nil {
		return
	}
	if old.Failure != nil && old.Failure.Operation.ID == next.Operation.ID {
		if !slices.Equal(old.Failure.Operation.Done, next.Operation.Done) {
			t.Fatalf("resumed operation %s has checkpoint %v, it failed at %v", next.Operation.ID, next.Operation.Done, old.Failure.Operation.Done)
		}
		return
	}
	if old.Operation != nil && old.Operation.ID == next.Operation.ID {
		if !slices.Equal(old.Operation.Done, next.Operation.Done[:min(len(old.Operation.Done), len(next.Operation.Done))]) ||
			len(next.Operation.Done) < len(old.Operation.Done) {
			t.Fatalf("checkpoint of %s went from %v to %v", next.Operation.ID, old.Operation.Done, next.Operation.Done)
		}
		return
	}
	if h.used[next.Operation.ID] {
		t.Fatalf("operation id %s reused", next.Operation.ID)
	}
	h.used[next.Operation.ID] = true
	if len(next.Operation.Done) > 0 {
		t.Fatalf("new operation %s starts with steps done: %v", next.Operation.ID, next.Operation.Done)
	}
}

// check runs the checks due after every action: the persisted pair can be
// decided, the world's invariants hold, and when the machine reports the
// intent settled the world matches it.
func (h *harness[S, P]) check(after string) {
	d, err := h.m.Decide(h.intent, h.persisted, h.now)
	if err != nil {
		h.t.Fatalf("after %s: (%v, %v) cannot be decided: %v", after, h.intent, h.persisted.Phase, err)
	}
	if err := h.world.Check(h.intent, h.persisted); err != nil {
		h.t.Fatalf("after %s: invariant broken in (%v, %v): %v", after, h.intent, h.persisted.Phase, err)
	}
	if d.Action == statemachine.Nothing {
		if err := h.world.Matches(h.intent, h.persisted); err != nil {
			h.t.Fatalf("after %s: machine settled (%v, %v) but the world does not match: %v", after, h.intent, h.persisted.Phase, err)
		}
	}
}

// settle ticks without failures until the machine settles or holds,
// advancing time by MaxAdvance whenever it waits, at most SettleTicks times. It
// reports whether the machine settled or holds.
func (h *harness[S, P]) settle() bool {
	for range h.cfg.SettleTicks {
		d := h.tick(normal)
		h.check("tick")
		switch d.Action {
		case statemachine.Nothing, statemachine.Hold:
			return true
		case statemachine.Wait:
			h.now = h.now.Add(h.cfg.MaxAdvance)
		case statemachine.Backoff:
			h.now = d.Until
		}
	}
	return false
}

// quiesce settles the machine at the end of a test case; check has compared
// the world with the intent once it settled.
func (h *harness[S, P]) quiesce() {
	h.t.Logf("quiescence: intent %v, phase %v", h.intent, h.persisted.Phase)
	if !h.settle() {
		h.t.Fatalf("no settled pair within %d ticks without failures: intent %v, status %+v",
			h.cfg.SettleTicks, h.intent, h.persisted)
	}
}
