package memory

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/backend"
)

// entry is one change in a kind's history.
type entry struct {
	rev int64
	typ store.EventType
	v   *version
}

// changeLog is a ring of a kind's most recent changes. Each change has a
// sequence number; the ring holds those in [first, next).
type changeLog struct {
	buf   []entry
	first uint64
	next  uint64
	limit int // most entries kept
}

func (l *changeLog) at(seq uint64) *entry { return &l.buf[seq%uint64(len(l.buf))] }

// push appends e and reports the revision of the change it discarded to
// make room, if any. The ring grows by doubling up to limit.
func (l *changeLog) push(e entry) (dropped int64, ok bool) {
	if n := int(l.next - l.first); n == len(l.buf) {
		if n < l.limit {
			buf := make([]entry, min(max(2*n, 16), l.limit))
			for seq := l.first; seq < l.next; seq++ {
				buf[seq%uint64(len(buf))] = *l.at(seq)
			}
			l.buf = buf
		} else {
			old := l.at(l.first)
			dropped, ok = old.rev, true
			*old = entry{}
			l.first++
		}
	}
	*l.at(l.next) = e
	l.next++
	return dropped, ok
}

// dropThrough discards the changes up to and including rev.
func (l *changeLog) dropThrough(rev int64) {
	for l.first < l.next && l.at(l.first).rev <= rev {
		*l.at(l.first) = entry{}
		l.first++
	}
}

// after returns the sequence number of the first change after rev.
func (l *changeLog) after(rev int64) uint64 {
	n := int(l.next - l.first)
	return l.first + uint64(sort.Search(n, func(i int) bool { return l.at(l.first+uint64(i)).rev > rev }))
}

// record appends a change to the kind's history. The caller holds s.mu for
// writing, and wakes the kind's watches once it has released it.
func (k *kind) record(typ store.EventType, rev int64, v *version) {
	if dropped, ok := k.log.push(entry{rev: rev, typ: typ, v: v}); ok {
		k.compacted = max(k.compacted, dropped)
	}
}

// wake closes the channel waiting watches hold, if any. A writer calls it
// after each change it records, once it has released s.mu: a watch takes
// the channel under s.mu after finding no change, so it is woken by the
// write of any change it did not find. A writer that failed may call it
// too: a watch woken for nothing looks again and waits again.
func (k *kind) wake() {
	k.notifyMu.Lock()
	if k.notify != nil {
		close(k.notify)
		k.notify = nil
	}
	k.notifyMu.Unlock()
}

// waitChan returns the channel closed at the kind's next change.
func (k *kind) waitChan() <-chan struct{} {
	k.notifyMu.Lock()
	defer k.notifyMu.Unlock()
	if k.notify == nil {
		k.notify = make(chan struct{})
	}
	return k.notify
}

// Watch returns every change to the kind after fromRevision; from a
// revision the store has not reached yet, it waits for the changes after
// it. Watches share the kind's history, so they cost no goroutine and
// writers never wait for them.
func (s *Store) Watch(ctx context.Context, kindName string, fromRevision int64) (store.Watch, error) {
	const op = "watch"
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k, err := s.kindOf(op, kindName, "")
	if err != nil {
		return nil, err
	}
	if err := backend.CheckWatch(kindName, fromRevision); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if fromRevision < k.compacted {
		return nil, compactedError(k, fromRevision)
	}
	return &watch{s: s, k: k, next: k.log.after(fromRevision), start: k.log.next, last: fromRevision, done: make(chan struct{})}, nil
}

func compactedError(k *kind, rev int64) error { return backend.Compacted(k.name, rev, k.compacted) }

// watch reads a kind's change log from its own position.
type watch struct {
	s         *Store
	k         *kind
	done      chan struct{} // closed by Close
	closeOnce sync.Once

	// start is the sequence number of the first change made after the
	// watch began; the changes before it are history the watch replays and
	// do not count against the buffer.
	start uint64

	// mu guards next, last and err.
	mu   sync.Mutex
	next uint64 // sequence number of the next change to deliver
	last int64  // revision of the last change delivered
	err  error  // the failure every later Next returns
}

// Next returns the next change. Its document is the store's own, shared by
// every watch: it must not be changed (see store.Event.Document).
func (w *watch) Next(ctx context.Context) (store.Event, error) {
	for {
		if err := ctx.Err(); err != nil {
			return store.Event{}, err
		}
		e, wait, err := w.poll()
		if err != nil {
			return store.Event{}, err
		}
		if wait == nil {
			// A version never changes once stored, so every watch shares
			// it (see store.Event.Document).
			return store.Event{Type: e.typ, Revision: e.rev, Document: e.v.shared()}, nil
		}
		select {
		case <-wait:
		case <-w.done:
		case <-ctx.Done():
			return store.Event{}, ctx.Err()
		}
	}
}

// poll returns the next change, or a channel to wait on if there is none.
func (w *watch) poll() (entry, <-chan struct{}, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return entry{}, nil, w.err
	}
	select {
	case <-w.done:
		w.err = &store.Error{Op: "watch", Kind: w.k.name, Err: store.ErrClosed}
		return entry{}, nil, w.err
	default:
	}
	w.s.mu.RLock()
	defer w.s.mu.RUnlock()
	l := &w.k.log
	// A watch from a revision the store had not reached skips the changes
	// up to it, even those discarded meanwhile.
	if w.next < l.first && w.k.compacted <= w.last {
		w.next = l.first
	}
	for w.next >= l.first && w.next < l.next && l.at(w.next).rev <= w.last {
		w.next++
	}
	switch waiting := l.next - max(w.next, w.start); {
	case w.next < l.first:
		w.err = compactedError(w.k, w.last)
	case waiting > w.s.watchBuffer:
		w.err = &store.Error{Op: "watch", Kind: w.k.name,
			Err: fmt.Errorf("%w: %d changes waiting, more than the buffer of %d; watch again from revision %d",
				store.ErrWatchLagged, waiting, w.s.watchBuffer, w.last)}
	case w.next < l.next:
		e := *l.at(w.next)
		w.next++
		w.last = e.rev
		return e, nil, nil
	default:
		return entry{}, w.k.waitChan(), nil
	}
	return entry{}, nil, w.err
}

// Close ends the watch; a Next waiting in another goroutine returns
// [store.ErrClosed].
func (w *watch) Close() error {
	w.closeOnce.Do(func() { close(w.done) })
	return nil
}
