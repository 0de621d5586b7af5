package etcd

import "sync"

// recentSize bounds how many documents a store remembers. A controller
// reads a document and then writes it a few times over, so what matters is
// the documents its workers hold at once, which is far fewer.
const recentSize = 1024

// recent remembers the stored form of the documents a store read or wrote
// last, each with its ModRevision, so that a write whose precondition names
// that revision can skip reading the document again: a key's ModRevision
// identifies one value, and the write's transaction compares it, so a
// remembered document that is no longer the stored one only makes the write
// fail with the conflict it would have had anyway. A zero recent is empty
// and ready to use.
type recent struct {
	mu   sync.Mutex // guards docs
	docs map[string]remembered
}

// remembered is one document as etcd stores it, at revision rev. Strings
// are immutable, so nothing the store hands out shares its bytes.
type remembered struct {
	rev   int64
	value string
}

// put remembers value as the document under key at revision rev, unless a
// newer revision is remembered. When full, it forgets an arbitrary other
// document.
func (r *recent) put(key string, rev int64, value string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.docs[key]; ok && old.rev >= rev {
		return
	}
	if r.docs == nil {
		r.docs = make(map[string]remembered)
	}
	if _, ok := r.docs[key]; !ok && len(r.docs) >= recentSize {
		for k := range r.docs {
			delete(r.docs, k)
			break
		}
	}
	r.docs[key] = remembered{rev: rev, value: value}
}

// get returns the stored form of the document under key if it is remembered
// at revision rev.
func (r *recent) get(key string, rev int64) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, ok := r.docs[key]
	return d.value, ok && d.rev == rev
}

// forget drops what is remembered of the document under key.
func (r *recent) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.docs, key)
}
