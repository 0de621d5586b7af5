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
		d, err = scanDoc(s.pool.QueryRow(ctx, s.sql.get, kind, key))
		if !retryable(ctx, err) {
			break
		}
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Document{}, &store.Error{Op: op, Kind: kind, Key: key, Err: store.ErrNotFound}
	}
	return d, s.translate(ctx, op, kind, key, err)
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
	for range maxAttempts {
		res, err = s.list(ctx, query, args, opts, cursor)
		if !retryable(ctx, err) {
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
func (s *Store) list(ctx context.Context, query string, args []any, opts store.ListOptions, c backend.Cursor) (store.ListResult, error) {
	var res store.ListResult
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error {
			res = store.ListResult{}
			if err := tx.QueryRow(ctx, s.sql.listRevision).Scan(&res.Revision); err != nil {
				return err
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
		return s.prune(ctx, tx, d.Meta.Revision)
	})
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
	return out, err
}

// UpdateStatus writes the document's status, in one statement (see
// statements.updateStatus): one round trip, and the revision counter locked
// only for the server's part of the write.
func (s *Store) UpdateStatus(ctx context.Context, doc store.Document) (store.Document, error) {
	const op = "update status"
	m := &doc.Meta
	if err := ctx.Err(); err != nil {
		return store.Document{}, err
	}
	if err := s.checkKind(op, m.Kind, m.Key, true); err != nil {
		return store.Document{}, err
	}
	var lease, fence any // NULL: not fenced
	f, fenced := store.FenceFrom(ctx)
	if fenced {
		lease, fence = f.Lease, f.Token
	}
	var (
		held, written bool
		out           store.Document
	)
	found, err := s.statement(ctx, func(row pgx.Row) (err error) {
		out, err = scanDoc(row, &held, &written)
		return err
	}, s.sql.updateStatus, m.Kind, m.Key, m.Revision, orNull(doc.Status), lease, fence)
	switch {
	case err != nil:
		return store.Document{}, s.translate(ctx, op, m.Kind, m.Key, err)
	case !found && fenced:
		// A fenced writer of a missing document learns first, as from any
		// other write, whether its lease is lost: inTx checks the fence
		// before it runs the function.
		return store.Document{}, s.inTx(ctx, op, m.Kind, m.Key, func(pgx.Tx) error {
			return &store.Error{Op: op, Kind: m.Kind, Key: m.Key, Err: store.ErrNotFound}
		})
	case !found:
		return store.Document{}, &store.Error{Op: op, Kind: m.Kind, Key: m.Key, Err: store.ErrNotFound}
	case !held:
		return store.Document{}, backend.Fenced(op, m.Kind, m.Key, f)
	case !written && out.Meta.Revision != m.Revision:
		return store.Document{}, backend.RevisionConflict(op, m.Kind, m.Key, m.Revision, out.Meta.Revision)
	case written:
		s.pruneAfter(ctx, out.Meta.Revision)
	}
	return out, nil
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
	return s.inTx(ctx, op, kind, key, func(tx pgx.Tx) error {
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
			_, err := s.put(ctx, tx, cur, true, store.Modified)
			return err
		}
		var rev int64
		if err := tx.QueryRow(ctx, s.sql.remove, kind, key).Scan(&rev); err != nil {
			return err
		}
		return s.prune(ctx, tx, rev)
	})
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
	if err != nil {
		return store.Document{}, err
	}
	return d, s.prune(ctx, tx, d.Meta.Revision)
}

// pruneEvery is how many revisions pass between discards of old history.
const pruneEvery = 1024

// pruneDue reports whether the write of revision rev discards old history:
// every pruneEvery revisions (or every History revisions if that is fewer).
func (s *Store) pruneDue(rev int64) bool {
	return rev%min(pruneEvery, s.history) == 0 && rev > s.history
}

// prune discards the history older than Config.History revisions when
// pruneDue says so, in the transaction that wrote rev.
func (s *Store) prune(ctx context.Context, tx pgx.Tx, rev int64) error {
	if !s.pruneDue(rev) {
		return nil
	}
	_, err := tx.Exec(ctx, s.sql.compact, rev-s.history)
	return err
}

// pruneAfter is prune for a write already committed: it discards the history
// in a transaction of its own. A failure is only logged, since the next due
// revision discards everything this one would have.
func (s *Store) pruneAfter(ctx context.Context, rev int64) {
	if !s.pruneDue(rev) {
		return
	}
	if _, err := s.pool.Exec(ctx, s.sql.compact, rev-s.history); err != nil && ctx.Err() == nil {
		s.log.Warn("discarding old change history failed; the next discard catches up",
			zap.Int64("revision", rev), zap.Error(err))
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
		if _, err := tx.Exec(ctx, s.sql.compact, revision); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_notify($1, '')`, s.channel)
		return err
	})
}
