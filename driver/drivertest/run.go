package drivertest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/manager"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/workqueue"
)

// Errors the harness injects.
var (
	errInjected    = errors.New("drivertest: injected step failure")
	errBroken      = errors.New("drivertest: step broken until healed")
	errCrashed     = errors.New("drivertest: replica crashed")
	errPartitioned = errors.New("drivertest: replica cut off the store")
)

// holdFinalizer is the finalizer of "another owner" the harness may put on a
// document, so that its removal waits for doRelease.
const holdFinalizer = "drivertest.tend.dev/other-owner"

// touchLabel is the label someone else writes during a step call (doTouch):
// how many times it did.
const touchLabel = "drivertest.tend.dev/touched"

// key is the key of the one document a run drives.
const key = "doc"

// run is one run of the harness: a memory store, the world, the replicas
// running the driver, the faults in force and what the run has seen.
type run[Spec driver.HasIntent[S], Status any, S, P comparable] struct {
	cfg     Config[Spec, Status, S, P]
	ctx     context.Context
	mem     *memory.Store
	world   Fixture[Spec, Status]
	coll    *store.Collection[Spec, Status] // the user's view of the store
	client  *driver.Driver[Spec, Status]
	backoff workqueue.Backoff
	edges   map[statemachine.Edge[P]]bool // the moves one status write may make
	final   *S
	moot    map[string]bool // requests that some phase declares moot
	logf    func(format string, args ...any)

	mu          sync.Mutex // guards everything below
	oneShot     []action[S]
	touch       bool            // the labels are written during the next step call
	broken      map[string]bool // steps failing until healed
	flips       map[string]int
	partitioned map[int]bool
	replicas    []*replica
	inFlight    map[string]int // replica in a step call, by document key
	streak      *streak
	disruptions int                        // crashes, partitions, their end, lease hand-overs: each may lose a failure's record
	fences      map[string]int64           // the last fence granted, by lease name
	instant     time.Time                  // the virtual instant of the last reconcile
	reconciles  int                        // the reconciles at instant
	servedBy    map[string]map[string]bool // request token → ids of the operations that carried it and did not abandon it
	ops         map[string]*opRecord       // by operation id
	checked     map[string]bool            // request tokens seen recorded served
	seen        *coverage                  // what the run exercised (its own lock)
	observed    map[string]string          // what each condition read last
	pausedAt    time.Time                  // when an operator last paused the document
	pausedOp    string                     // the operation stored then
	asserted    string                     // what an operator's skip or move told the machine of the world, once one was carried out
	problems    []string
	tokens      int
	restarts    sync.WaitGroup // replicas being restarted
	stopping    bool           // the run is ending: no replica restarts
	gate        chan struct{}  // closed by the next action: step calls wait for it (nil: they do not wait)
	respond     *action[S]     // what an operator does once the run ends held in Fault (nil: nothing)
	armed       []action[S]    // operator commands to write as soon as the oncall package's client would
	settleBy    time.Time      // while the run quiesces: when the document must have settled (an operator's command written then puts it off)
	oneFault    bool           // one one-shot fault armed at a time
}

// replica is one incarnation of a replica: a manager running the driver's
// controller and the world's.
type replica struct {
	id     int
	dead   atomic.Bool
	cancel context.CancelFunc
	done   chan struct{}
}

// streak is a run of consecutive failed calls of one step of one operation
// on one generation of the spec.
type streak struct {
	op, step    string
	generation  int64
	terminating bool
	start       time.Time // when the first call ended: the backoff counts from its failure
	calls       int
	disruptions int             // the run's disruptions when its first call began
	delays      []time.Duration // the delay the driver waits after each failed call, as its error or the backoff declares it
}

