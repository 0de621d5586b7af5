package etcd

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/backend"
)

// DefaultPrefix is the key prefix used when Config.Prefix is empty.
const DefaultPrefix = "/tend/"

// listPage is how many documents one List request reads; larger kinds are
// read in pages at the same revision.
const listPage = 500

// getBatch is how many single-key reads one transaction carries when List
// fetches the documents an index named. etcd refuses transactions of more
// than 128 operations by default.
const getBatch = 100

// deleteRetries bounds how often Delete without a revision precondition
// re-reads a document that keeps changing under it.
const deleteRetries = 16

// Config configures a [Store].
type Config struct {
	// Client is the etcd client the store uses. Required. The store never
	// closes it.
	Client *clientv3.Client
	// Prefix is put in front of every key the store writes, so several
	// stores can share a cluster. It should end with "/". Empty means
	// [DefaultPrefix].
	Prefix string
	// Kinds are the kinds the store holds; each must pass
	// [store.ValidateKind]. Required.
	Kinds []string
	// Logger receives the few events the store handles itself (a failed
	// best-effort lease revocation). Nil means no logs.
	Logger *zap.Logger
}

// Store is a [store.Backend] on etcd. It is safe for concurrent use and
// holds no state of its own beyond its configuration and a bounded memory of
// the documents it read or wrote last, which every write checks against
// etcd's revision: any number of Stores, in any number of processes, may
// share a cluster and prefix.
type Store struct {
	cli    *clientv3.Client
	log    *zap.Logger
	keys   keyspace
	kinds  map[string]bool
	sorted []string
	// compacted is the newest revision discarded by Compact: events up to
	// it that a watch has received from etcd but not yet delivered are
	// discarded too.
	compacted atomic.Int64
	// recent remembers the documents read or written last, so that a
	// write whose precondition names one's revision needs no read first
	// (see startFrom).
	recent recent
}

var (
	_ store.Backend     = (*Store)(nil)
	_ backend.Compactor = (*Store)(nil)
)

