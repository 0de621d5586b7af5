// Package statemachine declares typed State/Phase machines as data, checks them
// when they are built, and decides, purely, what a controller does next.
//
// # State and Phase
//
// A document carries two values. Its State is the user's intent: what they want
// (an ApiGateway Running, Stopped, Restarting or Deleted). Its Phase is the
// system's progress: what is true or under way (Creating → Created → Starting →
// Started → Stopping → Stopped → Deleting → Deleted). Users write State;
// only the document's controller writes Phase. A controller drives each
// document until its (State, Phase) pair is settled: intent reached.
//
// # Declaring a machine
//
// A [Definition] lists the states, the phases ([PhaseSpec]) and, for each pair,
// what it means:
//
//   - settled ([Settle]): the intent is reached, nothing to do (Running in Started);
//   - ruled ([Rule]): the pair begins a transitional phase (Running in Created
//     begins Starting);
//   - refused ([RefusalRule]): the machine cannot honour the intent there, and says
//     why; [Machine.Admit] refuses to write it;
//   - unreachable: the pair cannot occur; [Machine.Admit] refuses the intent.
//
// Phases are resting (they wait for intent), transitional (operations: ordered,
// named steps, then a completion judged from observed conditions, then a Then
// phase), terminal (no exits) or fault (where failed operations wait for an
// operator). Every operation is bounded ([Bounds]: a deadline, an attempt cap, a
// step timeout, with finite defaults) and fails to its FailTo phase, the Fault
// phase by default. An [AbortRule] lets a changed intent stop an operation at its
// next step boundary. A phase marked NoReturn is a point of no return: once an
// ApiGateway is Deleting, nothing may lead back. A path back that is intended,
// like a RuntimeDomain's Deleted → Creating when its gateway starts again, is
// declared in Cycles.
//
// # Checked when built
//
// [New] rejects a definition with an error that names every offending pair or
// phase (see New for the list). Above all, every (State, Phase) pair must be
// covered: a gateway whose (State, Phase) pair no handler matched sat forever,
// its stages and database never cleaned up; a machine with such a hole does not
// build. Refusals are only ever declared, never inferred from a missing rule.
// New also proves liveness: with the intent held constant, and each operation
// either completing or failing, every pair can always still reach a settled
// pair of its intent, a declared refusal, or (but for the final intent) the
// Fault phase.
//
// # Deciding
//
// [Machine.Decide] is pure: given the intent and the [Status] (phase, observed
// [Condition] values, the checkpoint of the operation in flight) and the time, it
// returns a [Decision]: Nothing, Begin a phase, Run a step, Complete, Wait,
// Hold, Backoff (a failed step's retry time has not come), Abort or Expire. The
// controller executes it and folds the result with [Machine.Apply], which
// returns the status to persist in one store write. There are no goroutines,
// clocks or I/O here; times are passed in as data, operation ids are generated
// by the caller. That is what makes machines property-testable with
// [github.com/tendhq/tend/statemachine/smtest].
//
// While a transitional phase runs, the intent is not consulted unless an
// [AbortRule] says so; the next rule applies when it completes. Each operation
// has an id recorded before its first step runs and reused on every retry.
// Steps resume at the first one not done after a crash; a step that did part of
// its work reports [Progressed] and runs again (delete a batch of triggers,
// return, run again); a step whose work runs elsewhere (a job it started)
// reports [Pending] until that work ends, keeping its failure count, so a
// job that keeps failing backs off. A failed step's retry time is kept in status
// (Operation.RetryAt), so the backoff survives restarts. A machine declares
// classes of step errors ([ErrorClass], [Machine.Classify]): final, or
// retried on a schedule of their own.
//
// # Beyond a single State
//
// Three more things move a settled object, none of them a change of intent:
//
//   - a one-shot request ([RequestRule]): a token the spec carries (a restart
//     asked for at some time), served once by the operation its Serve edge
//     begins, and recorded as served in the write that completes it;
//   - a [Timer]: an operation begun after a time in the phase, or at a time
//     computed from the object, due times kept in status;
//   - drift: a resting phase's Health conditions stop holding, and its Repair
//     begins.
//
// The build's liveness check follows these moves too.
//
// # Versions and migrations
//
// A machine changes between releases. [Definition.Version] numbers them,
// and [Definition.Migrations] declare how a status the previous version
// wrote is carried onto the new one: a state retired for another, a phase
// renamed, a step renamed or removed, an operation restarted or resumed at
// a named step. [Machine.Carry] carries one status, or returns the
// [Strand] that says why it cannot be carried; a [StrandedError] lists
// the documents of a kind stranded so ([ErrStranded]). [Machine.Digest]
// identifies a machine, and [Machine.Compare] lists what changed since a
// previous version.
//
// # Diagrams
//
// [Machine.Mermaid] and [Machine.DOT] render a machine for docs; the concept
// page's diagram is generated from the gateway machine.
//
// # Descriptors
//
// [Machine.Descriptor] writes a machine as plain data, every State and Phase
// by its String form, with a JSON encoding ([Descriptor]). A program that does
// not link the machine's Go types (an operator's command-line tool, a web
// console) rebuilds it with [ParseDescriptor] into a Machine[string, string]
// that draws the same diagrams and makes the same decisions.
package statemachine

//go:generate go test -run=^(TestExportGolden|TestDocsDiagram)$ -update .