// newRun makes the store, the world and the user's view of a run.
func newRun[Spec driver.HasIntent[S], Status any, S, P comparable](ctx context.Context, cfg Config[Spec, Status, S, P], rnd *rand.Rand, logf func(string, ...any)) (*run[Spec, Status, S, P], error) {
	r := &run[Spec, Status, S, P]{cfg: cfg, ctx: ctx, logf: logf,
		edges: map[statemachine.Edge[P]]bool{}, moot: map[string]bool{}, flips: map[string]int{}, broken: map[string]bool{},
		partitioned: map[int]bool{}, fences: map[string]int64{}, inFlight: map[string]int{}, servedBy: map[string]map[string]bool{}, ops: map[string]*opRecord{}, checked: map[string]bool{}, seen: newCoverage(), observed: map[string]string{}}
	var err error
	if r.mem, err = memory.New(memory.Config{Kinds: cfg.Kinds}); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if r.world, err = cfg.Fixture(Env{Backend: r.mem, Rand: rnd}); err != nil {
		return nil, fmt.Errorf("drivertest: Fixture: %w", err)
	}
	if r.coll, err = store.NewCollection[Spec, Status](r.mem, cfg.Kind, store.CollectionConfig{}); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if r.client, err = driver.New[Spec, Status](r.coll, cfg.Machine, r.world.Driver); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	r.backoff = cmp.Or[workqueue.Backoff](r.world.Driver.Backoff, workqueue.DefaultBackoff())
	def := cfg.Machine.Definition()
	r.edges = writeMoves(cfg.Machine)
	for _, s := range def.Settled {
		if s.Final {
			r.final = &s.State
		}
	}
	for _, rq := range def.Requests {
		r.moot[rq.Name] = len(rq.Moot) > 0
	}
	return r, nil
}

// problem records a broken property; the run fails with the first.
func (r *run[Spec, Status, S, P]) problem(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

// failed returns the problems recorded so far.
func (r *run[Spec, Status, S, P]) failed() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.problems)
}

// status returns the machine's part of obj's status.
// writeMoves returns the moves of phase one status write may make: along
// an edge of m, or along a path of edges whose inner phases run no step.
// The driver decides through such a path without a step to checkpoint, and
// writes its end: a completion and the next operation's begin ride on the
// checkpoint of the step before them.
func writeMoves[S, P comparable](m *statemachine.Machine[S, P]) map[statemachine.Edge[P]]bool {
	stepless := map[P]bool{}
	for _, ps := range m.Definition().Phases {
		stepless[ps.Phase] = len(ps.Steps) == 0
	}
	next := map[P][]P{}
	for _, e := range m.Edges() {
		next[e.From] = append(next[e.From], e.To)
	}
	moves := map[statemachine.Edge[P]]bool{}
	for from := range next {
		seen := map[P]bool{}
		todo := slices.Clone(next[from])
		for len(todo) > 0 {
			p := todo[0]
			todo = todo[1:]
			if seen[p] {
				continue
			}
			seen[p] = true
			moves[statemachine.Edge[P]{From: from, To: p}] = true
			if stepless[p] {
				todo = append(todo, next[p]...)
			}
		}
	}
	return moves
}

func status[Spec any, Status any, S, P comparable](obj *store.Object[Spec, Status]) *statemachine.Status[S, P] {
	return any(&obj.Status).(driver.HasMachineStatus[S, P]).MachineStatus()
}

