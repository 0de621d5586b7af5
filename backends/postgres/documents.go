package postgres

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/backend"
)

// Get returns the stored document.
func (s *Store) Get(ctx context.Context, kind, key string) (store.Document, error) {
	const op = "get"
	if err := ctx.Err(); err != nil {
		return store.Document{}, err
	}
	if err := s.checkKind(op, kind, key, true); err != nil {
		return store.Document{}, err
	}
	var d store.Document
	var err error
	for range maxAttempts {
		d, err = s.getOnce(ctx, kind, key)
		if !retryable(ctx, err) {
			break
		}
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Document{}, &store.Error{Op: op, Kind: kind, Key: key, Err: store.ErrNotFound}
	}
	return d, s.translate(ctx, op, kind, key, err)
}

// getOnce reads the document once, riding on the status writes' next
// group if one is committing (see batch.go).
func (s *Store) getOnce(ctx context.Context, kind, key string) (store.Document, error) {
	var d store.Document
	var readErr error // pgx.ErrNoRows, or the row's decoding failed
	err := s.ride(ctx, &rider{
		queue: func(b *pgx.Batch) {
			b.Queue(s.sql.get, kind, key).Query(func(rows pgx.Rows) error {
				readErr = pgx.ErrNoRows
				if rows.Next() {
					d, readErr = scanDoc(rows)
				}
				rows.Close()
				return rows.Err()
			})
		},
		reset: func() { d, readErr = store.Document{}, nil },
	})
	if err != nil {
		return store.Document{}, err
	}
	return d, readErr
}

// List returns the matching documents, ordered by key, read in one snapshot
// with the revision. Equality and existence requirements of the selector
// and the owner UID are served by GIN indexes; the selector then decides.
//
// A page is read in one snapshot too, by key from the index on (kind, key
// in byte order), starting after the last key of the page before: keyset
// pagination, so a page costs the same wherever it starts. The table holds
// only the newest version of each document, so the pages of one list are
// not one snapshot (see [store.Reader.List] for what that promises); every
// page reports the revision of the first.
func (s *Store) List(ctx context.Context, kind string, opts store.ListOptions) (store.ListResult, error) {
	const op = "list"
	if err := ctx.Err(); err != nil {
		return store.ListResult{}, err
	}
	if err := s.checkKind(op, kind, "", false); err != nil {
		return store.ListResult{}, err
	}
	cursor, err := backend.StartList(kind, opts)
	if err != nil {
		return store.ListResult{}, err
	}
	query, args := s.listQuery(kind, opts)
	var res store.ListResult
	for attempt := 0; attempt < 2*maxAttempts; attempt++ {
		var gap gapError
		res, err = s.list(ctx, query, args, opts, cursor, attempt+1 >= maxAttempts)
		if errors.As(err, &gap) {
			// A write below the newest revision is in flight, or left a
			// gap: settle it, then read a snapshot again.
			_, err = s.pool.Exec(ctx, s.sql.fillGaps, gap.from, gap.to)
		}
		if err == nil && gap.to == 0 {
			break
		}
		if err != nil && !retryable(ctx, err) {
			break
		}
	}
	if err != nil {
		return store.ListResult{}, s.translate(ctx, op, kind, "", err)
	}
	return res, nil
}

// listQuery returns the query of a List and its arguments. The query of a
// page takes two more: the key to start after and the number of rows to
// read.
func (s *Store) listQuery(kind string, opts store.ListOptions) (string, []any) {
	var q strings.Builder
	q.WriteString(s.sql.listPrefix)
	args := []any{kind}
	equal := map[string]string{}
	var exist []string
	for _, r := range opts.Selector.Requirements() {
		switch r.Operator {
		case store.Equals:
			equal[r.Key] = r.Values[0]
		case store.Exists, store.In:
			exist = append(exist, r.Key)
		}
	}
	if len(equal) > 0 {
		args = append(args, equal)
		fmt.Fprintf(&q, " AND labels @> $%d::jsonb", len(args))
	}
	if len(exist) > 0 {
		args = append(args, exist)
		fmt.Fprintf(&q, " AND labels ?& $%d::text[]", len(args))
	}
	if opts.OwnerUID != "" {
		args = append(args, []string{opts.OwnerUID})
		fmt.Fprintf(&q, " AND owner_uids @> $%d::text[]", len(args))
	}
	if opts.Limit > 0 {
		fmt.Fprintf(&q, ` AND key COLLATE "C" > $%d`, len(args)+1)
	}
	q.WriteString(` ORDER BY key COLLATE "C"`)
	if opts.Limit > 0 {
		fmt.Fprintf(&q, ` LIMIT $%d`, len(args)+2)
	}
	return q.String(), args
}

