package informer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tendhq/tend/store"
)

// IndexFunc returns the values a document is indexed under in one index:
// none, one or several. It must be a pure function of the document.
type IndexFunc func(doc *store.Document) []string

// ownerIndex is the built-in index of documents by the UIDs of their owners.
const ownerIndex = ""

func indexOwners(doc *store.Document) []string {
	uids := make([]string, len(doc.Meta.Owners))
	for i, o := range doc.Meta.Owners {
		uids[i] = o.UID
	}
	return uids
}

// cache holds the documents by key and their indexes. Its owner's mutex
// guards it.
type cache struct {
	items   map[string]*store.Document
	funcs   map[string]IndexFunc
	indexes map[string]map[string]map[string]struct{} // index → value → keys
}

func newCache() cache {
	c := cache{
		items:   map[string]*store.Document{},
		funcs:   map[string]IndexFunc{ownerIndex: indexOwners},
		indexes: map[string]map[string]map[string]struct{}{ownerIndex: {}},
	}
	return c
}

func (c *cache) get(key string) *store.Document { return c.items[key] }

// all returns every document, in key order.
func (c *cache) all() []*store.Document {
	out := make([]*store.Document, 0, len(c.items))
	for _, d := range c.items {
		out = append(out, d)
	}
	slices.SortFunc(out, byKey)
	return out
}

func byKey(a, b *store.Document) int { return strings.Compare(a.Meta.Key, b.Meta.Key) }

func (c *cache) put(d *store.Document) {
	if old := c.items[d.Meta.Key]; old != nil {
		c.unindex(old)
	}
	c.items[d.Meta.Key] = d
	for name, f := range c.funcs {
		c.index(name, f, d)
	}
}

func (c *cache) remove(d *store.Document) {
	if old := c.items[d.Meta.Key]; old != nil {
		c.unindex(old)
		delete(c.items, d.Meta.Key)
	}
}

func (c *cache) index(name string, f IndexFunc, d *store.Document) {
	idx := c.indexes[name]
	for _, v := range f(d) {
		keys := idx[v]
		if keys == nil {
			keys = map[string]struct{}{}
			idx[v] = keys
		}
		keys[d.Meta.Key] = struct{}{}
	}
}

func (c *cache) unindex(d *store.Document) {
	for name, f := range c.funcs {
		idx := c.indexes[name]
		for _, v := range f(d) {
			if keys := idx[v]; keys != nil {
				delete(keys, d.Meta.Key)
				if len(keys) == 0 {
					delete(idx, v)
				}
			}
		}
	}
}

func (c *cache) addIndex(name string, f IndexFunc) {
	c.funcs[name] = f
	c.indexes[name] = map[string]map[string]struct{}{}
	for _, d := range c.items {
		c.index(name, f, d)
	}
}

// byIndex returns the documents indexed under value, in key order.
func (c *cache) byIndex(name, value string) []*store.Document {
	keys := c.indexes[name][value]
	out := make([]*store.Document, 0, len(keys))
	for k := range keys {
		out = append(out, c.items[k])
	}
	slices.SortFunc(out, byKey)
	return out
}

// Get returns the document stored under key as the cache shows it, and
// whether there is one. The document is shared with the cache and every
// other reader: it must not be changed (see store.Document.Clone).
func (i *Informer) Get(key string) (store.Document, bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	d := i.cache.get(key)
	if d == nil {
		return store.Document{}, false
	}
	return *d, true
}

// List returns the documents opts selects, as store.Reader.List does,
// ordered by key, and the revision the cache shows every change up to.
// With opts.OwnerUID it reads the owner index rather than every document.
// An invalid selector (see store.Selector.Validate) is an error matching
// store.ErrInvalid. The documents are shared: see [Informer.Get].
func (i *Informer) List(opts store.ListOptions) ([]store.Document, int64, error) {
	if err := opts.Selector.Validate(); err != nil {
		return nil, 0, &store.Error{Op: "list", Kind: i.kind, Err: err}
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	var docs []*store.Document
	if opts.OwnerUID != "" {
		docs = i.cache.byIndex(ownerIndex, opts.OwnerUID)
	} else {
		docs = i.cache.all()
	}
	out := make([]store.Document, 0, len(docs))
	for _, d := range docs {
		if opts.Selector.Matches(d.Meta.Labels) {
			out = append(out, *d)
		}
	}
	return out, i.rev, nil
}

// AddIndex adds an index computed by f under name, built at once from the
// documents in the cache and kept up to date after. It may be called at any
// time. A name already in use fails with [ErrIndexExists]; the empty name is
// the built-in owner index.
func (i *Informer) AddIndex(name string, f IndexFunc) error {
	if f == nil {
		return fmt.Errorf("%w: index %q has no function", store.ErrInvalid, name)
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if _, ok := i.cache.funcs[name]; ok {
		return fmt.Errorf("%w: %q", ErrIndexExists, name)
	}
	i.cache.addIndex(name, f)
	return nil
}

// ByIndex returns the documents the index name holds under value, ordered by
// key. An index never added fails with [ErrUnknownIndex]. The documents are
// shared: see [Informer.Get].
func (i *Informer) ByIndex(name, value string) ([]store.Document, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if _, ok := i.cache.funcs[name]; !ok || name == ownerIndex {
		return nil, fmt.Errorf("%w: %q", ErrUnknownIndex, name)
	}
	docs := i.cache.byIndex(name, value)
	out := make([]store.Document, len(docs))
	for k, d := range docs {
		out[k] = *d
	}
	return out, nil
}
