// Package echoes recognises the watch events of a driver's own writes, so
// that they do not queue the document again: the driver already decided
// what comes next, and asked for it. It goes by revision, holds an event
// that arrives while a write of the same key is in flight until the write
// returns, remembers the last [RemovedUIDs] documents the driver removed (the
// events of their last writes may arrive after the driver forgot their key),
// and, when the driver reads from a cache, feeds each write's revision to a
// read-your-writes gate.
package echoes