// New returns a store on cfg.Client. It starts no goroutine and makes no
// request.
func New(cfg Config) (*Store, error) {
	if cfg.Client == nil {
		return nil, errors.New("etcd: Config.Client is nil")
	}
	if len(cfg.Kinds) == 0 {
		return nil, errors.New("etcd: Config.Kinds is empty")
	}
	prefix := cfg.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	s := &Store{
		cli:   cfg.Client,
		log:   cfg.Logger,
		keys:  keyspace{prefix: prefix},
		kinds: make(map[string]bool, len(cfg.Kinds)),
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	for _, k := range cfg.Kinds {
		if err := store.ValidateKind(k); err != nil {
			return nil, fmt.Errorf("etcd: Config.Kinds: %w", err)
		}
		if s.kinds[k] {
			return nil, fmt.Errorf("etcd: Config.Kinds: %q listed twice", k)
		}
		s.kinds[k] = true
		s.sorted = append(s.sorted, k)
	}
	slices.Sort(s.sorted)
	return s, nil
}

// Kinds returns the kinds the store was configured with, sorted.
func (s *Store) Kinds() []string { return slices.Clone(s.sorted) }

// Get returns the stored document.
func (s *Store) Get(ctx context.Context, kind, key string) (store.Document, error) {
	const op = "get"
	if err := s.check(ctx, op, kind, key); err != nil {
		return store.Document{}, err
	}
	resp, err := s.cli.Get(ctx, s.keys.doc(kind, key))
	if err != nil {
		return store.Document{}, s.fail(ctx, op, kind, key, err)
	}
	if len(resp.Kvs) == 0 {
		return store.Document{}, &store.Error{Op: op, Kind: kind, Key: key, Err: store.ErrNotFound}
	}
	s.remember(resp.Kvs[0])
	return s.decode(op, kind, resp.Kvs[0])
}

// List returns the matching documents, ordered by key, read at one
// revision. An owner UID, or else the first "k=v" or "k in (…)" requirement
// of the selector, is served from index keys; the rest of the selector
// filters the candidates.
//
// Every page of a paged list is read at the revision of the first, by key
// range after the last key of the page before: together the pages are one
// snapshot. Once etcd has compacted that revision, the next page fails with
// [store.ErrCompacted], and the list starts again from its first page.
func (s *Store) List(ctx context.Context, kind string, opts store.ListOptions) (store.ListResult, error) {
	const op = "list"
	if err := s.checkKind(ctx, op, kind, ""); err != nil {
		return store.ListResult{}, err
	}
	cursor, err := backend.StartList(kind, opts)
	if err != nil {
		return store.ListResult{}, err
	}
	for {
		res, err := s.list(ctx, kind, opts, cursor)
		// The index was read at a revision compacted before the documents
		// were: read both again. A later page is bound to its first page's
		// revision, so it cannot.
		if errors.Is(err, store.ErrCompacted) && cursor.Revision == 0 && ctx.Err() == nil {
			continue
		}
		return res, err
	}
}

// list reads the matching documents after c.After at revision c.Revision
// (zero: the current one), all of them, or for a page, Limit+1 so it knows
// whether another page follows.
func (s *Store) list(ctx context.Context, kind string, opts store.ListOptions, c backend.Cursor) (store.ListResult, error) {
	const op = "list"
	rev, want := c.Revision, -1
	if opts.Limit > 0 {
		want = opts.Limit + 1
	}
	var items []store.Document
	// add keeps the document of kv if it matches, and reports whether the
	// list has all it wants.
	add := func(kv *mvccpb.KeyValue) (bool, error) {
		d, err := s.decode(op, kind, kv)
		if err != nil {
			return false, err
		}
		if backend.Selects(opts, &d.Meta) {
			items = append(items, d)
		}
		return len(items) == want, nil
	}
	if prefixes := s.indexPrefixes(kind, opts); prefixes != nil {
		ops := make([]clientv3.Op, len(prefixes))
		for i, p := range prefixes {
			ops[i] = clientv3.OpGet(p, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithRev(rev))
		}
		resp, err := s.cli.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return store.ListResult{}, s.fail(ctx, op, kind, "", err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		var keys []string
		for i, r := range resp.Responses {
			for _, kv := range r.GetResponseRange().Kvs {
				if k := strings.TrimPrefix(string(kv.Key), prefixes[i]); k > c.After {
					keys = append(keys, k)
				}
			}
		}
		slices.Sort(keys)
		keys = slices.Compact(keys)
	batches:
		for batch := range slices.Chunk(keys, getBatch) {
			gets := make([]clientv3.Op, len(batch))
			for i, k := range batch {
				gets[i] = clientv3.OpGet(s.keys.doc(kind, k), clientv3.WithRev(rev))
			}
			resp, err := s.cli.Txn(ctx).Then(gets...).Commit()
			if err != nil {
				return store.ListResult{}, s.fail(ctx, op, kind, "", err)
			}
			for _, r := range resp.Responses {
				for _, kv := range r.GetResponseRange().Kvs {
					if done, err := add(kv); err != nil || done {
						if err != nil {
							return store.ListResult{}, err
						}
						break batches
					}
				}
			}
		}
	} else {
		prefix := s.keys.docs(kind)
		from, end := prefix, clientv3.GetPrefixRangeEnd(prefix)
		if c.After != "" {
			from = s.keys.doc(kind, c.After) + "\x00"
		}
	pages:
		for {
			resp, err := s.cli.Get(ctx, from, clientv3.WithRange(end), clientv3.WithRev(rev), clientv3.WithLimit(listPage))
			if err != nil {
				return store.ListResult{}, s.fail(ctx, op, kind, "", err)
			}
			if rev == 0 {
				rev = resp.Header.Revision
			}
			for _, kv := range resp.Kvs {
				if done, err := add(kv); err != nil || done {
					if err != nil {
						return store.ListResult{}, err
					}
					break pages
				}
			}
			if !resp.More || len(resp.Kvs) == 0 {
				break
			}
			from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
		}
	}
	key := func(d store.Document) string { return d.Meta.Key }
	page, next, rev := backend.Page(items, key, opts.Limit, backend.Cursor{Revision: c.Revision}, rev)
	return store.ListResult{Items: page, Revision: rev, Continue: next}, nil
}

// indexPrefixes returns the index ranges that hold every document List must
// consider, or nil when it must scan the kind.
func (s *Store) indexPrefixes(kind string, opts store.ListOptions) []string {
	if opts.OwnerUID != "" {
		return []string{s.keys.ownerIndex(kind, opts.OwnerUID)}
	}
	for _, r := range opts.Selector.Requirements() {
		if r.Operator == store.Equals || r.Operator == store.In {
			ps := make([]string, len(r.Values))
			for i, v := range r.Values {
				ps[i] = s.keys.labelIndex(kind, r.Key, v)
			}
			return ps
		}
	}
	return nil
}

// Create stores a new document.
func (s *Store) Create(ctx context.Context, doc store.Document) (store.Document, error) {
	const op = "create"
	m := &doc.Meta
	if err := s.check(ctx, op, m.Kind, m.Key); err != nil {
		return store.Document{}, err
	}
	if err := backend.ValidateCreate(doc); err != nil {
		return store.Document{}, &store.Error{Op: op, Kind: m.Kind, Key: m.Key, Err: err}
	}
	now := time.Now().Round(0)
	c := doc.Clone()
	d := store.Document{
		Meta: store.Meta{
			Kind:       m.Kind,
			Key:        m.Key,
			UID:        rand.Text(),
			Generation: 1,
			CreatedAt:  now,
			UpdatedAt:  now,
			Finalizers: c.Meta.Finalizers,
			Owners:     c.Meta.Owners,
			Labels:     c.Meta.Labels,
		},
		Spec: c.Spec,
	}
	rev, err := s.write(ctx, op, m.Kind, m.Key, 0, string(encode(&d)), s.indexOps(nil, &d.Meta))
	if err != nil {
		return store.Document{}, err
	}
	d.Meta.Revision = rev
	return d, nil
}

// UpdateSpec writes the document's spec, labels, finalizers and owners.
func (s *Store) UpdateSpec(ctx context.Context, doc store.Document) (store.Document, error) {
	const op = "update spec"
	m := &doc.Meta
	if err := s.check(ctx, op, m.Kind, m.Key); err != nil {
		return store.Document{}, err
	}
	if err := backend.ValidateMeta(m); err != nil {
		return store.Document{}, &store.Error{Op: op, Kind: m.Kind, Key: m.Key, Err: err}
	}
	cur, remembered, err := s.startFrom(ctx, op, m.Kind, m.Key, m.Revision)
	if err != nil {
		return store.Document{}, err
	}
	u, err := backend.ApplySpec(cur, doc)
	if err != nil {
		if verr := s.verify(ctx, op, m.Kind, m.Key, m.Revision, remembered); verr != nil {
			return store.Document{}, verr
		}
		return store.Document{}, &store.Error{Op: op, Kind: m.Kind, Key: m.Key, Err: err}
	}
	if !u.Changed {
		if err := s.verify(ctx, op, m.Kind, m.Key, m.Revision, remembered); err != nil {
			return store.Document{}, err
		}
		return cur, nil
	}
	next := u.Next
	next.Meta.UpdatedAt = time.Now().Round(0)
	var rev int64
	if u.Remove {
		// The last finalizer is gone: remove the document and its index
		// keys in one step.
		rev, err = s.write(ctx, op, m.Kind, m.Key, m.Revision, "", s.indexOps(&cur.Meta, nil))
	} else {
		rev, err = s.write(ctx, op, m.Kind, m.Key, m.Revision, string(encode(&next)), s.indexOps(&cur.Meta, &next.Meta))
	}
	if err != nil {
		return store.Document{}, err
	}
	next.Meta.Revision = rev
	return next, nil
}

// UpdateStatus writes the document's status.
func (s *Store) UpdateStatus(ctx context.Context, doc store.Document) (store.Document, error) {
	const op = "update status"
	m := &doc.Meta
	if err := s.check(ctx, op, m.Kind, m.Key); err != nil {
		return store.Document{}, err
	}
	cur, remembered, err := s.startFrom(ctx, op, m.Kind, m.Key, m.Revision)
	if err != nil {
		return store.Document{}, err
	}
	if bytes.Equal(cur.Status, doc.Status) {
		if err := s.verify(ctx, op, m.Kind, m.Key, m.Revision, remembered); err != nil {
			return store.Document{}, err
		}
		return cur, nil
	}
	next := cur
	next.Status = bytes.Clone(doc.Status)
	next.Meta.UpdatedAt = time.Now().Round(0)
	rev, err := s.write(ctx, op, m.Kind, m.Key, m.Revision, string(encode(&next)), nil)
	if err != nil {
		return store.Document{}, err
	}
	next.Meta.Revision = rev
	return next, nil
}

// Delete removes the document, or marks it Terminating if it has
// finalizers. Without a revision precondition it retries when the document
// changes between its read and its write.
func (s *Store) Delete(ctx context.Context, kind, key string, opts store.DeleteOptions) error {
	const op = "delete"
	if err := s.check(ctx, op, kind, key); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		var cur store.Document
		var remembered bool
		var err error
		if opts.Revision != 0 {
			cur, remembered, err = s.startFrom(ctx, op, kind, key, opts.Revision)
		} else {
			cur, err = s.current(ctx, op, kind, key, 0, false)
		}
		if err != nil {
			return err
		}
		// cur is at opts.Revision when it is set, so only the UID can fail.
		if conflict := backend.CheckDelete(cur.Meta, opts); conflict != nil || cur.Meta.Terminating() {
			if err := s.verify(ctx, op, kind, key, opts.Revision, remembered); err != nil {
				return err
			}
			return conflict
		}
		if len(cur.Meta.Finalizers) == 0 {
			_, err = s.write(ctx, op, kind, key, cur.Meta.Revision, "", s.indexOps(&cur.Meta, nil))
		} else {
			next := cur
			now := time.Now().Round(0)
			next.Meta.UpdatedAt, next.Meta.DeletionRequestedAt = now, now
			_, err = s.write(ctx, op, kind, key, cur.Meta.Revision, string(encode(&next)), nil)
		}
		if opts.Revision == 0 && errors.Is(err, store.ErrConflict) && attempt < deleteRetries {
			continue
		}
		return err
	}
}

// check validates the kind and key of a request and returns ctx's error.
func (s *Store) check(ctx context.Context, op, kind, key string) error {
	if err := s.checkKind(ctx, op, kind, key); err != nil {
		return err
	}
	if err := store.ValidateKey(key); err != nil {
		return &store.Error{Op: op, Kind: kind, Key: key, Err: err}
	}
	return nil
}

// checkKind validates the kind of a request and returns ctx's error; key
// only names the document in the error.
func (s *Store) checkKind(ctx context.Context, op, kind, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !s.kinds[kind] {
		return backend.UnknownKind(op, kind, key, s.sorted)
	}
	return nil
}

// startFrom returns the document a write whose precondition is revision rev
// starts from: the one the store remembers at rev, without a read
// (remembered is then true), or else the stored one, read and checked as
// current does. Only the write's transaction checks a remembered document's
// revision and the fence ctx carries, so a caller that ends without writing
// must call verify.
func (s *Store) startFrom(ctx context.Context, op, kind, key string, rev int64) (d store.Document, remembered bool, err error) {
	docKey := s.keys.doc(kind, key)
	if value, ok := s.recent.get(docKey, rev); ok {
		d, err := s.decode(op, kind, &mvccpb.KeyValue{Key: []byte(docKey), Value: []byte(value), ModRevision: rev})
		return d, err == nil, err
	}
	d, err = s.current(ctx, op, kind, key, rev, true)
	return d, false, err
}

// verify checks, for a write that ends without a transaction, what its
// transaction would have checked of a remembered document (see startFrom):
// that revision rev is still the stored one and the fence still holds.
func (s *Store) verify(ctx context.Context, op, kind, key string, rev int64, remembered bool) error {
	if !remembered {
		return nil
	}
	_, err := s.current(ctx, op, kind, key, rev, true)
	return err
}

// current reads the stored document and, when checkRev is set, checks that
// it is at revision rev. A fence carried by ctx is checked in the same read,
// so a fenced writer that lost its lease learns that first.
func (s *Store) current(ctx context.Context, op, kind, key string, rev int64, checkRev bool) (store.Document, error) {
	docKey := s.keys.doc(kind, key)
	ops := []clientv3.Op{clientv3.OpGet(docKey)}
	f, fenced := store.FenceFrom(ctx)
	if fenced {
		ops = append(ops, clientv3.OpGet(s.keys.lease(f.Lease), clientv3.WithKeysOnly()))
	}
	resp, err := s.cli.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return store.Document{}, s.fail(ctx, op, kind, key, err)
	}
	if fenced && !fenceHolds(f, resp.Responses[1].GetResponseRange().Kvs) {
		return store.Document{}, backend.Fenced(op, kind, key, f)
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return store.Document{}, &store.Error{Op: op, Kind: kind, Key: key, Err: store.ErrNotFound}
	}
	if checkRev && kvs[0].ModRevision != rev {
		return store.Document{}, backend.RevisionConflict(op, kind, key, rev, kvs[0].ModRevision)
	}
	s.remember(kvs[0])
	return s.decode(op, kind, kvs[0])
}

