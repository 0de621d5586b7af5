// Package drivertest property-tests a machine's real
// [github.com/tendhq/tend/driver.Driver]: the user's own steps and
// observers, run by real controllers on an in-memory store, under faults that
// persist, intents that change at the worst moment, crashes, and replicas
// that lose their leases. Time is virtual (testing/synctest), so a run that
// spans hours of backoff and deadlines takes milliseconds.
//
// # Using it
//
// A test gives a [Config]: the machine, the kind of its documents, how the
// user's API writes an intent or a request into a spec, and a [Fixture]: the
// driver's real steps and observers over simulated backends, and what must
// hold of them.
//
//	func TestServiceDriver(t *testing.T) {
//		drivertest.Check(t, drivertest.Config[Spec, Status, State, Phase]{
//			Machine: machine,
//			Kind:    "Service",
//			Fixture: func(env drivertest.Env) (drivertest.Fixture[Spec, Status], error) {
//				c := newCloud(env) // the backends, simulated in memory
//				return drivertest.Fixture[Spec, Status]{
//					Driver:    driverConfig(c), // the real steps and observers
//					Invariant: c.Check,         // never two instances, …
//					Matches:   c.Matches,       // running means an instance, …
//				}, nil
//			},
//			SetIntent: func(s *Spec, st State) { s.State = st }, // as the API writes it
//			Replicas:  2,
//			Mode:      manager.LeaderElection,
//		})
//	}
//
// # What a run does
//
// A run creates one document, starts the replicas (each a
// manager.Manager running the driver's controller and the world's
// others, over its own view of the store), and performs random actions:
//
//   - a user's writes: a new intent (through the driver's admission, as an
//     API would), a request, a deletion through the store (sometimes with
//     another owner's finalizer, removed later), a new document after one
//     was removed, a label written while a step runs (the driver's status
//     write after the step conflicts with it);
//   - step faults: a failure before the step's effect, after it, a terminal
//     one (with [Config.TerminalFailures]), a panic, a call slower than a
//     lease, a crash of the replica between the step's effect and the write
//     that records it, a step that fails on every call until healed;
//   - a condition that reads false for a few observations (one that no
//     completion or health requires false, so the false reading delays,
//     never completes, an operation);
//   - a replica crashing and restarting, or cut off the store until healed
//     (it loses its lease; another replica takes over);
//   - virtual time passing, from nothing to hours;
//   - with [Config.Operators], an operator pausing and resuming the
//     document, and commanding a request, a retry, a skip of the step
//     that failed or a move out of Fault, where the oncall package's
//     client would (one drawn too early waits for the write of a failed
//     step or a Fault, as a paged operator does; a run that ends held in
//     Fault is mostly answered too).
//
// After each action the run waits until every goroutine waits, so a run
// mostly replays from its seed. What the goroutines of the replicas and
// their controllers do between two such waits may still interleave
// differently from one run to the next (under -race the Go scheduler
// shuffles them on purpose): a failure that hangs on such a race can
// replay as a pass, or show another symptom of the same defect. At the end
// the faults that last stop and the document must settle within
// [Config.Horizon] (of an operator's last answer, when one answers then).
//
// # What it checks
//
// On every run, with no user code:
//
//   - the phase moves only along the machine's edges, or in one write
//     along a path of them through phases that run no step (checked on
//     every write, through the store's watch);
//   - a step runs only under the operation id stored, read from the store
//     as the step starts (before the first status write, the document's
//     UID, which the operation of a transitional initial phase takes), and
//     never before the retry time its last failure stored (unless the spec
//     changed since); a step that keeps failing is called no more often than
//     the delays after its failures allow (the delay each error declares,
//     with controller.RetryAfter or its machine's error class, else the
//     driver's backoff), plus one call after each crash, cut, heal, lease
//     hand-over or call cancelled by its replica losing the document (its
//     failure may have gone unrecorded): a hot loop fails at once;
//   - an operator's retry, skip or move is carried out or refused before
//     the document counts as settled, by a write that stores what the
//     machine makes of the status before it
//     (statemachine.Machine.ApplyCommands): the only way the phase leaves
//     Fault along no edge; a retry or a skip restarts the step's backoff;
//   - no two step calls of one document overlap, on one replica or two;
//   - every request token is carried by one operation at most (or by a
//     later one when the first ended leaving it pending: aborted by a
//     change of intent, or moved away from by an operator), and recorded
//     served only once an operation has carried it, or with the reason the
//     machine refused it;
//   - once faults stop, the document reaches a settled pair, a declared
//     refusal or the Fault phase within the horizon (counted again from an
//     operator's answer); a deleted document is removed once its
//     finalizers clear, unless a failure holds it. After an operator's skip
//     or move, a document that never settles is logged instead: the world
//     may differ from what the machine was told for good;
//   - the Fault phase is an accepted end only when something explains it:
//     the operation failed terminally, its last step call failed (whoever
//     failed it), a replica was cut off or a call slowed past a lease while
//     it ran, the intent is refused, an operator's skip or move told the
//     machine what the harness cannot check of the world (which also
//     keeps the world's checks from failing the run), or [Config.Accept]
//     declares the end. A document held there for any other reason (a
//     deadline reached while every step call succeeded: a step that does
//     nothing) fails the run, naming the operation, the steps called and
//     the conditions that never held;
//   - the world's own invariant after every action, and its settled check at
//     the end.
//
// # Coverage
//
// A passing [Check] logs one line: the runs, their actions, the distinct
// states they reached, the (intent, phase) pairs seen, the machine's edges
// taken of those it declares, and its steps whose calls failed of those
// it declares; with [Config.Operators], the retries, skips and
// moves written and carried out, and the requests commanded. With [Config.RequireCoverage] an edge never taken or a step
// never failed fails the test.
//
// # Failures and replay
//
// A failing run is shrunk by rapid to a short list of actions and reported
// once: the run, a line for each action, step call (with the fault it
// suffered), changed observation and phase write, with its virtual time
// and stable operation names (op1, op2, …; with [Config.ControllerLogs],
// the controllers' logs too), then the failed check, last. Rapid then
// prints the replay command: -rapid.seed (or -rapid.failfile; a replay of
// a saved failure says that it is one, as it may predate the code under
// test); -rapid.checks sets the number of runs. A [Failure] of [RunOne] or
// [Explore] carries its own replay command.
//
// # Exhaustive search
//
// For small machines, [Explore] and [Search] try every sequence of up to a
// given number of actions from a small set, shortest first, and skip
// sequences that reach a state a shorter one reached; [Explore] logs how
// many sequences and distinct states it tried, and a [Failure] it or
// [Search] found carries them (Failure.Sequences, Failure.States). The search is
// deterministic: a defect within its depth is found on every run, which is
// what a test of a planted defect needs.
//
// # A new version of the machine against a snapshot
//
// [CheckCarried] checks that a new version of a machine carries on every
// document of a snapshot — what `tend get KIND -o json` writes, read with
// [ReadSnapshot] or [ParseSnapshot] — and lists those it would strand, so
// a team runs it in CI before it deploys the new version.
package drivertest
