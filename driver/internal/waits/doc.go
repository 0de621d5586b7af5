// Package waits computes how long a driver waits before it looks again at
// an operation that waits: for its completion, or on a step that reported
// statemachine.Pending. The first wait is short ([First]), and each wait
// after it lasts as long as the document has waited at that point so far,
// up to a limit, so a condition that holds soon is seen soon and one that
// takes long is not observed more often than it must. The schedule lives in
// memory only: it decides when to look, never what is written.
package waits
