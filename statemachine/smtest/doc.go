// Package smtest is a property-based test harness for
// [github.com/tendhq/tend/statemachine] machines, built on [pgregory.net/rapid].
//
// # What it checks
//
// The user gives a [Config]: the machine, and a [World]: a model of the
// resources the machine's steps act on, with step implementations that change
// it, observers that report its conditions, invariants, and what "settled"
// means for each intent. Each test case starts a new object and draws a list of
// actions:
//
//   - intent changes the machine admits (as an API calling Machine.Admit would);
//   - controller ticks: read the persisted status, observe, decide, act, apply,
//     write; and runs of ticks until the machine settles;
//   - faults: a step failing before its side effect, a step failing after it,
//     a crash that loses the status back to the last write (and, with
//     Config.TerminalFailures, terminal failures);
//   - time advances (conditions carry times; worlds may become ready later).
//
// After every action the harness checks that the persisted phase moved only
// along the machine's edges, checkpoints only grew, steps ran in order under
// the persisted operation id, no operation id was reused, the pair can be
// decided, the world's invariants hold, and, whenever the machine reports the
// intent settled, the world matches it. At the end it stops injecting faults,
// ticks until the machine settles (or holds in its Fault phase) and fails if it
// does not within Config.SettleTicks.
//
// Intents that would carry the object past a point of no return end the
// exploration of the rest of the machine, so the harness draws them less often.
//
// # Failures
//
// A failing case is shrunk by rapid to a minimal list of actions and logged,
// one line per action; it replays with -rapid.seed or -rapid.failfile, and
// -rapid.checks sets the number of cases (100 by default).
//
// [Check] is the entry point for a test function; [Run] runs one case inside a
// property the user drives with rapid.Check.
package smtest
