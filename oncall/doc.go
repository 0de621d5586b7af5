// Package oncall is what a person on call needs to act on documents
// without writing Go: read any document's State, Phase, failure and
// history, and act on it through the store, so that every replica of its
// controller honours the action.
//
// # Machines readable without the user's code
//
// A running controller records the machine of the kind it drives in a
// document of kind [MachinesKind] (a [Registration]). The machine's part of
// every document's status sits at fixed JSON paths (status.phase,
// status.target, status.operation, status.failure, status.conditions…: see
// statemachine.Status), so a program that links none of the user's types
// reads them all.
//
// # Actions
//
// Operators write only two fields of a document's status, with a revision
// precondition like every other write: status.paused, a hold under which
// the controller runs nothing for the document, and status.commands,
// commands its controller carries out (or refuses) in the write that
// removes them. Every action is recorded in the document's history: one
// entry when an operator pauses or resumes, and for a command one "issued"
// entry ([history.IssuedID]) and, once its controller carried it out or
// refused it, one outcome entry ([history.OutcomeID]). [Action] is any of
// them as data, for [Client.Apply].
//
// Actions apply only where a machine drives: an action on a document of a
// kind no machine is registered for (the registry's own kind, the history
// kinds, a kind no Manager ran) is refused with [ErrNotDriven] before
// anything is written.
//
// # Bulk actions
//
// A [Selection] picks documents of a kind by labels, phases, being stuck,
// or all of them (which must be said: a selection of nothing selects
// nothing). [Client.Select] previews it; [Client.Bulk] acts on it at a
// [Rate], reports each document's outcome, and, given the [Preview] the
// operator confirmed, acts only on what was previewed and lists the
// documents that changed since, left the selection or joined it.
//
// # Over HTTP
//
// [Server] is an http.Handler serving this package's API, for a program to
// mount (beside its console, or as its Manager handler's fallback); it is
// read-only unless an authorizer is configured, and programs present a
// bearer token. [Remote] has the Client's methods, carried out by a
// Server: tend --server uses it. Errors keep their identity across the
// wire: a Remote's error matches the sentinel the Client's would.
//
// # Waiting
//
// [Client.Wait] waits for a command's outcome; [Client.Await] waits for a
// document to settle at its intent (or to be held in Fault, refused or
// removed), for programs that write intents without the user's Go types.
package oncall