// start starts replica id: a new incarnation, with a new driver, controller
// and manager over its own view of the store.
func (r *run[Spec, Status, S, P]) start(id int) error {
	rep := &replica{id: id, done: make(chan struct{})}
	v := &view{Backend: r.mem, wrote: r.statusWritten, acquired: r.leaseAcquired, cut: func() error {
		switch {
		case rep.dead.Load():
			return errCrashed
		case r.isPartitioned(id):
			return errPartitioned
		}
		return nil
	}}
	var b store.Backend = v
	if r.world.Backend != nil {
		b = r.world.Backend(v)
	}
	coll, err := store.NewCollection[Spec, Status](b, r.cfg.Kind, store.CollectionConfig{})
	if err != nil {
		return err
	}
	dc := r.world.Driver
	dc.Steps = make(map[string]driver.StepFunc[Spec, Status], len(r.world.Driver.Steps))
	for name, step := range r.world.Driver.Steps {
		dc.Steps[name] = r.step(rep, name, step)
	}
	dc.Observers = make(map[string]driver.ObserverFunc[Spec, Status], len(r.world.Driver.Observers))
	for name, obs := range r.world.Driver.Observers {
		dc.Observers[name] = r.observer(name, obs)
	}
	d, err := driver.New[Spec, Status](coll, r.cfg.Machine, dc)
	if err != nil {
		return err
	}
	sources := []controller.Source{d.Source()}
	if r.world.Sources != nil {
		sources = append(sources, r.world.Sources(v)...)
	}
	c, err := controller.New(controller.Config{Name: "driver", Reconciler: r.reconciler(d), Sources: sources, Logger: r.logger(id)})
	if err != nil {
		return err
	}
	controllers := []*controller.Controller{c}
	if r.world.Controllers != nil {
		more, err := r.world.Controllers(v)
		if err != nil {
			return fmt.Errorf("drivertest: Fixture.Controllers: %w", err)
		}
		controllers = append(controllers, more...)
	}
	m, err := manager.New(manager.Config{Controllers: controllers, Mode: r.cfg.Mode, Leaser: v,
		Identity: fmt.Sprintf("replica-%d", id), LeaseDuration: r.cfg.LeaseDuration, Shards: 4, Logger: r.logger(id)})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(r.ctx)
	rep.cancel = cancel
	r.mu.Lock()
	for len(r.replicas) <= id {
		r.replicas = append(r.replicas, nil)
	}
	r.replicas[id] = rep
	r.mu.Unlock()
	go func() {
		defer close(rep.done)
		_ = m.Run(ctx)
	}()
	return nil
}

// maxPerInstant bounds the reconciles of one virtual instant: a driver that
// requeues at once forever would otherwise never let virtual time pass.
const maxPerInstant = 10_000

// reconciler wraps the driver's reconciles: it counts them per virtual
// instant, and once the run has failed it parks them until the run ends, so
// that a hot loop cannot keep the bubble busy forever.
func (r *run[Spec, Status, S, P]) reconciler(d controller.Reconciler) controller.Reconciler {
	return controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
		if r.park(ctx) {
			return controller.Result{}, ctx.Err()
		}
		now := time.Now()
		r.mu.Lock()
		if !now.Equal(r.instant) {
			r.instant, r.reconciles = now, 0
		}
		r.reconciles++
		hot := r.reconciles > maxPerInstant
		if hot {
			r.problems = append(r.problems, fmt.Sprintf("%d reconciles of %s at one instant, %v: a hot loop", r.reconciles-1, key, virtual(now)))
		}
		r.mu.Unlock()
		if hot {
			r.park(ctx)
			return controller.Result{}, ctx.Err()
		}
		return d.Reconcile(ctx, key)
	})
}

// park blocks until ctx ends if the run has failed, and reports whether it
// did.
func (r *run[Spec, Status, S, P]) park(ctx context.Context) bool {
	if len(r.failed()) == 0 {
		return false
	}
	<-ctx.Done()
	return true
}

// crash kills replica id at once (its store calls fail from now on) and
// starts a new incarnation once the old one has stopped.
func (r *run[Spec, Status, S, P]) crash(id int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id < len(r.replicas) {
		r.kill(r.replicas[id])
	}
}

// kill kills incarnation rep, unless it is dead already, and starts the
// next once it has stopped. r.mu must be held.
func (r *run[Spec, Status, S, P]) kill(rep *replica) {
	r.disruptions++ // a failure it had not recorded is retried at once
	if r.stopping || !rep.dead.CompareAndSwap(false, true) {
		return
	}
	id := rep.id
	rep.cancel()
	r.restarts.Go(func() {
		<-rep.done
		if r.ctx.Err() != nil {
			return
		}
		if err := r.start(id); err != nil {
			r.problem("restarting replica %d: %v", id, err)
		}
	})
}

