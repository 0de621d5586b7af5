// Package journal records the history of a driver's documents (see package
// history): it makes the entries of what a driver did — a step started and
// ended, a status write's transition, refusal or operation given up, a
// settled document's drift repair or timer — from the machine's decisions
// and statuses, stamps each with the reconcile id, triggers and trace of
// the reconcile that made it, scrubs its free text of the document's
// secrets, and gives it to a history.Recorder.
package journal