// remember keeps the document read as kv for a later write to start from.
func (s *Store) remember(kv *mvccpb.KeyValue) {
	s.recent.put(string(kv.Key), kv.ModRevision, string(kv.Value))
}

// write stores value as the document (or deletes it if value is empty),
// with the index operations index, if the document's stored revision is
// still rev (zero: nothing is stored) and the fence carried by ctx still
// holds, and returns the revision of the write.
func (s *Store) write(ctx context.Context, op, kind, key string, rev int64, value string, index []clientv3.Op) (int64, error) {
	docKey := s.keys.doc(kind, key)
	ops := make([]clientv3.Op, 0, 1+len(index))
	if value != "" {
		ops = append(ops, clientv3.OpPut(docKey, value))
	} else {
		ops = append(ops, clientv3.OpDelete(docKey))
	}
	ops = append(ops, index...)
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(docKey), "=", rev)}
	orElse := []clientv3.Op{clientv3.OpGet(docKey, clientv3.WithKeysOnly())}
	f, fenced := store.FenceFrom(ctx)
	if fenced {
		if f.Token <= 0 {
			return 0, backend.Fenced(op, kind, key, f)
		}
		leaseKey := s.keys.lease(f.Lease)
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(leaseKey), "=", f.Token))
		orElse = append(orElse, clientv3.OpGet(leaseKey, clientv3.WithKeysOnly()))
	}
	resp, err := s.cli.Txn(ctx).If(cmps...).Then(ops...).Else(orElse...).Commit()
	if err != nil {
		s.recent.forget(docKey)
		return 0, s.fail(ctx, op, kind, key, err)
	}
	if resp.Succeeded {
		if value != "" {
			s.recent.put(docKey, resp.Header.Revision, value)
		} else {
			s.recent.forget(docKey)
		}
		return resp.Header.Revision, nil
	}
	s.recent.forget(docKey)
	if fenced && !fenceHolds(f, resp.Responses[1].GetResponseRange().Kvs) {
		return 0, backend.Fenced(op, kind, key, f)
	}
	switch kvs := resp.Responses[0].GetResponseRange().Kvs; {
	case len(kvs) == 0:
		return 0, &store.Error{Op: op, Kind: kind, Key: key, Err: store.ErrNotFound}
	case rev == 0:
		return 0, &store.Error{Op: op, Kind: kind, Key: key, Err: store.ErrAlreadyExists}
	default:
		return 0, backend.RevisionConflict(op, kind, key, rev, kvs[0].ModRevision)
	}
}

