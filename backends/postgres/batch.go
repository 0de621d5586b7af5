package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tendhq/tend/store"
)

// Status writes are committed in groups, without a timer and without a
// goroutine of their own. A write that finds no group committing commits
// at once, alone, in the caller's goroutine: it leads. Writes that arrive
// meanwhile queue; when the leader's group has committed, it hands the lead
// to the first queued write, whose goroutine commits everything queued by
// then as the next group, in one statement (statements.updateStatuses) and
// so one transaction. The more writers wait on a commit, the larger the
// next group: on a server with durable commits, one WAL flush serves them
// all.
//
// Reads ride along: a Get, or a watch's read of the change log, that finds
// a group committing queues like a write, and the next group sends its
// statement in the same round trip and transaction, before the writes (so
// it sees only what has committed). A read that finds no group committing
// runs at once, alone, as a group of its own.
//
// Each write keeps its own precondition and gets its own result, as if it
// were written alone: the statement checks each row's lease, revision and
// status apart, and one row's failed check never aborts another's. Two
// writes to one document never share a group: the later waits for the next
// one, where it meets the document as the earlier left it. A write is
// acknowledged only when its group's transaction has committed (the
// server's ReadyForQuery after the rows), and a group that fails fails every
// member with the same error, one that says, for a write, whether the
// outcome is unknown.

// maxGroup bounds how many writes one statement carries.
const maxGroup = 512

// The states of a member of a group.
const (
	queued  = iota // waiting in the queue
	leading        // told to commit the next group, itself included
	taken          // in a group being committed
	done           // result set
)

// statusWrite is one status write: its input and, once done, its result.
type statusWrite struct {
	kind, key string
	rev       int64
	status    []byte
	fence     store.Fence
	fenced    bool

	// The result, set before the write is done.
	held, found, written bool
	out                  store.Document
}

// rider is a read riding on a group: queue adds its statement to the
// group's batch, with a callback that keeps what it read (and returns only
// the statement's own error, which aborts the group); reset forgets what a
// failed attempt read.
type rider struct {
	queue func(*pgx.Batch)
	reset func()
}

// member is one write or read waiting for, or in, a group.
type member struct {
	write *statusWrite // a status write, or
	read  *rider       // a read riding along

	err   error         // the group's failure, set before done
	state int           // guarded by groups.mu
	wake  chan struct{} // one signal: lead, or done
}

// groups is the queue of writes and reads waiting for the group commit in
// progress. The zero value is ready for use.
type groups struct {
	// mu guards queue, busy and the states of the members.
	mu    sync.Mutex
	queue []*member
	busy  bool // a group is being committed
}

// writeStatus commits w, alone or in a group, and sets its result; it
// returns the group's failure, if any. It returns ctx.Err() if w was never
// sent, and then w wrote nothing.
func (s *Store) writeStatus(ctx context.Context, w *statusWrite) error {
	m := &member{write: w}
	if err := s.join(ctx, m); err != nil {
		return err
	}
	return m.err
}

// ride runs the read r alone or in the next group, and returns the group's
// failure. It returns ctx.Err() if r was never sent.
func (s *Store) ride(ctx context.Context, r *rider) error {
	m := &member{read: r}
	if err := s.join(ctx, m); err != nil {
		return err
	}
	return m.err
}

// join commits m in a group, leading one if none is committing. It returns
// ctx.Err() only if m left the queue unsent.
func (s *Store) join(ctx context.Context, m *member) error {
	g := &s.groups
	m.wake = make(chan struct{}, 1)
	g.mu.Lock()
	if !g.busy {
		g.busy, m.state = true, taken
		g.mu.Unlock()
		s.lead(ctx, []*member{m})
		return nil
	}
	m.state = queued
	g.queue = append(g.queue, m)
	g.mu.Unlock()

	select {
	case <-m.wake:
	case <-ctx.Done():
		g.mu.Lock()
		if m.state == queued {
			g.queue = slices.DeleteFunc(g.queue, func(x *member) bool { return x == m })
			g.mu.Unlock()
			return ctx.Err()
		}
		g.mu.Unlock()
		<-m.wake // it is in a group already, or leads the next: see it through
	}
	if m.state == leading {
		s.lead(ctx, s.takeGroup())
	}
	return nil
}

// lead commits group, hands the lead on, and settles the change log if
// the group's writes crossed a mark.
func (s *Store) lead(ctx context.Context, group []*member) {
	lo, hi := s.commitGroup(ctx, group)
	s.handOff()
	s.maintain(context.WithoutCancel(ctx), lo, hi)
}

