package drivertest

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/statemachine"

	"pgregory.net/rapid"
)

// Check runs the property test of cfg under [rapid.Check]: rapid's number of
// cases (-rapid.checks, 100 by default), each a new run with its own random
// actions; a failing run is shrunk to a minimal list of actions, printed one
// per line, and replays with -rapid.seed (or -rapid.failfile).
//
// A pass logs one line: the runs, their actions, the distinct states they
// reached, the (intent, phase) pairs, the machine's edges taken of those
// declared and its steps whose calls failed of those declared. With
// [Config.RequireCoverage], an edge never taken or a step never failed
// fails t.
func Check[Spec driver.HasIntent[S], Status any, S, P comparable](t *testing.T, cfg Config[Spec, Status, S, P]) {
	t.Helper()
	cov := newCoverage()
	rapid.Check(t, property[Spec, Status](t, cfg, cov))
	if t.Failed() {
		return
	}
	t.Log(line(cov, cfg.Machine))
	if miss := uncovered(cov, cfg.Machine); cfg.RequireCoverage && miss != "" {
		t.Errorf("drivertest: coverage required: %s", miss)
	}
}

// Property returns the property [Check] runs, for a test that drives rapid
// itself. t is the test's own: each case runs in a testing/synctest bubble
// of t. An invalid cfg fails t at once.
func Property[Spec driver.HasIntent[S], Status any, S, P comparable](t *testing.T, cfg Config[Spec, Status, S, P]) func(*rapid.T) {
	t.Helper()
	return property[Spec, Status](t, cfg, nil)
}

// property is Property, counting what the runs exercise into cov (nil:
// nothing is counted).
func property[Spec driver.HasIntent[S], Status any, S, P comparable](t *testing.T, cfg Config[Spec, Status, S, P], cov *coverage) func(*rapid.T) {
	t.Helper()
	cfg, err := cfg.validate()
	if err != nil {
		t.Fatal(err)
	}
	gen := planOf(cfg)
	return func(rt *rapid.T) {
		// Every draw happens here, outside the run's bubble, where rapid
		// may abort a case it is shrinking.
		p := gen.Draw(rt, "run")
		p.cov = cov
		if f, _ := execute[Spec, Status](t, cfg, p); f != nil {
			// The run once, a line each, then the failed check; rapid
			// prints the replay command after it.
			if saved := flag.Lookup("rapid.failfile"); saved != nil && saved.Value.String() != "" {
				rt.Logf("drivertest: a replay of the failure saved in %s, which may predate the code under test", saved.Value)
			}
			for _, l := range f.Log {
				rt.Log(l)
			}
			rt.Fatal(joinLines(f.Problems))
		}
	}
}

// RunOne runs the one random run seed picks, without rapid's search or
// shrinking, and returns its failure or nil: to measure how many seeds find
// a defect.
func RunOne[Spec driver.HasIntent[S], Status any, S, P comparable](t *testing.T, cfg Config[Spec, Status, S, P], seed int) (*Failure, error) {
	cfg, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	p := planOf(cfg).Example(seed)
	f, _ := execute[Spec, Status](t, cfg, p)
	if f != nil {
		f.Replay = fmt.Sprintf("drivertest.RunOne(t, cfg, %d)", seed)
	}
	return f, nil
}

// GoString describes p where rapid prints a failing case's draws: the
// run's actions follow, one a line.
func (p plan[S]) GoString() string {
	return fmt.Sprintf("world seed %d, first intent %v, %d actions, stepwise %t", p.seed, p.first, len(p.actions), p.stepwise)
}

// plan is one run: the world's seed, the document's first intent and
// finalizer, the actions, and how faults meet step calls.
type plan[S any] struct {
	seed    uint64
	first   S
	hold    bool
	actions []action[S]
	// stepwise makes each step call wait for the next action, so that
	// the actions interleave with every operation, the first included.
	stepwise bool
	// oneFault keeps one one-shot fault armed at a time: a new one
	// replaces the one armed (an exploration's states stay few).
	oneFault bool
	// respond, if not nil, is what an operator does once the document
	// is held in Fault after the actions (with Config.Operators): a
	// retry, a skip or a move.
	respond *action[S]
	// cov, if not nil, counts what the run exercised.
	cov *coverage
}