// fenceHolds reports whether the lease key read (kvs) is still the one
// created at the fence's token.
func fenceHolds(f store.Fence, kvs []*mvccpb.KeyValue) bool {
	return f.Token > 0 && len(kvs) == 1 && kvs[0].CreateRevision == f.Token
}

// indexOps returns the operations that move a document's index keys from
// old's labels and owners to next's. Either may be nil.
func (s *Store) indexOps(old, next *store.Meta) []clientv3.Op {
	have, want := s.indexKeys(old), s.indexKeys(next)
	var ops []clientv3.Op
	for _, k := range have {
		if !slices.Contains(want, k) {
			ops = append(ops, clientv3.OpDelete(k))
		}
	}
	for _, k := range want {
		if !slices.Contains(have, k) {
			ops = append(ops, clientv3.OpPut(k, ""))
		}
	}
	return ops
}

// indexKeys returns the label and owner index keys of m, sorted.
func (s *Store) indexKeys(m *store.Meta) []string {
	if m == nil {
		return nil
	}
	keys := make([]string, 0, len(m.Labels)+len(m.Owners))
	for k, v := range m.Labels {
		keys = append(keys, s.keys.labelIndex(m.Kind, k, v)+m.Key)
	}
	for _, o := range m.Owners {
		keys = append(keys, s.keys.ownerIndex(m.Kind, o.UID)+m.Key)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// decode turns a stored key-value into a document of kind.
func (s *Store) decode(op, kind string, kv *mvccpb.KeyValue) (store.Document, error) {
	key := strings.TrimPrefix(string(kv.Key), s.keys.docs(kind))
	d, err := decode(kv.Value)
	if err != nil {
		return store.Document{}, &store.Error{Op: op, Kind: kind, Key: key, Err: err}
	}
	d.Meta.Kind, d.Meta.Key, d.Meta.Revision = kind, key, kv.ModRevision
	return d, nil
}

// Compact discards etcd's history before revision+1, so that a watch from
// any revision before revision fails with [store.ErrCompacted]. When
// revision is the current one, a marker key is written first to move the
// cluster past it. See [backend.Compactor].
func (s *Store) Compact(ctx context.Context, revision int64) error {
	const op = "compact"
	if err := ctx.Err(); err != nil {
		return err
	}
	resp, err := s.cli.Get(ctx, s.keys.compactMarker(), clientv3.WithCountOnly())
	if err != nil {
		return s.fail(ctx, op, "", "", err)
	}
	if err := backend.CheckCompact(revision, resp.Header.Revision); err != nil {
		return err
	}
	if revision == resp.Header.Revision {
		if _, err := s.cli.Put(ctx, s.keys.compactMarker(), ""); err != nil {
			return s.fail(ctx, op, "", "", err)
		}
	}
	if _, err := s.cli.Compact(ctx, revision+1); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return s.fail(ctx, op, "", "", err)
	}
	for {
		c := s.compacted.Load()
		if c >= revision || s.compacted.CompareAndSwap(c, revision) {
			return nil
		}
	}
}
