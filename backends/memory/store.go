package memory

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/backend"
)

// Defaults of [Config].
const (
	// DefaultHistory is the number of changes retained per kind when
	// Config.History is zero.
	DefaultHistory = 10_000
)

// Config configures a [Store]. The zero value of each field is a
// documented default.
type Config struct {
	// Kinds are the kinds the store holds; each must pass
	// [store.ValidateKind]. More can be added later with [Store.AddKinds]
	// (a manager's builders do), so empty is valid.
	Kinds []string
	// Now is the store's clock, used for timestamps and lease expiry. Nil
	// means time.Now (which testing/synctest fakes).
	Now func() time.Time
	// History is the number of changes retained per kind for watches to
	// resume from, at least 2. A watch from a revision older than the
	// retained history fails with [store.ErrCompacted]. Zero means
	// [DefaultHistory].
	History int
	// WatchBuffer is how many changes made since a watch began it may have
	// left unread before it is cut off with [store.ErrWatchLagged] (the
	// history it replays from its starting revision does not count).
	// Changes are not copied per watch: every watch reads the kind's shared
	// history, so the bound costs no memory and writers never wait for
	// watchers. It must be less than History, so a cut-off watch can resume
	// from its last revision. Zero means half of History.
	WatchBuffer int
	// Restore, when set, is read by [New] for a snapshot written by
	// [Store.Snapshot]; the store starts with its documents, leases and
	// revision. Every kind in the snapshot must be among Kinds.
	Restore io.Reader
}

// Store is an in-memory [store.Backend]. It is safe for concurrent use. Its
// zero value is not usable; call [New].
type Store struct {
	now         func() time.Time
	watchBuffer uint64
	history     int                     // the change log's limit of each kind
	kinds       atomic.Pointer[kindSet] // replaced, never changed, by AddKinds under mu; each kind is guarded by mu

	// mu guards rev, leases and the documents, indexes and change log of
	// every kind.
	mu     sync.RWMutex
	rev    int64
	leases map[string]*lease
}

var (
	_ store.Backend     = (*Store)(nil)
	_ backend.Compactor = (*Store)(nil)
)

// kindSet is the store's kinds.
type kindSet struct {
	names  []string // sorted
	byName map[string]*kind
}

// kind holds the documents of one kind.
type kind struct {
	name string
	docs map[string]*version
	// sorted caches the keys of docs in order; nil after a document is
	// added or removed. Readers holding mu for reading may fill it.
	sorted atomic.Pointer[[]string]
	// labels indexes keys by label key and value.
	labels map[string]map[string]map[string]struct{}
	// owners indexes keys by owner UID.
	owners map[string]map[string]struct{}
	log    changeLog
	// compacted is the newest revision discarded from log: a watch from an
	// older revision fails with store.ErrCompacted.
	compacted int64

	// notifyMu guards notify.
	notifyMu sync.Mutex
	// notify is closed at the kind's next change. It is created by a watch
	// that has to wait, so writes allocate nothing when no watch waits.
	notify chan struct{}
}

// version is one stored state of a document. It is never modified once
// stored: a write stores a new version, which shares the unchanged parts of
// the old one.
type version struct {
	meta   store.Meta
	spec   []byte
	status []byte
}

// document returns a copy of v. A write passes the document it was given
// as have, and the copy reuses its parts equal to v's; a read passes the
// zero Document. See [store.Document.CloneReusing].
func (v *version) document(have store.Document) store.Document {
	return v.shared().CloneReusing(have)
}

// shared returns v itself as a document: its parts are the store's, never
// changed once stored, and must not be changed by whoever gets them.
func (v *version) shared() store.Document {
	return store.Document{Meta: v.meta, Spec: v.spec, Status: v.status}
}