// stop stops every replica and waits for them.
func (r *run[Spec, Status, S, P]) stop() {
	r.mu.Lock()
	r.stopping = true // no restart begins from now on
	r.mu.Unlock()
	r.restarts.Wait()
	r.mu.Lock()
	reps := slices.Clone(r.replicas)
	r.mu.Unlock()
	for _, rep := range reps {
		rep.cancel()
		<-rep.done
	}
}

// isPartitioned reports whether replica id is cut off the store.
func (r *run[Spec, Status, S, P]) isPartitioned(id int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.partitioned[id]
}

// step wraps a step of replica rep: it checks the calls, injects the faults
// in force and records failures.
func (r *run[Spec, Status, S, P]) step(rep *replica, name string, step driver.StepFunc[Spec, Status]) driver.StepFunc[Spec, Status] {
	return func(ctx context.Context, obj *store.Object[Spec, Status], opID string) (out statemachine.Outcome, err error) {
		if r.park(ctx) || !r.await(ctx) {
			return statemachine.Failed, ctx.Err()
		}
		f, touch, disruptions := r.enter(rep, name, obj, opID, time.Now())
		defer func() {
			if errors.Is(ctx.Err(), context.Canceled) {
				r.interrupted()
			}
			r.exit(rep, obj, name, opID, disruptions, out, err)
		}()
		if touch {
			r.touchLabels()
		}
		switch f.kind {
		case doFail:
			return statemachine.Failed, errInjected
		case doTerminal:
			return statemachine.FailedTerminal, errInjected
		case doPanic:
			panic(errInjected)
		case doBreak:
			return statemachine.Failed, errBroken
		case doSlow:
			t := time.NewTimer(f.d)
			select {
			case <-ctx.Done():
				t.Stop()
				return statemachine.Failed, ctx.Err()
			case <-t.C:
			}
		}
		out, err = step(ctx, obj, opID)
		switch f.kind {
		case doFailAfter:
			return statemachine.Failed, errInjected
		case doCrashAfter:
			r.mu.Lock()
			r.kill(rep) // this incarnation, not a later one
			r.mu.Unlock()
		}
		return out, err
	}
}

// await blocks a step call, in a stepwise run, until the next action is
// done, and reports whether it may go on (false: ctx ended).
func (r *run[Spec, Status, S, P]) await(ctx context.Context) bool {
	r.mu.Lock()
	gate := r.gate
	r.mu.Unlock()
	if gate == nil {
		return true
	}
	select {
	case <-gate:
		return true
	case <-ctx.Done():
		return false
	}
}

// advance lets the step calls waiting for an action go on.
func (r *run[Spec, Status, S, P]) advance() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gate != nil {
		close(r.gate)
		r.gate = make(chan struct{})
	}
}

// open lets every step call go on from now on.
func (r *run[Spec, Status, S, P]) open() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gate != nil {
		close(r.gate)
		r.gate = nil
	}
}

