package drivertest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/manager"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// Config configures a test of one machine's real [driver.Driver]: the
// machine, the kind of its documents, the world its steps act on and how a
// user writes intents and requests into a spec.
type Config[Spec driver.HasIntent[S], Status any, S, P comparable] struct {
	// Machine is the machine under test. Required.
	Machine *statemachine.Machine[S, P]

	// Kind is the kind of the documents the driver governs. Required.
	Kind string

	// Kinds are the other kinds the world's steps and controllers use (the
	// kinds of the children a step creates). The harness's memory store
	// holds Kind and these.
	Kinds []string

	// Fixture builds the world of one run: the driver's real steps and
	// observers over simulated backends, and what must hold of it. It is
	// called once per run, inside the run's bubble, after the store is
	// made. Required.
	Fixture func(env Env) (Fixture[Spec, Status], error)

	// NewSpec returns the spec a document is created with, before its
	// intent is set: the fields the steps need beside the intent. Nil means
	// the zero Spec.
	NewSpec func() Spec

	// SetIntent writes intent into spec, as the user's API does. Required.
	SetIntent func(spec *Spec, intent S)

	// Request writes a new token of the named request into spec, as the
	// user's API does (with the intent that asks for it, if any). Required
	// when the machine declares requests.
	Request func(spec *Spec, request, token string)

	// Replicas is how many replicas run the driver, each under its own
	// manager.Manager. Zero means 1.
	Replicas int

	// Mode is how the replicas share the work (see manager.Mode). With
	// more than one replica it must coordinate them: manager.Single runs
	// every key on every replica, which the harness reports as overlapping
	// steps.
	Mode manager.Mode

	// LeaseDuration is the replicas' lease duration (see
	// manager.Config). Zero means manager.DefaultLeaseDuration.
	LeaseDuration time.Duration

	// TerminalFailures also injects terminal step failures. The machine
	// must then declare a Fault phase, where a terminal failure holds a
	// document for an oncall.
	TerminalFailures bool

	// ControllerLogs adds the replicas' controller and manager logs, at
	// debug level, to the run's log in a failure's report.
	ControllerLogs bool

	// Accept lists ends of a run the test accepts beside those the harness
	// explains itself. A document held in a Fault phase fails the run
	// unless something explains it: the operation that reached Fault
	// failed terminally, or its last step call failed (injected by the
	// harness or by the world's own backends), or the harness cut a
	// replica off or slowed a call past a lease while it ran, or the
	// intent is refused there. A document held there for any other
	// reason (a deadline reached while every step call succeeded) fails
	// the run, naming the operation, the steps called and the conditions
	// that never held.
	Accept []End[S, P]

	// Operators makes random runs also act as an on-call operator would,
	// each action one write of the document's status as the oncall
	// package's client makes it: pause the document and resume it, and
	// command a request, a retry, a skip or a move
	// (statemachine.VerbRequest, VerbRetry, VerbSkip, VerbMove). A retry,
	// skip or move is written only where that client writes it: a retry
	// while a step is failing or in the Fault phase, a skip of the step
	// that failed, a move from Fault to a phase the machine declares
	// that is neither transitional nor Fault (the machine refuses some for
	// some intents). One drawn at another moment waits, as a paged
	// operator does, for the replicas' next write that allows it; and
	// most runs that end held in Fault are answered with one, after which
	// the document must settle again. Runs with several replicas get
	// them too.
	//
	// The checks know what these commands do. The write that carries them
	// out must store what statemachine.Machine.ApplyCommands makes of the
	// status before it, so a move, or an operation resumed from Fault,
	// leaves Fault along no edge only to the phase asked (it counts as an
	// edge covered only when it is one); no retry, skip or move is left
	// in status when the document settles; a retry or a skip restarts the
	// step's backoff; a Fault of a resumed operation is explained only by
	// what happened since it resumed; a request token of an operation a
	// move abandoned may be served by a later one. A skip or a move tells
	// the machine what the harness cannot check of the world: once one is
	// carried out, the world's Invariant and Matches are logged rather
	// than failed, a Fault is explained, and so is a document that never
	// settles with no command left pending (a step skipped whose effect
	// never happened can make later steps fail for good). An operation held
	// paused while virtual time passed may reach its deadline: its Fault
	// is explained. Off by default: these actions thin out the others, and
	// so how often one run finds a defect of the steps.
	Operators bool

	// RequireCoverage makes [Check] fail when its runs never take an edge
	// the machine declares, or never see a call of a declared step fail:
	// what was never exercised was never tested.
	RequireCoverage bool

	// Horizon bounds, in virtual time, how long a document may take to
	// settle once intents stop changing and faults stop, or since an
	// operator last answered: to reach a settled pair, a declared refusal
	// or the Fault phase, or to be removed when its deletion was
	// requested. Zero means twice the longest deadline of
	// the machine's phases, plus ten minutes.
	Horizon time.Duration
}