// list runs a List's query in one read-only snapshot. For a page it reads
// batches of Limit+1 rows after the cursor's key until Limit+1 of them
// match the selector (so it knows whether another page follows) or the
// kind is exhausted.
//
// The list's revision is the last one before the first gap in the log (a
// write in flight or rolled back). Unless lenient, a gap below the newest
// revision fails the read with a gapError for List to settle; lenient, the
// list reports the revision before the gap, and a watch from it may repeat
// changes the list already holds, never miss one.
func (s *Store) list(ctx context.Context, query string, args []any, opts store.ListOptions, c backend.Cursor, lenient bool) (store.ListResult, error) {
	var res store.ListResult
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error {
			res = store.ListResult{}
			var newest int64
			if err := tx.QueryRow(ctx, s.sql.listRevision).Scan(&res.Revision, &newest); err != nil {
				return err
			}
			if res.Revision < newest && !lenient {
				return gapError{from: res.Revision + 1, to: newest}
			}
			if opts.Limit == 0 {
				_, _, err := s.listRows(ctx, tx, query, args, opts, &res.Items, -1)
				return err
			}
			batch := opts.Limit + 1
			for after := c.After; ; {
				n, last, err := s.listRows(ctx, tx, query, append(args, after, batch), opts, &res.Items, batch)
				if err != nil || n < batch || len(res.Items) == batch {
					return err
				}
				after = last
			}
		})
	if err != nil || opts.Limit == 0 {
		return res, err
	}
	key := func(d store.Document) string { return d.Meta.Key }
	res.Items, res.Continue, res.Revision = backend.Page(res.Items, key, opts.Limit, backend.Cursor{Revision: c.Revision}, res.Revision)
	return res, nil
}

// gapError is a List snapshot's gap in the log, from and to the revisions
// to settle.
type gapError struct{ from, to int64 }

func (e gapError) Error() string {
	return fmt.Sprintf("postgres: revisions %d to %d not yet settled", e.from, e.to)
}

// listRows appends to items the rows of query that opts selects, up to limit of
// them (no bound when limit is negative), and returns how many rows it read
// and the key of the last.
func (s *Store) listRows(ctx context.Context, tx pgx.Tx, query string, args []any, opts store.ListOptions, items *[]store.Document, limit int) (int, string, error) {
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return 0, "", err
	}
	defer rows.Close()
	n, last := 0, ""
	for rows.Next() {
		d, err := scanDoc(rows)
		if err != nil {
			return n, last, err
		}
		n, last = n+1, d.Meta.Key
		if backend.Selects(opts, &d.Meta) && len(*items) != limit {
			*items = append(*items, d)
		}
	}
	return n, last, rows.Err()
}