// enter checks a step call as it starts and returns the fault it is to
// suffer (kind doIntent: none), whether someone else writes the document's
// labels during it, and the run's disruptions so far.
func (r *run[Spec, Status, S, P]) enter(rep *replica, name string, obj *store.Object[Spec, Status], opID string, now time.Time) (action[S], bool, int) {
	stored, storedErr := r.coll.Get(r.ctx, obj.Key)
	r.mu.Lock()
	defer r.mu.Unlock()
	fail := func(format string, args ...any) { r.problems = append(r.problems, fmt.Sprintf(format, args...)) }
	rec := r.op(opID)
	if rec.calls[name] == 0 {
		rec.order = append(rec.order, name)
	}
	rec.calls[name]++
	if len(r.partitioned) > 0 {
		rec.cut = true
	}
	op := rec.name
	if r.inFlight[obj.Key] > 0 {
		fail("step %q of %s ran on replica %d while replica %d was in a step call of the same document",
			name, op, rep.id, r.inFlight[obj.Key]-1)
	}
	r.inFlight[obj.Key] = rep.id + 1
	// The operation a crash now would run the step under: the one stored,
	// or, while the driver never wrote a status (it records the generation
	// with each), the initial phase's, whose id is the document's UID.
	var ms *statemachine.Status[S, P]
	if storedErr == nil && stored.UID == obj.UID {
		ms = status[Spec, Status, S, P](stored)
	}
	switch {
	case ms == nil: // removed meanwhile: nothing to check against
	case ms.Operation == nil && ms.ObservedGeneration == 0 && opID == stored.UID:
	case ms.Operation == nil || ms.Operation.ID != opID:
		fail("step %q ran under operation %s, which is not the operation stored (%s)", name, op, r.describeStored(ms.Operation))
	case !ms.Operation.RetryAt.IsZero() && now.Before(ms.Operation.RetryAt) &&
		stored.Generation == ms.ObservedGeneration && stored.Terminating() == ms.ObservedDeletion:
		fail("step %q of %s ran at %v, before its stored retry time %v, with no change of spec since",
			name, op, virtual(now), virtual(ms.Operation.RetryAt))
	}
	if s := r.streak; s != nil && s.op == opID && s.step == name && s.generation == obj.Generation && s.terminating == obj.Terminating() {
		s.calls++
		if allowed := 1 + callsWithin(s.delays, now.Sub(s.start)) + r.disruptions - s.disruptions; s.calls > allowed {
			fail("step %q of %s failed and was called %d times in %v; its backoff allows %d",
				name, op, s.calls, now.Sub(s.start), allowed)
			r.streak = nil
		}
	}
	var f action[S]
	if i := slices.IndexFunc(r.oneShot, func(a action[S]) bool { return a.name == name || a.name == anyStep }); i >= 0 {
		f = r.oneShot[i]
		r.oneShot = slices.Delete(r.oneShot, i, i+1)
	}
	if r.broken[name] || r.broken[anyStep] {
		f.kind = doBreak
	}
	touch := r.touch
	r.touch = false
	if f.kind == doSlow && f.d >= r.cfg.LeaseDuration {
		rec.cut = true
	}
	if f.kind != doIntent {
		r.logf("  step %q of %s on replica %d: %v", name, op, rep.id, f)
	} else {
		r.logf("  step %q of %s on replica %d", name, op, rep.id)
	}
	if touch {
		r.logf("  labels written by someone else during the call")
	}
	return f, touch, r.disruptions
}

// interrupted counts a step call cancelled by its replica as a disruption:
// the replica lost the document's shard or lease, or stopped, so its
// reconcile stores nothing of the call, and whoever takes the document
// next, the same replica included, calls the step again at once.
func (r *run[Spec, Status, S, P]) interrupted() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.disruptions++
}

// exit records how a step call ended; disruptions are the run's when it
// began: one during the call may lose the record of its failure.
func (r *run[Spec, Status, S, P]) exit(rep *replica, obj *store.Object[Spec, Status], name, opID string, disruptions int, out statemachine.Outcome, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inFlight[obj.Key] = 0
	failed := err != nil || out == statemachine.Failed || out == statemachine.FailedTerminal || out == 0
	r.op(opID).lastFailed = failed || rep.dead.Load()
	if failed {
		r.seen.mu.Lock()
		r.seen.faulted[name] = true
		r.seen.mu.Unlock()
	}
	switch s := r.streak; {
	case !failed || rep.dead.Load():
		// A replica that died in the call records nothing: the next call
		// comes at once.
		r.streak = nil
	case s == nil || s.op != opID || s.step != name || s.generation != obj.Generation || s.terminating != obj.Terminating():
		r.streak = &streak{op: opID, step: name, generation: obj.Generation, terminating: obj.Terminating(),
			start: time.Now(), calls: 1, disruptions: disruptions, delays: []time.Duration{r.retryDelay(name, err, 1)}}
	default:
		s.delays = append(s.delays, r.retryDelay(name, err, len(s.delays)+1))
	}
}

