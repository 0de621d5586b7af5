// Package compare finds what changed between two versions of a machine.
//
// It reads each version as a [Version]: the few parts of a machine's
// descriptor that a comparison reports on (its version number, states,
// phases with their types and steps, renames, requests, timers, settled
// pairs and rules), every value written as its string. It knows nothing of
// how a machine decides; package statemachine builds a Version from a
// descriptor and turns the [Change] values into its own.
package compare