// Env is what the harness gives [Config.Fixture] to build one run's world.
type Env struct {
	// Backend is the run's store, an in-memory one shared by every replica.
	// Steps that create documents write through it.
	Backend store.Backend
	// Rand is the run's random source: draw the world's parameters (delays,
	// failure rates, seeds) from it, so a run replays from its seed.
	Rand *rand.Rand
}

// Fixture is one run's world: the driver's real steps and observers, and what
// must hold of the world they act on.
type Fixture[Spec, Status any] struct {
	// Driver configures the driver under test: its real Steps, Observers
	// and Timers, and the Backoff, intervals and bounds it runs with. The
	// harness wraps each step and observer, to inject faults and record
	// calls, and builds the driver on each replica's view of the store.
	Driver driver.Config[Spec, Status]

	// Backend wraps a replica's view b of the store into the store its
	// driver reads, writes and watches through: a fault injected around the
	// driver, never in it (a store that loses writes, shows a stale status
	// or re-orders events), to prove that the harness's checks catch what
	// the fault makes the driver do, or that the driver survives it. It is
	// called for each incarnation of each replica; the world's sources and
	// controllers, and the harness's own checks, see b as it is. Nil means
	// the driver uses b.
	Backend func(b store.Backend) store.Backend

	// Sources returns the driver's controller's sources beside the
	// driver's own (controller.Owns for the kinds its steps create), over a
	// replica's view b of the store. Optional.
	Sources func(b store.Backend) []controller.Source

	// Controllers returns the other controllers a replica runs beside the
	// driver's (those of the kinds its steps create), over a replica's view
	// b of the store. Optional.
	Controllers func(b store.Backend) ([]*controller.Controller, error)

	// Invariant returns an error when the world is wrong, whatever the
	// document's phase: two deployments for one gateway, a database left
	// behind by a deleted one. It is called after every action and at the
	// end, with the document as stored (nil once it is removed; a status
	// never written shows the machine's initial phase). Optional.
	Invariant func(ctx context.Context, key string, obj *store.Object[Spec, Status]) error

	// Matches returns an error when the world does not match a document
	// the machine reports settled. It is called at the end of a run, once
	// the document settled. Optional.
	Matches func(ctx context.Context, obj *store.Object[Spec, Status]) error
}

// ErrInvalidConfig reports a [Config] that cannot be used.
var ErrInvalidConfig = errors.New("drivertest: invalid config")

// validate returns a copy of c with defaults filled in, or an error
// matching ErrInvalidConfig.
func (c Config[Spec, Status, S, P]) validate() (Config[Spec, Status, S, P], error) {
	var problems []string
	switch {
	case c.Machine == nil:
		problems = append(problems, "Machine is nil")
	case len(c.Machine.Requests()) > 0 && c.Request == nil:
		problems = append(problems, fmt.Sprintf("machine %s has requests %v but Request is nil", c.Machine.Name(), c.Machine.Requests()))
	case c.TerminalFailures && !slices.ContainsFunc(c.Machine.Phases(), func(p P) bool {
		ps, _ := c.Machine.Spec(p)
		return ps.Type == statemachine.Fault
	}):
		problems = append(problems, "TerminalFailures needs a machine with a Fault phase")
	}
	if c.Machine != nil {
		problems = append(problems, validateEnds(c.Machine, c.Accept)...)
	}
	if err := store.ValidateKind(c.Kind); err != nil {
		problems = append(problems, err.Error())
	}
	if c.Fixture == nil {
		problems = append(problems, "Fixture is nil")
	}
	if c.SetIntent == nil {
		problems = append(problems, "SetIntent is nil")
	}
	if c.Replicas < 0 || c.LeaseDuration < 0 || c.Horizon < 0 {
		problems = append(problems, "negative Replicas, LeaseDuration or Horizon")
	}
	if _, ok := any(new(Status)).(driver.HasMachineStatus[S, P]); !ok {
		problems = append(problems, fmt.Sprintf("*%T does not hold the machine's status (driver.HasMachineStatus)", *new(Status)))
	}
	if problems != nil {
		return c, fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(problems, "; "))
	}
	c.Replicas = max(c.Replicas, 1)
	if c.LeaseDuration == 0 {
		c.LeaseDuration = manager.DefaultLeaseDuration
	}
	if c.Horizon == 0 {
		longest := time.Duration(0)
		for _, p := range c.Machine.Phases() {
			ps, _ := c.Machine.Spec(p)
			longest = max(longest, ps.Bounds.Deadline)
		}
		c.Horizon = 2*longest + 10*time.Minute
	}
	if !slices.Contains(c.Kinds, c.Kind) {
		c.Kinds = append(slices.Clone(c.Kinds), c.Kind)
	}
	return c, nil
}