// retryDelay returns how long the driver waits after the attempts-th
// consecutive failed call of step, which returned err: the delay err
// carries (controller.RetryAfter), else the schedule of its error class,
// else the driver's backoff.
func (r *run[Spec, Status, S, P]) retryDelay(step string, err error, attempts int) time.Duration {
	if d, ok := controller.RetryDelay(err); ok {
		return d
	}
	if class, ok := r.cfg.Machine.Classify(step, err); ok {
		if d, ok := class.Delay(attempts); ok {
			return d
		}
	}
	return r.backoff.Delay(attempts)
}

// describeStored describes the operation stored, for a report.
func (r *run[Spec, Status, S, P]) describeStored(op *statemachine.Operation[P]) string {
	if op == nil {
		return "none"
	}
	return fmt.Sprintf("%s, phase %v, done %v", r.op(op.ID).name, op.Phase, op.Done)
}

// callsWithin returns how many retries of a failing step delays allow
// within d of its first failure: delays[i] is the wait after its (i+1)-th
// consecutive failure.
func callsWithin(delays []time.Duration, d time.Duration) int {
	n, sum := 0, time.Duration(0)
	for _, delay := range delays {
		if sum += delay; sum > d {
			break
		}
		n++
	}
	return n
}

// observer wraps an observer: a flipped condition reads false.
func (r *run[Spec, Status, S, P]) observer(name string, obs driver.ObserverFunc[Spec, Status]) driver.ObserverFunc[Spec, Status] {
	return func(ctx context.Context, obj *store.Object[Spec, Status]) (bool, string, error) {
		ok, reason, err := obs(ctx, obj)
		r.mu.Lock()
		defer r.mu.Unlock()
		if ok && err == nil && r.flips[name] > 0 {
			r.flips[name]--
			ok, reason = false, "drivertest: read false"
		}
		// A line for each change of what the condition reads.
		read := fmt.Sprint(ok)
		if err != nil {
			read = "error: " + err.Error()
		}
		if last, seen := r.observed[name]; !seen || last != read {
			r.observed[name] = read
			r.logf("  observe %s: %s", name, read)
		}
		return ok, reason, err
	}
}

// watch checks every write of the run's documents, in revision order: the
// phase moves only along the machine's edges, and every request token is
// carried by at most one operation (besides those that abandoned it) and
// recorded served only once one has carried it.
func (r *run[Spec, Status, S, P]) watch(ctx context.Context) {
	w, err := r.mem.Watch(ctx, r.cfg.Kind, 0)
	if err != nil {
		r.problem("watching %s: %v", r.cfg.Kind, err)
		return
	}
	defer func() { _ = w.Close() }()
	last := map[string]statemachine.Status[S, P]{} // by uid, its phase never zero
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			if ctx.Err() == nil {
				r.problem("watching %s: %v", r.cfg.Kind, err)
			}
			return
		}
		if ev.Type == store.Deleted {
			continue
		}
		obj, err := r.coll.Decode(ev.Document)
		if err != nil {
			r.problem("decoding %s %q: %v", r.cfg.Kind, ev.Document.Meta.Key, err)
			continue
		}
		ms := status[Spec, Status, S, P](obj)
		phase := ms.Phase
		if len(ev.Document.Status) == 0 || phase == *new(P) {
			// Never written by the driver (an operator may have paused
			// or commanded the document already).
			phase = r.cfg.Machine.Initial()
		}
		uid := obj.UID
		before, ok := last[uid]
		prev := before.Phase
		// An operator's move, or an operation resumed from Fault, moves
		// the phase along no edge: it is checked as a command.
		byCommand := ok && r.checkCommands(obj, before, phase, ev.Revision)
		switch edge := (statemachine.Edge[P]{From: prev, To: phase}); {
		case !ok || prev == phase:
		case r.edges[edge]:
			moved(r.seen, r.cfg.Machine, prev, phase)
		case !byCommand:
			r.problem("phase moved %v → %v, which is no edge of the machine (revision %d)", prev, phase, ev.Revision)
		}
		r.seen.mu.Lock()
		r.seen.pairs[fmt.Sprint(obj.Spec.Intent(), " ", phase)] = true
		r.seen.mu.Unlock()
		stored := *ms
		stored.Phase = phase
		last[uid] = stored
		if ok {
			r.abandoned(&before, ms)
		}
		r.requests(ms)
	}
}

