// Package phasegraph is the graph of a machine's phases, by phase index,
// and the searches a build runs over it: what a phase reaches, the
// shortest path from a phase back to itself, and whether every phase a
// walk can come to still reaches an end.
//
// It knows phases only as indices and moves only as edges or as the moves
// a caller's function allows; what the phases are, and what counts as an
// end, is package statemachine's to say.
package phasegraph
