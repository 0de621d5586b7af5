package echoes

import (
	"sync"

	"github.com/tendhq/tend/expectations"
)

// Tracker recognises the watch events of a driver's own writes, so that
// they do not queue the document again: the driver already decided what
// comes next, and asked for it.
//
// It goes by revision. A conditional write leaves no room for another
// writer between the revision it read and the one it made, so an event at
// or below the newest revision the driver wrote is its own write or a change
// its read already included. An event that arrives while one of the
// driver's writes to the key is in flight cannot be told apart yet: it is
// held, and queued once the write returns if it turns out newer than it.
//
// When the driver reads from a cache, Gate records each write's revision, so
// that the next read waits until the cache shows it.
//
// The zero Tracker is ready to use, and safe for concurrent use.
type Tracker struct {
	mu   sync.Mutex // guards keys and the removed documents
	keys map[string]*echo
	// removed holds the uids of the documents the driver removed, the
	// last RemovedUIDs of them; removedRing lists them, the oldest at
	// removedNext once full.
	removed     map[string]struct{}
	removedRing []string
	removedNext int

	// Gate is the read-your-writes gate each write's revision is
	// recorded in; nil when the driver reads the store. Set it before
	// the Tracker is used.
	Gate *expectations.Gate[string]
}

// echo is what a Tracker knows of one key.
type echo struct {
	own     int64  // the newest revision the driver wrote
	writing int    // the driver's writes in flight
	held    int64  // the newest revision seen while writing
	requeue func() // queues the key, for a held event newer than the write
}

// Write runs do, a write to the document under key that returns the
// revision it made, and records it.
func (e *Tracker) Write(key string, do func() (int64, error)) error {
	e.mu.Lock()
	if e.keys == nil {
		e.keys = map[string]*echo{}
	}
	k := e.keys[key]
	if k == nil {
		k = &echo{}
		e.keys[key] = k
	}
	k.writing++
	e.mu.Unlock()

	revision, err := do()

	e.mu.Lock()
	k.writing--
	if err == nil {
		k.own = max(k.own, revision)
		if e.Gate != nil {
			e.Gate.Wrote(key, revision)
		}
	}
	var requeue func()
	if k.writing == 0 && k.held > k.own {
		requeue = k.requeue
	}
	if k.writing == 0 {
		k.held, k.requeue = 0, nil
	}
	e.mu.Unlock()
	if requeue != nil {
		requeue()
	}
	return err
}

// Known reports whether the change of the document under key at revision
// is one the driver knows of: its own write. An event during a write is
// held (known for now); requeue queues the key if it turns out not to be.
func (e *Tracker) Known(key string, revision int64, requeue func()) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	k := e.keys[key]
	switch {
	case k == nil:
		return false
	case revision <= k.own:
		return true
	case k.writing > 0:
		k.held, k.requeue = max(k.held, revision), requeue
		return true
	}
	return false
}

// Forget drops what is known of the document under key, once it is gone.
func (e *Tracker) Forget(key string) {
	e.mu.Lock()
	delete(e.keys, key)
	e.mu.Unlock()
	if e.Gate != nil {
		e.Gate.Forget(key)
	}
}

// RemovedUIDs is how many removed documents a Tracker remembers.
const RemovedUIDs = 1024

// Removal records that the driver removed the document of uid: the events
// of its last writes and of its removal may arrive after the driver forgot
// its key, and are echoes all the same. A new document under the key has
// another uid. It remembers the last RemovedUIDs documents.
func (e *Tracker) Removal(uid string) {
	if uid == "" {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.removed == nil {
		e.removed = make(map[string]struct{}, RemovedUIDs)
		e.removedRing = make([]string, 0, RemovedUIDs)
	}
	if _, ok := e.removed[uid]; ok {
		return
	}
	if len(e.removedRing) < RemovedUIDs {
		e.removedRing = append(e.removedRing, uid)
	} else {
		delete(e.removed, e.removedRing[e.removedNext])
		e.removedRing[e.removedNext] = uid
		e.removedNext = (e.removedNext + 1) % RemovedUIDs
	}
	e.removed[uid] = struct{}{}
}

// WasRemoved reports whether the driver removed the document of uid.
func (e *Tracker) WasRemoved(uid string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.removed[uid]
	return ok
}