// leaseAcquired counts a lease granted afresh (a new fence: it passed to a
// new holder, or its holder took it again after losing it) as a
// disruption: the document's leader or shard owner may change with it, and
// a new owner knows of a failure only what the old one stored (a call cut
// off or cancelled by the hand-over stored nothing), so it may retry at
// once.
func (r *run[Spec, Status, S, P]) leaseAcquired(l store.Lease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if last, ok := r.fences[l.Name]; ok && l.Fence != last {
		r.disruptions++
	}
	r.fences[l.Name] = l.Fence
}

// statusWritten adds a line for a status write a replica stored that
// moved the phase: written by the replica, in its order of events, so a
// run's report replays line for line.
func (r *run[Spec, Status, S, P]) statusWritten(before, doc store.Document) {
	from, err1 := r.coll.Decode(before)
	to, err2 := r.coll.Decode(doc)
	if err1 != nil || err2 != nil {
		return
	}
	r.commandsCarried(to, *status[Spec, Status, S, P](from))
	defer r.answer(to)
	prev, ms := status[Spec, Status, S, P](from).Phase, status[Spec, Status, S, P](to)
	if len(before.Status) == 0 {
		prev = r.cfg.Machine.Initial()
	}
	phase := ms.Phase
	if prev == phase {
		return
	}
	what := fmt.Sprintf("phase %v → %v", prev, phase)
	r.mu.Lock()
	if op := ms.Operation; op != nil {
		what += fmt.Sprintf(", %s begun", r.op(op.ID).name)
	}
	if f := ms.Failure; f != nil && f.Operation.Phase != phase {
		what += fmt.Sprintf(", %s failed: %s", r.op(f.Operation.ID).name, f.Cause)
	}
	r.mu.Unlock()
	r.logf("  write: %s", what)
}

// abandoned forgets the operation before held open (running, or failed and
// resumable) as a carrier of the tokens it leaves pending when after no
// longer holds it: an operation aborted by a change of intent, or moved
// away from by an operator, served nothing, and a later operation may
// carry its tokens. A token it leaves served, or withdrawn, stays carried:
// carried again, it is served twice.
func (r *run[Spec, Status, S, P]) abandoned(before, after *statemachine.Status[S, P]) {
	op := openOperation(before)
	if op == nil || op.Request == "" {
		return
	}
	if now := openOperation(after); now != nil && now.ID == op.ID {
		return
	}
	i := slices.IndexFunc(after.Requests, func(rq statemachine.RequestState) bool { return rq.Name == op.Request })
	if i < 0 {
		return
	}
	rq := after.Requests[i]
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, tok := range op.Tokens {
		if slices.Contains(rq.Tokens, tok) && !slices.Contains(rq.Served, tok) {
			delete(r.servedBy[tok], op.ID)
		}
	}
}

// openOperation returns the operation st holds open: the one running, or
// the one that failed, which an operator may resume.
func openOperation[S, P comparable](st *statemachine.Status[S, P]) *statemachine.Operation[P] {
	switch {
	case st.Operation != nil:
		return st.Operation
	case st.Failure != nil:
		return &st.Failure.Operation
	}
	return nil
}

// requests checks the request bookkeeping of one written status.
func (r *run[Spec, Status, S, P]) requests(ms *statemachine.Status[S, P]) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if op := ms.Operation; op != nil && op.Request != "" {
		for _, tok := range op.Tokens {
			if r.servedBy[tok] == nil {
				r.servedBy[tok] = map[string]bool{}
			}
			r.servedBy[tok][op.ID] = true
			if len(r.servedBy[tok]) > 1 {
				names := make([]string, 0, len(r.servedBy[tok]))
				for id := range r.servedBy[tok] {
					names = append(names, r.op(id).name)
				}
				slices.Sort(names)
				r.problems = append(r.problems, fmt.Sprintf("request %s %s served by %d operations: %s",
					op.Request, tok, len(names), strings.Join(names, ", ")))
			}
		}
	}
	// A token is checked in the write that first records it served: an
	// operation carried it, or the write records the request refused, or
	// a phase declares the request moot.
	for _, rq := range ms.Requests {
		for _, tok := range rq.Served {
			if r.checked[tok] {
				continue
			}
			r.checked[tok] = true
			if len(r.servedBy[tok]) == 0 && !r.moot[rq.Name] && rq.Refused == "" {
				r.problems = append(r.problems, fmt.Sprintf("request %s %s recorded served, but no operation carried it", rq.Name, tok))
			}
		}
	}
}