// Create stores a new document.
func (s *Store) Create(ctx context.Context, doc store.Document) (store.Document, error) {
	const op = "create"
	m := &doc.Meta
	if err := ctx.Err(); err != nil {
		return store.Document{}, err
	}
	if err := s.checkKind(op, m.Kind, m.Key, true); err != nil {
		return store.Document{}, err
	}
	if err := backend.ValidateCreate(doc); err != nil {
		return store.Document{}, &store.Error{Op: op, Kind: m.Kind, Key: m.Key, Err: err}
	}
	fin, owners, uids, labels, err := metaArgs(m)
	if err != nil {
		return store.Document{}, &store.Error{Op: op, Kind: m.Kind, Key: m.Key, Err: fmt.Errorf("%w: %v", store.ErrInvalid, err)}
	}
	uid := rand.Text()
	var out store.Document
	err = s.inTx(ctx, op, m.Kind, m.Key, func(tx pgx.Tx) error {
		switch _, err := scanDoc(tx.QueryRow(ctx, s.sql.lock, m.Kind, m.Key)); {
		case err == nil:
			return &store.Error{Op: op, Kind: m.Kind, Key: m.Key, Err: store.ErrAlreadyExists}
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		d, err := scanDoc(tx.QueryRow(ctx, s.sql.create, m.Kind, m.Key, uid, fin, owners, uids, labels, orNull(doc.Spec)))
		if err != nil {
			return err
		}
		out = d
		return nil
	})
	if err == nil {
		s.maintain(ctx, out.Meta.Revision, out.Meta.Revision)
	}
	return out, err
}

// UpdateSpec writes the document's spec, labels, finalizers and owners.
func (s *Store) UpdateSpec(ctx context.Context, doc store.Document) (store.Document, error) {
	const op = "update spec"
	m := &doc.Meta
	if err := ctx.Err(); err != nil {
		return store.Document{}, err
	}
	if err := s.checkKind(op, m.Kind, m.Key, true); err != nil {
		return store.Document{}, err
	}
	if err := backend.ValidateMeta(m); err != nil {
		return store.Document{}, &store.Error{Op: op, Kind: m.Kind, Key: m.Key, Err: err}
	}
	var out store.Document
	err := s.inTx(ctx, op, m.Kind, m.Key, func(tx pgx.Tx) error {
		cur, err := s.current(ctx, tx, op, m.Kind, m.Key, m.Revision)
		if err != nil {
			return err
		}
		u, err := backend.ApplySpec(cur, doc)
		if err != nil {
			return &store.Error{Op: op, Kind: m.Kind, Key: m.Key, Err: err}
		}
		if !u.Changed {
			out = cur
			return nil
		}
		next := u.Next
		if !u.Remove {
			out, err = s.put(ctx, tx, next, false, store.Modified)
			return err
		}
		// The last finalizer is gone: the document goes, logged as it is
		// now.
		if out, err = s.put(ctx, tx, next, false, store.Deleted); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, s.sql.removeQuiet, m.Kind, m.Key)
		return err
	})
	if err == nil && out.Meta.Revision != m.Revision {
		s.maintain(ctx, out.Meta.Revision, out.Meta.Revision)
	}
	return out, err
}

// UpdateStatus writes the document's status. Status writes are committed
// in groups (see [Store] and batch.go): a write that finds no group
// committing is sent at once; writes arriving while a group commits form
// the next group, one statement and one transaction, where each keeps its
// own precondition and result.
func (s *Store) UpdateStatus(ctx context.Context, doc store.Document) (store.Document, error) {
	const op = "update status"
	m := &doc.Meta
	if err := ctx.Err(); err != nil {
		return store.Document{}, err
	}
	if err := s.checkKind(op, m.Kind, m.Key, true); err != nil {
		return store.Document{}, err
	}
	w := &statusWrite{kind: m.Kind, key: m.Key, rev: m.Revision, status: orNull(doc.Status)}
	if f, ok := store.FenceFrom(ctx); ok {
		w.fence, w.fenced = f, true
	}
	if err := s.writeStatus(ctx, w); err != nil {
		return store.Document{}, s.translate(ctx, op, m.Kind, m.Key, err)
	}
	switch {
	case !w.held:
		return store.Document{}, backend.Fenced(op, m.Kind, m.Key, w.fence)
	case !w.found:
		return store.Document{}, &store.Error{Op: op, Kind: m.Kind, Key: m.Key, Err: store.ErrNotFound}
	case !w.written && w.out.Meta.Revision != m.Revision:
		return store.Document{}, backend.RevisionConflict(op, m.Kind, m.Key, m.Revision, w.out.Meta.Revision)
	}
	return w.out, nil
}

// Delete removes the document, or marks it Terminating if it has
// finalizers.
func (s *Store) Delete(ctx context.Context, kind, key string, opts store.DeleteOptions) error {
	const op = "delete"
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.checkKind(op, kind, key, true); err != nil {
		return err
	}
	var rev int64 // of the removal, if the document went
	err := s.inTx(ctx, op, kind, key, func(tx pgx.Tx) error {
		rev = 0
		cur, err := scanDoc(tx.QueryRow(ctx, s.sql.lock, kind, key))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return &store.Error{Op: op, Kind: kind, Key: key, Err: store.ErrNotFound}
		case err != nil:
			return err
		}
		if err := backend.CheckDelete(cur.Meta, opts); err != nil || cur.Meta.Terminating() {
			return err
		}
		if len(cur.Meta.Finalizers) > 0 {
			d, err := s.put(ctx, tx, cur, true, store.Modified)
			rev = d.Meta.Revision
			return err
		}
		return tx.QueryRow(ctx, s.sql.remove, kind, key).Scan(&rev)
	})
	if err == nil && rev > 0 {
		s.maintain(ctx, rev, rev)
	}
	return err
}