// planOf returns the generator of cfg's random runs.
func planOf[Spec driver.HasIntent[S], Status any, S, P comparable](cfg Config[Spec, Status, S, P]) *rapid.Generator[plan[S]] {
	return rapid.Custom(func(t *rapid.T) plan[S] {
		p := plan[S]{
			seed:  rapid.Uint64().Draw(t, "world seed"),
			first: drawIntent(t, cfg, "first intent"),
			hold:  rapid.Bool().Draw(t, "another owner's finalizer"),
			// Half the runs interleave their actions with the step
			// calls of every operation, the first included.
			stepwise: rapid.Bool().Draw(t, "each step call waits for the next action"),
		}
		p.actions = make([]action[S], rapid.IntRange(1, 40).Draw(t, "actions"))
		for i := range p.actions {
			p.actions[i] = drawAction(t, cfg, i+1)
		}
		// The replicas start after a few actions, so that faults and
		// intents may come before the first reconcile.
		start := rapid.IntRange(0, min(3, len(p.actions))).Draw(t, "replicas start after")
		p.actions = slices.Insert(p.actions, start, action[S]{kind: doStart})
		if cfg.Operators {
			// An operator paged once the document is held in Fault
			// answers, in most runs.
			kinds, targets := []kind{doIntent, doRetry, doSkip}, moveTargets(cfg.Machine)
			if len(targets) > 0 {
				kinds = append(kinds, doMove)
			}
			a := action[S]{kind: rapid.SampledFrom(kinds).Draw(t, "operator's answer to a Fault")}
			if a.kind == doMove {
				a.name = rapid.SampledFrom(targets).Draw(t, "operator's move")
			}
			if a.kind != doIntent {
				p.respond = &a
			}
		}
		return p
	})
}

// Failure is a run that broke a property: what went wrong, and what
// happened, in order.
type Failure struct {
	// Problems are the properties broken, first first.
	Problems []string
	// Actions are the actions the run performed after it created the
	// document, in order.
	Actions []string
	// Log is the run: each action, each step call and the fault it
	// suffered, each changed observation and phase write, and how it ended.
	Log []string
	// Replay is the command that replays the run, when one does.
	Replay string
	// Sequences and States are, for a failure [Search] or [Explore]
	// found, how many sequences the search ran and how many distinct
	// states they reached, this run included; zero otherwise.
	Sequences, States int
}

// Error describes f: the run, a line for each action, step call, changed
// observation and phase write, with its virtual time; then the broken
// properties, the failed check last; then how to replay it.
func (f *Failure) Error() string {
	var b strings.Builder
	if len(f.Log) > 0 {
		b.WriteString("run:\n" + joinLines(f.Log) + "\n")
	}
	b.WriteString("failed:\n" + joinLines(f.Problems))
	if f.Replay != "" {
		b.WriteString("\nreplay: " + f.Replay)
	}
	return b.String()
}

// execute runs one run in a bubble of t: it creates the document with
// intent first, performs actions, then heals the lasting faults and checks
// that the document settles. It returns the run's failure, or nil, and the
// fingerprint of the state the actions left it in.
func execute[Spec driver.HasIntent[S], Status any, S, P comparable](t *testing.T, cfg Config[Spec, Status, S, P], p plan[S]) (*Failure, string) {
	seed, first, hold, actions := p.seed, p.first, p.hold, p.actions
	var (
		f           *Failure
		fingerprint string
	)
	synctest.Test(t, func(t *testing.T) {
		var (
			mu  sync.Mutex
			log []string
		)
		logf := func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			log = append(log, fmt.Sprintf("%8s  ", virtual(time.Now()))+fmt.Sprintf(format, args...))
		}
		ctx, cancel := context.WithCancel(t.Context())
		r, err := newRun[Spec, Status](ctx, cfg, rand.New(rand.NewPCG(seed, seed>>1|1)), logf)
		if err != nil {
			cancel()
			f = &Failure{Problems: []string{err.Error()}}
			return
		}
		r.oneFault, r.respond = p.oneFault, p.respond
		if p.stepwise {
			r.gate = make(chan struct{})
		}
		var watching sync.WaitGroup
		watching.Go(func() { r.watch(ctx) })
		logf("create the document with intent %v%s", first, map[bool]string{true: ", and another owner's finalizer"}[hold])
		r.create(first, hold)
		var done []string
		for _, a := range actions {
			if len(r.failed()) > 0 {
				break
			}
			done = append(done, a.String())
			r.act(a)
		}
		fingerprint = r.fingerprint()
		p.cov.add(len(done), fingerprint, r.seen)
		r.open() // step calls no longer wait for actions
		if len(r.failed()) == 0 {
			r.quiesce()
		}
		cancel()
		r.stop()
		watching.Wait()
		if problems := r.failed(); len(problems) > 0 {
			mu.Lock()
			f = &Failure{Problems: problems, Actions: done, Log: log}
			mu.Unlock()
		}
	})
	return f, fingerprint
}

// epoch is where every bubble's clock starts.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// virtual formats the virtual time since the run began.
func virtual(now time.Time) string {
	return now.Sub(epoch).Truncate(time.Millisecond).String()
}