// view is a replica's view of the store: its calls fail while the replica is
// dead or cut off.
type view struct {
	store.Backend
	cut      func() error
	wrote    func(before, after store.Document) // after each status write stored
	acquired func(store.Lease)                  // after each lease acquired
}

func (v *view) Get(ctx context.Context, kind, key string) (store.Document, error) {
	if err := v.cut(); err != nil {
		return store.Document{}, err
	}
	return v.Backend.Get(ctx, kind, key)
}

func (v *view) List(ctx context.Context, kind string, opts store.ListOptions) (store.ListResult, error) {
	if err := v.cut(); err != nil {
		return store.ListResult{}, err
	}
	return v.Backend.List(ctx, kind, opts)
}

func (v *view) Create(ctx context.Context, doc store.Document) (store.Document, error) {
	if err := v.cut(); err != nil {
		return store.Document{}, err
	}
	return v.Backend.Create(ctx, doc)
}

func (v *view) UpdateSpec(ctx context.Context, doc store.Document) (store.Document, error) {
	if err := v.cut(); err != nil {
		return store.Document{}, err
	}
	return v.Backend.UpdateSpec(ctx, doc)
}

func (v *view) UpdateStatus(ctx context.Context, doc store.Document) (store.Document, error) {
	if err := v.cut(); err != nil {
		return store.Document{}, err
	}
	before, err := v.Backend.Get(ctx, doc.Meta.Kind, doc.Meta.Key)
	if err != nil {
		return store.Document{}, err
	}
	written, err := v.Backend.UpdateStatus(ctx, doc)
	if err == nil && v.wrote != nil {
		v.wrote(before, written)
	}
	return written, err
}

func (v *view) Delete(ctx context.Context, kind, key string, opts store.DeleteOptions) error {
	if err := v.cut(); err != nil {
		return err
	}
	return v.Backend.Delete(ctx, kind, key, opts)
}

func (v *view) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (store.Lease, error) {
	if err := v.cut(); err != nil {
		return store.Lease{}, err
	}
	l, err := v.Backend.AcquireLease(ctx, name, holder, ttl)
	if err == nil {
		v.acquired(l)
	}
	return l, err
}

func (v *view) RenewLease(ctx context.Context, l store.Lease) (store.Lease, error) {
	if err := v.cut(); err != nil {
		return store.Lease{}, err
	}
	return v.Backend.RenewLease(ctx, l)
}

func (v *view) ListLeases(ctx context.Context, prefix string) ([]store.Lease, error) {
	if err := v.cut(); err != nil {
		return nil, err
	}
	return v.Backend.ListLeases(ctx, prefix)
}

// joinLines indents problems for a failure report.
func joinLines(lines []string) string { return "  " + strings.Join(lines, "\n  ") }

// logger returns the logger of replica id's controllers and manager: their
// logs join the run's, when cfg.ControllerLogs is set.
func (r *run[Spec, Status, S, P]) logger(id int) *zap.Logger {
	if !r.cfg.ControllerLogs {
		return nil
	}
	enc := zap.NewDevelopmentEncoderConfig()
	enc.TimeKey = "" // the run's log has the virtual time
	out := zapcore.AddSync(writerFunc(func(p []byte) (int, error) {
		r.logf("  [replica %d] %s", id, strings.TrimSpace(string(p)))
		return len(p), nil
	}))
	return zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(enc), out, zapcore.DebugLevel))
}

// writerFunc is an io.Writer made of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
