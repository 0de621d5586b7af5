// Package informer keeps one indexed in-memory copy of each kind of a store
// per process, fed by one list-watch-resume loop, and fans every change out
// to every consumer.
//
// # The loop
//
// An [Informer] lists its kind, then watches it from the list's revision.
// When the store has compacted the history the watch needs
// (store.ErrCompacted) it lists again and delivers the differences between
// the cache and the new list as changes; on any other failure it watches
// again from the last revision it received, after a backoff
// ([Config.Backoff]), so that no change is missed or delivered twice.
// [Informer.HasSynced] and [Informer.WaitForSync] tell when the first list
// has landed: a consumer that read an empty cache before then would think
// every document gone.
//
// # The cache
//
// [Informer.Get] reads a document by key; [Informer.List] selects by label
// selector and by owner (an index of owner UIDs is built in), as
// store.Reader.List does; [Informer.AddIndex] adds an index computed by a
// function of the user's, read with [Informer.ByIndex]. Documents read from
// the cache are shared with every reader and must not be changed. The cache
// shows every change up to [Informer.Revision];
// [Informer.ObserveRevisions] reports each advance, which is what a
// read-your-writes gate (expectations.Gate) needs.
//
// # Fan-out
//
// Each consumer subscribes ([Informer.Subscribe], or [Informer.Handle] with
// a [Handler]) and receives every change, with the document before and
// after it, from a queue of its own: the informer never waits for a
// consumer, so a slow one delays nobody else.
//
// # One watch per kind per process
//
// A [Factory] hands out the same informer for a kind however many consumers
// ask for it, and runs them all: give one Factory per store to every
// consumer of the process (controllers, their drivers, garbage collection)
// and the store sees one watch per kind.
//
// Constructors start nothing; [Informer.Run] and [Factory.Run] block until
// every goroutine they started has stopped.
package informer