// drawIntent draws an intent the machine admits in its initial phase.
func drawIntent[Spec driver.HasIntent[S], Status any, S, P comparable](t *rapid.T, cfg Config[Spec, Status, S, P], label string) S {
	var admitted []S
	for _, s := range cfg.Machine.States() {
		if cfg.Machine.Admit(s, cfg.Machine.Initial()) == nil {
			admitted = append(admitted, s)
		}
	}
	if len(admitted) == 0 {
		t.Fatalf("machine %s admits no intent in its initial phase %v", cfg.Machine.Name(), cfg.Machine.Initial())
	}
	return rapid.SampledFrom(admitted).Draw(t, label)
}

// drawAction draws the i-th action of a run: writes a user makes, faults,
// crashes and time.
func drawAction[Spec driver.HasIntent[S], Status any, S, P comparable](t *rapid.T, cfg Config[Spec, Status, S, P], i int) action[S] {
	m := cfg.Machine
	kinds := []kind{doIntent, doIntent, doIntent, doIntent, doDelete, doRelease, doRecreate, doTouch,
		doFail, doFail, doFail, doFailAfter, doPanic, doSlow, doCrashAfter, doCrashAfter, doBreak, doBreak, doHeal, doCrash,
		doSleep, doSleep, doSleep, doSleep, doSleep, doSleep, doSleep, doSleep}
	if len(m.Requests()) > 0 {
		kinds = append(kinds, doRequest, doRequest, doRequest, doRequest)
	}
	flippable := flippable(m)
	if len(flippable) > 0 {
		kinds = append(kinds, doFlip)
	}
	if cfg.TerminalFailures {
		kinds = append(kinds, doTerminal)
	}
	targets := moveTargets(m)
	if cfg.Operators {
		// An operator, at random moments: a hold and its end, a request,
		// a retry, a skip and a move by command.
		kinds = append(kinds, doPause, doResume, doRetry, doRetry, doSkip, doSkip)
		if len(m.Requests()) > 0 {
			kinds = append(kinds, doOperatorRequest)
		}
		if len(targets) > 0 {
			kinds = append(kinds, doMove, doMove)
		}
	}
	if cfg.Replicas > 1 {
		kinds = append(kinds, doPartition, doCrash)
	}
	label := func(what string) string { return fmt.Sprintf("action %d %s", i, what) }
	a := action[S]{kind: rapid.SampledFrom(kinds).Draw(t, label("kind"))}
	switch a.kind {
	case doIntent, doRecreate:
		a.intent = rapid.SampledFrom(m.States()).Draw(t, label("intent"))
	case doRequest, doOperatorRequest:
		a.name = rapid.SampledFrom(m.Requests()).Draw(t, label("request"))
	case doFlip:
		a.name = rapid.SampledFrom(flippable).Draw(t, label("condition"))
	case doMove:
		a.name = rapid.SampledFrom(targets).Draw(t, label("phase"))
	case doCrash, doPartition:
		a.replica = rapid.IntRange(0, cfg.Replicas-1).Draw(t, label("replica"))
	case doFail, doFailAfter, doTerminal, doPanic, doCrashAfter, doBreak:
		a.name = drawStep(t, m.Steps(), label("step"))
	case doSlow:
		a.name = drawStep(t, m.Steps(), label("step"))
		a.d = drawDuration(t, label("duration"), cfg.LeaseDuration*3)
	case doSleep:
		a.d = drawDuration(t, label("duration"), cfg.Horizon/2)
	}
	return a
}

// drawStep draws the step a fault hits: any step, half the time, so that
// faults hit whatever runs next.
func drawStep(t *rapid.T, steps []string, label string) string {
	if rapid.Bool().Draw(t, label+" is any") {
		return anyStep
	}
	return rapid.SampledFrom(steps).Draw(t, label)
}

// drawDuration draws 0 (run until everything waits), or a duration up to
// limit on a roughly logarithmic scale.
func drawDuration(t *rapid.T, label string, limit time.Duration) time.Duration {
	scales := []time.Duration{0, 10 * time.Millisecond, time.Second, 10 * time.Second, time.Minute, 10 * time.Minute, limit}
	scale := min(rapid.SampledFrom(scales).Draw(t, label+" scale"), limit)
	return scale * time.Duration(rapid.IntRange(1, 10).Draw(t, label+" tenths")) / 10
}

// flippable returns the conditions of m a doFlip may read false: those no
// completion or health requires false. A false reading of one that is
// required false would not delay an operation but complete it early: a
// lie about the world, which the world's own checks would then report.
func flippable[S, P comparable](m *statemachine.Machine[S, P]) []string {
	negative := map[string]bool{}
	for _, ps := range m.Definition().Phases {
		for _, r := range slices.Concat(ps.Completion, ps.Health) {
			if !r.Status {
				negative[r.Condition] = true
			}
		}
	}
	var out []string
	for _, c := range m.Conditions() {
		if !negative[c] {
			out = append(out, c)
		}
	}
	return out
}