// New returns an empty store for cfg.Kinds, or one restored from
// cfg.Restore. It starts no goroutine.
func New(cfg Config) (*Store, error) {
	history := cfg.History
	switch {
	case history == 0:
		history = DefaultHistory
	case history < 2:
		return nil, fmt.Errorf("memory: Config.History %d is less than 2", history)
	}
	buffer := cfg.WatchBuffer
	switch {
	case buffer < 0:
		return nil, fmt.Errorf("memory: Config.WatchBuffer %d is negative", buffer)
	case buffer == 0:
		buffer = history / 2
	case buffer >= history:
		return nil, fmt.Errorf("memory: Config.WatchBuffer %d is not less than Config.History %d", buffer, history)
	}
	s := &Store{
		now:         cfg.Now,
		watchBuffer: uint64(buffer),
		history:     history,
		leases:      make(map[string]*lease),
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.kinds.Store(&kindSet{byName: map[string]*kind{}})
	for i, name := range cfg.Kinds {
		if slices.Contains(cfg.Kinds[:i], name) {
			return nil, fmt.Errorf("memory: Config.Kinds: %q listed twice", name)
		}
	}
	if err := s.addKinds(cfg.Kinds); err != nil {
		return nil, fmt.Errorf("memory: Config.Kinds: %w", err)
	}
	if cfg.Restore != nil {
		if err := s.restore(cfg.Restore); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Kinds returns the kinds the store holds, sorted.
func (s *Store) Kinds() []string { return slices.Clone(s.kinds.Load().names) }

// AddKinds adds kinds to the store, each empty; a kind it holds already is
// left as it is. Each must pass [store.ValidateKind]. It is safe to call
// while the store is in use: a change made afterwards to a new kind has a
// revision above every change made before, like any other.
func (s *Store) AddKinds(kinds ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.addKinds(kinds); err != nil {
		return fmt.Errorf("memory: AddKinds: %w", err)
	}
	return nil
}

// addKinds adds the kinds s does not hold yet; the caller holds mu or owns
// s alone.
func (s *Store) addKinds(kinds []string) error {
	for _, name := range kinds {
		if err := store.ValidateKind(name); err != nil {
			return err
		}
	}
	old := s.kinds.Load()
	next := &kindSet{names: slices.Clone(old.names), byName: maps.Clone(old.byName)}
	for _, name := range kinds {
		if next.byName[name] != nil {
			continue
		}
		// A watch of the new kind from any revision up to now replays
		// nothing: nothing of the kind was changed before.
		next.byName[name] = &kind{
			name:   name,
			docs:   make(map[string]*version),
			labels: make(map[string]map[string]map[string]struct{}),
			owners: make(map[string]map[string]struct{}),
			log:    changeLog{limit: s.history},
		}
		next.names = append(next.names, name)
	}
	slices.Sort(next.names)
	s.kinds.Store(next)
	return nil
}

// Get returns a copy of the stored document.
func (s *Store) Get(ctx context.Context, kindName, key string) (store.Document, error) {
	const op = "get"
	k, err := s.lookup(ctx, op, kindName, key)
	if err != nil {
		return store.Document{}, err
	}
	s.mu.RLock()
	v := k.docs[key]
	s.mu.RUnlock()
	if v == nil {
		return store.Document{}, &store.Error{Op: op, Kind: kindName, Key: key, Err: store.ErrNotFound}
	}
	return v.document(store.Document{}), nil
}

// List returns copies of the matching documents, ordered by key. A selector
// requirement of the form "k=v" or "k in (…)", and an owner UID, are served
// from indexes; other requirements filter the candidates.
//
// A page holds the documents stored when it is read whose keys follow the
// last key of the page before: the store keeps no past versions, so pages
// are not one snapshot (see [store.Reader.List] for what that promises).
func (s *Store) List(ctx context.Context, kindName string, opts store.ListOptions) (store.ListResult, error) {
	const op = "list"
	if err := ctx.Err(); err != nil {
		return store.ListResult{}, err
	}
	k, err := s.kindOf(op, kindName, "")
	if err != nil {
		return store.ListResult{}, err
	}
	cursor, err := backend.StartList(kindName, opts)
	if err != nil {
		return store.ListResult{}, err
	}
	s.mu.RLock()
	keys, sorted := k.candidates(opts)
	all := opts.Selector.Empty() && opts.OwnerUID == ""
	vs := make([]*version, 0, len(keys))
	for _, key := range keys {
		v := k.docs[key]
		if all || backend.Selects(opts, &v.meta) {
			vs = append(vs, v)
		}
	}
	rev := s.rev
	s.mu.RUnlock()
	if !sorted {
		slices.SortFunc(vs, func(a, b *version) int { return strings.Compare(a.meta.Key, b.meta.Key) })
	}
	vs, next, rev := backend.Page(vs, func(v *version) string { return v.meta.Key }, opts.Limit, cursor, rev)
	res := store.ListResult{Items: make([]store.Document, len(vs)), Revision: rev, Continue: next}
	for i, v := range vs {
		res.Items[i] = v.document(store.Document{})
	}
	return res, nil
}

// candidates returns the keys List must look at and whether they are
// sorted: the keys of the smallest index entry that serves the owner UID or
// an equality requirement, or else every key. The caller holds s.mu.
func (k *kind) candidates(opts store.ListOptions) ([]string, bool) {
	var pick []map[string]struct{}
	n, found := 0, false
	consider := func(sets []map[string]struct{}) {
		size := 0
		for _, set := range sets {
			size += len(set)
		}
		if !found || size < n {
			pick, n, found = sets, size, true
		}
	}
	if opts.OwnerUID != "" {
		consider([]map[string]struct{}{k.owners[opts.OwnerUID]})
	}
	for _, r := range opts.Selector.Requirements() {
		if r.Operator == store.Equals || r.Operator == store.In {
			// A document has one value per label, so these sets are disjoint.
			sets := make([]map[string]struct{}, len(r.Values))
			for i, v := range r.Values {
				sets[i] = k.labels[r.Key][v]
			}
			consider(sets)
		}
	}
	if !found {
		if p := k.sorted.Load(); p != nil {
			return *p, true
		}
		keys := slices.Sorted(maps.Keys(k.docs))
		k.sorted.Store(&keys)
		return keys, true
	}
	keys := make([]string, 0, n)
	for _, set := range pick {
		for key := range set {
			keys = append(keys, key)
		}
	}
	return keys, false
}

// Create stores a new document.
func (s *Store) Create(ctx context.Context, doc store.Document) (store.Document, error) {
	const op = "create"
	m := &doc.Meta
	k, err := s.lookup(ctx, op, m.Kind, m.Key)
	if err != nil {
		return store.Document{}, err
	}
	if err := backend.ValidateCreate(doc); err != nil {
		return store.Document{}, &store.Error{Op: op, Kind: m.Kind, Key: m.Key, Err: err}
	}
	c := doc.Clone()
	v := &version{
		meta: store.Meta{
			Kind:       m.Kind,
			Key:        m.Key,
			UID:        rand.Text(),
			Generation: 1,
			Finalizers: c.Meta.Finalizers,
			Owners:     c.Meta.Owners,
			Labels:     c.Meta.Labels,
		},
		spec: c.Spec,
	}
	defer k.wake() // after the unlock: a woken watch takes the lock at once
	s.mu.Lock()
	defer s.mu.Unlock()
	now, err := s.fenced(ctx, op, m.Kind, m.Key)
	if err != nil {
		return store.Document{}, err
	}
	if k.docs[m.Key] != nil {
		return store.Document{}, &store.Error{Op: op, Kind: m.Kind, Key: m.Key, Err: store.ErrAlreadyExists}
	}
	s.rev++
	v.meta.Revision, v.meta.CreatedAt, v.meta.UpdatedAt = s.rev, now, now
	k.put(nil, v)
	k.record(store.Added, s.rev, v)
	return v.document(doc), nil
}

// UpdateSpec writes the document's spec, labels, finalizers and owners.
func (s *Store) UpdateSpec(ctx context.Context, doc store.Document) (store.Document, error) {
	const op = "update spec"
	m := &doc.Meta
	k, err := s.lookup(ctx, op, m.Kind, m.Key)
	if err != nil {
		return store.Document{}, err
	}
	if err := backend.ValidateMeta(m); err != nil {
		return store.Document{}, &store.Error{Op: op, Kind: m.Kind, Key: m.Key, Err: err}
	}
	defer k.wake()
	s.mu.Lock()
	defer s.mu.Unlock()
	now, err := s.fenced(ctx, op, m.Kind, m.Key)
	if err != nil {
		return store.Document{}, err
	}
	cur, err := k.current(op, m.Key, m.Revision)
	if err != nil {
		return store.Document{}, err
	}
	u, err := backend.ApplySpec(store.Document{Meta: cur.meta, Spec: cur.spec, Status: cur.status}, doc)
	if err != nil {
		return store.Document{}, &store.Error{Op: op, Kind: m.Kind, Key: m.Key, Err: err}
	}
	if !u.Changed {
		return cur.document(doc), nil
	}
	v := &version{meta: u.Next.Meta, spec: u.Next.Spec, status: u.Next.Status}
	s.rev++
	v.meta.Revision, v.meta.UpdatedAt = s.rev, now
	if u.Remove {
		k.remove(cur)
		k.record(store.Deleted, s.rev, v)
		return v.document(doc), nil
	}
	k.put(cur, v)
	k.record(store.Modified, s.rev, v)
	return v.document(doc), nil
}

// UpdateStatus writes the document's status.
func (s *Store) UpdateStatus(ctx context.Context, doc store.Document) (store.Document, error) {
	const op = "update status"
	m := &doc.Meta
	k, err := s.lookup(ctx, op, m.Kind, m.Key)
	if err != nil {
		return store.Document{}, err
	}
	s.mu.Lock()
	now, err := s.fenced(ctx, op, m.Kind, m.Key)
	if err != nil {
		s.mu.Unlock()
		return store.Document{}, err
	}
	cur, err := k.current(op, m.Key, m.Revision)
	if err != nil {
		s.mu.Unlock()
		return store.Document{}, err
	}
	if bytes.Equal(cur.status, doc.Status) {
		s.mu.Unlock()
		return cur.document(doc), nil
	}
	v := &version{meta: cur.meta, spec: cur.spec, status: bytes.Clone(doc.Status)}
	s.rev++
	v.meta.Revision, v.meta.UpdatedAt = s.rev, now
	k.put(cur, v)
	k.record(store.Modified, s.rev, v)
	s.mu.Unlock()
	k.wake()
	return v.document(doc), nil
}

// Delete removes the document, or marks it Terminating if it has
// finalizers.
func (s *Store) Delete(ctx context.Context, kindName, key string, opts store.DeleteOptions) error {
	const op = "delete"
	k, err := s.lookup(ctx, op, kindName, key)
	if err != nil {
		return err
	}
	defer k.wake()
	s.mu.Lock()
	defer s.mu.Unlock()
	now, err := s.fenced(ctx, op, kindName, key)
	if err != nil {
		return err
	}
	cur := k.docs[key]
	if cur == nil {
		return &store.Error{Op: op, Kind: kindName, Key: key, Err: store.ErrNotFound}
	}
	if err := backend.CheckDelete(cur.meta, opts); err != nil || cur.meta.Terminating() {
		return err
	}
	s.rev++
	if len(cur.meta.Finalizers) == 0 {
		k.remove(cur)
		k.record(store.Deleted, s.rev, cur)
		return nil
	}
	v := &version{meta: cur.meta, spec: cur.spec, status: cur.status}
	v.meta.Revision, v.meta.UpdatedAt, v.meta.DeletionRequestedAt = s.rev, now, now
	k.put(cur, v)
	k.record(store.Modified, s.rev, v)
	return nil
}

// Compact discards the change history up to and including revision. See
// [backend.Compactor].
func (s *Store) Compact(ctx context.Context, revision int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := backend.CheckCompact(revision, s.rev); err != nil {
		return err
	}
	for _, k := range s.kinds.Load().byName {
		k.log.dropThrough(revision)
		k.compacted = max(k.compacted, revision)
		k.wake() // watches that lost their next change fail now
	}
	return nil
}

// kindOf returns the named kind; key only names the document in errors.
func (s *Store) kindOf(op, kindName, key string) (*kind, error) {
	ks := s.kinds.Load()
	if k := ks.byName[kindName]; k != nil {
		return k, nil
	}
	return nil, backend.UnknownKind(op, kindName, key, ks.names)
}

// lookup returns the named kind after checking ctx and validating key.
func (s *Store) lookup(ctx context.Context, op, kindName, key string) (*kind, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k, err := s.kindOf(op, kindName, key)
	if err != nil {
		return nil, err
	}
	if err := store.ValidateKey(key); err != nil {
		return nil, &store.Error{Op: op, Kind: kindName, Key: key, Err: err}
	}
	return k, nil
}

// fenced returns the time of a write, or an error if ctx carries a fence
// that no longer holds. The caller holds s.mu for writing.
func (s *Store) fenced(ctx context.Context, op, kindName, key string) (time.Time, error) {
	now := s.now()
	if f, ok := store.FenceFrom(ctx); ok {
		l := s.leases[f.Lease]
		if l == nil || !l.held || l.fence != f.Token || !now.Before(l.expires) {
			return time.Time{}, backend.Fenced(op, kindName, key, f)
		}
	}
	// Stored times carry no monotonic reading, so they compare equal after
	// a snapshot round trip.
	return now.Round(0), nil
}

// current returns the stored version of key if its revision is rev.
func (k *kind) current(op, key string, rev int64) (*version, error) {
	cur := k.docs[key]
	if cur == nil {
		return nil, &store.Error{Op: op, Kind: k.name, Key: key, Err: store.ErrNotFound}
	}
	if cur.meta.Revision != rev {
		return nil, backend.RevisionConflict(op, k.name, key, rev, cur.meta.Revision)
	}
	return cur, nil
}

// put stores v in place of old (nil for a new document) and updates the
// indexes.
func (k *kind) put(old, v *version) {
	key := v.meta.Key
	k.docs[key] = v
	if old == nil {
		k.sorted.Store(nil)
		k.index(v, true)
		return
	}
	if !maps.Equal(old.meta.Labels, v.meta.Labels) || !slices.Equal(old.meta.Owners, v.meta.Owners) {
		k.index(old, false)
		k.index(v, true)
	}
}

func (k *kind) remove(old *version) {
	delete(k.docs, old.meta.Key)
	k.sorted.Store(nil)
	k.index(old, false)
}

// index adds v's labels and owners to the indexes, or removes them.
func (k *kind) index(v *version, add bool) {
	key := v.meta.Key
	for lk, lv := range v.meta.Labels {
		byValue := k.labels[lk]
		if byValue == nil {
			byValue = make(map[string]map[string]struct{})
			k.labels[lk] = byValue
		}
		addOrRemove(byValue, lv, key, add)
		if len(byValue) == 0 {
			delete(k.labels, lk)
		}
	}
	for _, o := range v.meta.Owners {
		addOrRemove(k.owners, o.UID, key, add)
	}
}

func addOrRemove(sets map[string]map[string]struct{}, name, key string, add bool) {
	set := sets[name]
	if add {
		if set == nil {
			set = make(map[string]struct{})
			sets[name] = set
		}
		set[key] = struct{}{}
		return
	}
	delete(set, key)
	if len(set) == 0 {
		delete(sets, name)
	}
}