// takeGroup takes the queued members, at most maxGroup writes and at most
// one write per document, as the next group. The leader is first in the
// queue, so in it.
func (s *Store) takeGroup() []*member {
	g := &s.groups
	g.mu.Lock()
	defer g.mu.Unlock()
	type doc struct{ kind, key string }
	seen := make(map[doc]bool, len(g.queue))
	var group []*member
	rest := g.queue[:0]
	writes := 0
	for _, m := range g.queue {
		if w := m.write; w != nil {
			d := doc{w.kind, w.key}
			if seen[d] || writes == maxGroup {
				rest = append(rest, m)
				continue
			}
			seen[d] = true
			writes++
		}
		m.state = taken
		group = append(group, m)
	}
	clear(g.queue[len(rest):])
	g.queue = rest
	return group
}

// handOff passes the lead to the first queued member, or ends the group
// commit if none waits.
func (s *Store) handOff() {
	g := &s.groups
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queue) == 0 {
		g.busy = false
		return
	}
	next := g.queue[0]
	next.state = leading
	next.wake <- struct{}{}
}

// groupRow is one result row of statements.updateStatuses.
type groupRow struct {
	n                    int32
	held, written, found bool
	doc                  store.Document
}

// commitGroup sends the group's reads, then its writes in one statement,
// in one round trip and one transaction, and sets every member's result
// and marks it done. It runs to its end even if ctx is cancelled: other
// callers' reads and writes ride on it. It returns the lowest and highest
// revision written, zero if none.
func (s *Store) commitGroup(ctx context.Context, group []*member) (lo, hi int64) {
	var writes []*statusWrite
	for _, m := range group {
		if m.write != nil {
			writes = append(writes, m.write)
		}
	}
	rows, unknown, err := s.sendGroup(context.WithoutCancel(ctx), group, writes)
	if err == nil {
		for _, r := range rows {
			w := writes[r.n]
			w.held, w.written, w.found = r.held, r.written, r.found
			if r.found {
				w.out = r.doc
			}
			if w.written {
				if rev := w.out.Meta.Revision; lo == 0 || rev < lo {
					lo = rev
				}
				hi = max(hi, w.out.Meta.Revision)
			}
		}
	}
	s.groups.mu.Lock()
	for _, m := range group {
		m.err = err
		if m.write != nil && unknown {
			m.err = fmt.Errorf("%w: %w", errCommitUnknown, err)
		}
		if m.state == taken {
			m.state = done
			m.wake <- struct{}{}
		}
	}
	s.groups.mu.Unlock()
	return lo, hi
}

// sendGroup sends the group as one batch, whose statements share one
// Sync and so one transaction, and reads every result, including the
// commit, before it returns: the server reports a failed commit after the
// rows. It sends it again, after resetting the reads, while the failure
// says the transaction surely wrote nothing: the batch was never sent, or
// the server reported a retryable failure (a deadlock, a serialization
// failure, a revision lost to a reader settling the log, the session
// terminated) before the writes' statement completed. A connection lost
// otherwise leaves the writes' outcome unknown.
func (s *Store) sendGroup(ctx context.Context, group []*member, writes []*statusWrite) (rows []groupRow, unknown bool, err error) {
	n := len(writes)
	nums, revs, fences := make([]int32, n), make([]int64, n), make([]*int64, n)
	kinds, keys, leases := make([]string, n), make([]string, n), make([]*string, n)
	statuses := make([][]byte, n)
	for i, w := range writes {
		nums[i], kinds[i], keys[i], revs[i], statuses[i] = int32(i), w.kind, w.key, w.rev, w.status
		if w.fenced {
			leases[i], fences[i] = &w.fence.Lease, &w.fence.Token
		}
	}
	for attempt := range maxAttempts {
		if attempt > 0 {
			for _, m := range group {
				if m.read != nil {
					m.read.reset()
				}
			}
		}
		b := &pgx.Batch{}
		for _, m := range group {
			if m.read != nil {
				m.read.queue(b)
			}
		}
		rows = rows[:0]
		var complete bool // the writes' statement ran to its end
		var decodeErr error
		if n > 0 {
			b.Queue(s.sql.updateStatuses, nums, kinds, keys, revs, statuses, leases, fences).Query(func(res pgx.Rows) error {
				for res.Next() {
					var r groupRow
					r.doc, decodeErr = scanDoc(res, &r.n, &r.held, &r.written, &r.found)
					if decodeErr != nil {
						break
					}
					rows = append(rows, r)
				}
				res.Close()
				complete = res.Err() == nil
				return res.Err()
			})
		}
		err = s.pool.SendBatch(ctx, b).Close()
		var pe *pgconn.PgError
		switch {
		case err == nil && decodeErr != nil:
			// Committed, but what was written cannot be read back.
			return nil, true, decodeErr
		case err == nil:
			return rows, false, nil
		case pgconn.SafeToRetry(err):
		case complete:
			return nil, isConnectionError(err), err
		case errors.As(err, &pe):
			if !retryable(ctx, err) {
				return nil, false, err
			}
		case isConnectionError(err):
			return nil, n > 0, err
		default:
			return nil, false, err
		}
	}
	return nil, false, err
}
