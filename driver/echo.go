package driver

import (
	"sync"

	"github.com/tendhq/tend/expectations"
)

// echoes recognises the watch events of a driver's own writes, so that they
// do not queue the document again: the driver already decided what comes
// next, and asked for it.
//
// It goes by revision. A conditional write leaves no room for another
// writer between the revision it read and the one it made, so an event at
// or below the newest revision the driver wrote is its own write or a change
// its read already included. An event that arrives while one of the
// driver's writes to the key is in flight cannot be told apart yet: it is
// held, and queued once the write returns if it turns out newer than it.
//
// When the driver reads from a cache, gate records each write's revision, so
// that the next read waits until the cache shows it.
type echoes struct {
	mu   sync.Mutex // guards keys and the removed documents
	keys map[string]*echo
	// removed holds the uids of the documents the driver removed, the
	// last removedUIDs of them; removedRing lists them, the oldest at
	// removedNext once full.
	removed     map[string]struct{}
	removedRing []string
	removedNext int
	gate        *expectations.Gate[string] // nil when the driver reads the store
}

// echo is what echoes knows of one key.
type echo struct {
	own     int64  // the newest revision the driver wrote
	writing int    // the driver's writes in flight
	held    int64  // the newest revision seen while writing
	requeue func() // queues the key, for a held event newer than the write
}

// write runs do, a write to the document under key that returns the
// revision it made, and records it.
func (e *echoes) write(key string, do func() (int64, error)) error {
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
		if e.gate != nil {
			e.gate.Wrote(key, revision)
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

// known reports whether the change of the document under key at revision
// is one the driver knows of: its own write. An event during a write is
// held (known for now); requeue queues the key if it turns out not to be.
func (e *echoes) known(key string, revision int64, requeue func()) bool {
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

// forget drops what is known of the document under key, once it is gone.
func (e *echoes) forget(key string) {
	e.mu.Lock()
	delete(e.keys, key)
	e.mu.Unlock()
	if e.gate != nil {
		e.gate.Forget(key)
	}
}

// removedUIDs is how many removed documents echoes remembers.
const removedUIDs = 1024

// removal records that the driver removed the document of uid: the events
// of its last writes and of its removal may arrive after the driver forgot
// its key, and are echoes all the same. A new document under the key has
// another uid. It remembers the last removedUIDs documents.
func (e *echoes) removal(uid string) {
	if uid == "" {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.removed == nil {
		e.removed = make(map[string]struct{}, removedUIDs)
		e.removedRing = make([]string, 0, removedUIDs)
	}
	if _, ok := e.removed[uid]; ok {
		return
	}
	if len(e.removedRing) < removedUIDs {
		e.removedRing = append(e.removedRing, uid)
	} else {
		delete(e.removed, e.removedRing[e.removedNext])
		e.removedRing[e.removedNext] = uid
		e.removedNext = (e.removedNext + 1) % removedUIDs
	}
	e.removed[uid] = struct{}{}
}

// wasRemoved reports whether the driver removed the document of uid.
func (e *echoes) wasRemoved(uid string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.removed[uid]
	return ok
}
