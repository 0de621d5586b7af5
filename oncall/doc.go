// Package operator is what a person on call needs to act on documents
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
// removes them. Every action is recorded in the document's history.
//
// # Waiting
//
// [Client.Wait] waits for a command's outcome; [Client.Await] waits for a
// document to settle at its intent (or to be held in Fault, refused or
// removed), for programs that write intents without the user's Go types.
package oncall
