package cascade

import (
	"slices"
	"sync"

	"github.com/tendhq/tend/store"
)

// ref names a document; it is the key of the collector's work queue.
type ref struct{ kind, key string }

// node is what the graph remembers of a document: enough to tell, from an
// event, which documents may need the collector's attention.
type node struct {
	uid         string
	owners      []store.OwnerRef
	terminating bool
	foreground  bool // holds ForegroundFinalizer
	orphan      bool // holds OrphanFinalizer
}

func newNode(m *store.Meta) *node {
	return &node{
		uid:         m.UID,
		owners:      slices.Clone(m.Owners),
		terminating: m.Terminating(),
		foreground:  m.HasFinalizer(ForegroundFinalizer),
		orphan:      m.HasFinalizer(OrphanFinalizer),
	}
}

// held reports whether the document is Terminating and waits for the
// collector: its dependents are being deleted or orphaned.
func (n *node) held() bool { return n.terminating && (n.foreground || n.orphan) }

// waiting reports whether the document waits for its dependents' deletion.
func (n *node) waiting() bool { return n.terminating && n.foreground && !n.orphan }

// graph is the collector's picture of the documents of the watched kinds,
// built from lists and watches. It only decides what to look at: every
// decision to write is taken again on documents read from the store.
type graph struct {
	mu    sync.Mutex                  // guards nodes and deps
	nodes map[ref]*node               // every document seen, by kind and key
	deps  map[string]map[ref]struct{} // owner UID -> documents referring to it
}

func newGraph() *graph {
	return &graph{nodes: make(map[ref]*node), deps: make(map[string]map[ref]struct{})}
}

// pending returns every document that needs processing: after the first lists
// the collector looks at each of them once.
func (g *graph) pending() []ref {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.pendingLocked()
}

func (g *graph) pendingLocked() []ref {
	var out []ref
	for r, n := range g.nodes {
		if n.held() || g.attentionLocked(n) {
			out = append(out, r)
		}
	}
	return out
}

// upsert records the document m (from a list or an Added or Modified event)
// and returns the documents to process because of the change.
func (g *graph) upsert(m *store.Meta) []ref {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.upsertLocked(m, nil)
}

// remove forgets the document kind/key (deleted) and returns the documents
// to process because it is gone.
func (g *graph) remove(kind, key string) []ref {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.removeLocked(ref{kind, key}, nil)
}

// replace makes docs the whole content of kind, as a relist after a lost
// watch found it, and returns the documents to process. Those include every
// document with an owner the graph does not know: an owner created and
// deleted while the watch was lost was never in the graph, so its dependents
// are found only that way.
func (g *graph) replace(kind string, docs []store.Document) []ref {
	g.mu.Lock()
	defer g.mu.Unlock()
	listed := make(map[string]bool, len(docs))
	var out []ref
	for i := range docs {
		listed[docs[i].Meta.Key] = true
		out = g.upsertLocked(&docs[i].Meta, out)
	}
	for r := range g.nodes {
		if r.kind == kind && !listed[r.key] {
			out = g.removeLocked(r, out)
		}
	}
	return append(out, g.pendingLocked()...)
}

func (g *graph) upsertLocked(m *store.Meta, out []ref) []ref {
	r := ref{m.Kind, m.Key}
	old := g.nodes[r]
	if old != nil && old.uid != m.UID {
		// The document was deleted and created again while unobserved.
		out = g.removeLocked(r, out)
		old = nil
	}
	n := newNode(m)
	g.nodes[r] = n
	if old != nil {
		g.unindexLocked(r, old)
	}
	for _, o := range n.owners {
		set := g.deps[o.UID]
		if set == nil {
			set = make(map[ref]struct{})
			g.deps[o.UID] = set
		}
		set[r] = struct{}{}
	}
	if n.held() || g.attentionLocked(n) {
		out = append(out, r)
	}
	if old != nil {
		// An owner held for its dependents looks again when a reference to
		// it changed or went away.
		for _, o := range old.owners {
			if !slices.Contains(n.owners, o) {
				out = g.appendHeldLocked(out, o)
			}
		}
	}
	return out
}

func (g *graph) removeLocked(r ref, out []ref) []ref {
	n := g.nodes[r]
	if n == nil {
		return out
	}
	delete(g.nodes, r)
	g.unindexLocked(r, n)
	for d := range g.deps[n.uid] {
		out = append(out, d)
	}
	for _, o := range n.owners {
		out = g.appendHeldLocked(out, o)
	}
	return out
}

func (g *graph) unindexLocked(r ref, n *node) {
	for _, o := range n.owners {
		if set := g.deps[o.UID]; set != nil {
			delete(set, r)
			if len(set) == 0 {
				delete(g.deps, o.UID)
			}
		}
	}
}

// appendHeldLocked appends the owner o refers to if the graph knows it as
// held for its dependents.
func (g *graph) appendHeldLocked(out []ref, o store.OwnerRef) []ref {
	r := ref{o.Kind, o.Key}
	if n := g.nodes[r]; n != nil && n.uid == o.UID && n.held() {
		out = append(out, r)
	}
	return out
}

// cycle returns a dependent of the owner r (whose UID is uid) that refers to
// it with BlockOwnerDeletion and from which, following such references
// through documents waiting for their dependents, r is reached again: a
// cycle of foreground deletions that would wait forever.
func (g *graph) cycle(r ref, uid string) (ref, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if n := g.nodes[r]; n == nil || n.uid != uid {
		return ref{}, false
	}
	seen := make(map[string]bool)
	for _, first := range g.blockersLocked(uid, nil) {
		next := []ref{first}
		for len(next) > 0 {
			d := next[len(next)-1]
			next = next[:len(next)-1]
			n := g.nodes[d]
			if n.uid == uid {
				return first, true
			}
			if seen[n.uid] || !n.waiting() {
				continue
			}
			seen[n.uid] = true
			next = g.blockersLocked(n.uid, next)
		}
	}
	return ref{}, false
}

// blockersLocked appends the known documents that refer to the owner uid with
// BlockOwnerDeletion.
func (g *graph) blockersLocked(uid string, out []ref) []ref {
	for d := range g.deps[uid] {
		for _, o := range g.nodes[d].owners {
			if o.UID == uid && o.BlockOwnerDeletion {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

// attentionLocked reports whether a live document has an owner the graph does
// not know as present, or one waiting for its dependents' deletion.
func (g *graph) attentionLocked(n *node) bool {
	if n.terminating {
		return false
	}
	for _, o := range n.owners {
		on := g.nodes[ref{o.Kind, o.Key}]
		if on == nil || on.uid != o.UID || on.waiting() {
			return true
		}
	}
	return false
}