// current locks and returns the stored document if its revision is rev.
func (s *Store) current(ctx context.Context, tx pgx.Tx, op, kind, key string, rev int64) (store.Document, error) {
	cur, err := scanDoc(tx.QueryRow(ctx, s.sql.lock, kind, key))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return store.Document{}, &store.Error{Op: op, Kind: kind, Key: key, Err: store.ErrNotFound}
	case err != nil:
		return store.Document{}, err
	case cur.Meta.Revision != rev:
		return store.Document{}, backend.RevisionConflict(op, kind, key, rev, cur.Meta.Revision)
	}
	return cur, nil
}

// put writes next over the stored document, at a new revision, and logs the
// change as typ. With terminate it records that deletion was requested.
func (s *Store) put(ctx context.Context, tx pgx.Tx, next store.Document, terminate bool, typ store.EventType) (store.Document, error) {
	m := &next.Meta
	fin, owners, uids, labels, err := metaArgs(m)
	if err != nil {
		return store.Document{}, err
	}
	d, err := scanDoc(tx.QueryRow(ctx, s.sql.put, m.Kind, m.Key, m.Generation, terminate,
		fin, owners, uids, labels, orNull(next.Spec), orNull(next.Status), int16(typ)))
	return d, err
}

// pruneEvery is how many revisions pass between settlements of the log and
// discards of old history.
const pruneEvery = 1024

// maintain runs after a write committed revisions lo to hi. Each time the
// revisions pass a multiple of pruneEvery (or of History, if that is
// fewer), it settles the log up to that multiple, so List looks for gaps
// only after it, and discards the history older than Config.History
// revisions before it. Each runs in a transaction of its own; a failure is
// only logged, since the next multiple does everything this one would have.
func (s *Store) maintain(ctx context.Context, lo, hi int64) {
	every := min(pruneEvery, s.history)
	mark := hi / every * every
	if mark < lo || mark == 0 {
		return
	}
	_, err := s.pool.Exec(ctx, s.sql.settle, mark)
	if err == nil && mark > s.history {
		_, err = s.pool.Exec(ctx, s.sql.compact, mark-s.history)
	}
	if err != nil && ctx.Err() == nil {
		s.log.Warn("settling or discarding old change history failed; the next time catches up",
			zap.Int64("revision", mark), zap.Error(err))
	}
	s.analyzeIfGrown(ctx)
}

// analyzeIfGrown refreshes the planner's statistics of the documents
// table when it has doubled in size since they were taken (or, never
// taken, has grown past a few pages). Every session keeps the plans of
// the store's statements; a plan made while the table was small reads
// the whole table where an index would find one row (a hash join or a
// sequential scan), and PostgreSQL plans again only when the table's
// statistics change, which autovacuum does on its own schedule (a minute
// by default): long enough, after a burst of creates, for each write to
// scan thousands of documents. Doubling keeps the cost logarithmic in the
// table's growth. A session that may not analyze the table (not its
// owner) leaves it to autovacuum.
func (s *Store) analyzeIfGrown(ctx context.Context) {
	var grown bool
	if err := s.pool.QueryRow(ctx, s.sql.grown).Scan(&grown); err != nil || !grown {
		return
	}
	if _, err := s.pool.Exec(ctx, s.sql.analyze); err != nil && ctx.Err() == nil {
		s.log.Debug("refreshing the documents table's statistics failed", zap.Error(err))
	}
}

// Compact discards the change history up to and including revision. See
// [backend.Compactor]. Watches waiting for changes are woken so that those
// overtaken fail at once.
func (s *Store) Compact(ctx context.Context, revision int64) error {
	const op = "compact"
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.inTx(ctx, op, "", "", func(tx pgx.Tx) error {
		var cur int64
		if err := tx.QueryRow(ctx, s.sql.compactCheck).Scan(&cur); err != nil {
			return err
		}
		if err := backend.CheckCompact(revision, cur); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.sql.settle, revision); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.sql.compact, revision); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_notify($1, '')`, s.channel)
		return err
	})
}
