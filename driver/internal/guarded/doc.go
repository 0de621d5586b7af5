// Package guarded adapts a typed document to finalizer.Guarded, so that
// package finalizer adds and removes a driver's finalizer on it: each
// finalizer write is a write of the document's spec conditional on the
// revision read, and is recorded among the driver's own writes (see package
// echoes) so that its watch event does not queue the document again.
package guarded
