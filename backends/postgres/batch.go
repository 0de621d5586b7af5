package postgres

import (
	"context"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"

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
// Each write keeps its own precondition and gets its own result, as if it
// were written alone: the statement checks each row's lease, revision and
// status apart, and one row's failed check never aborts another's. Two
// writes to one document never share a group: the later waits for the next
// one, where it meets the document as the earlier left it. A write is
// acknowledged only when its statement's transaction has committed (the
// server's ReadyForQuery after the rows), and a group that fails fails every
// write in it with the same error, one that says whether the outcome is
// unknown.

// maxGroup bounds how many writes one statement carries.
const maxGroup = 512

// The states of a statusWrite.
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
	err                  error // the group's failure: nothing else is set

	state int           // guarded by groups.mu
	wake  chan struct{} // one signal: lead, or done
}

// groups is the queue of status writes waiting for the group commit in
// progress. The zero value is ready for use.
type groups struct {
	// mu guards queue, busy and the states of the writes.
	mu    sync.Mutex
	queue []*statusWrite
	busy  bool // a group is being committed
}

// write commits w, alone or in a group, and sets its result. It returns
// ctx.Err() only if w was never sent, and then w wrote nothing.
func (s *Store) writeStatus(ctx context.Context, w *statusWrite) error {
	g := &s.groups
	w.wake = make(chan struct{}, 1)
	g.mu.Lock()
	if !g.busy {
		g.busy, w.state = true, taken
		g.mu.Unlock()
		lo, hi := s.commitGroup(ctx, []*statusWrite{w})
		s.handOff()
		s.maintain(context.WithoutCancel(ctx), lo, hi)
		return nil
	}
	w.state = queued
	g.queue = append(g.queue, w)
	g.mu.Unlock()

	select {
	case <-w.wake:
	case <-ctx.Done():
		g.mu.Lock()
		if w.state == queued {
			g.queue = slices.DeleteFunc(g.queue, func(x *statusWrite) bool { return x == w })
			g.mu.Unlock()
			return ctx.Err()
		}
		g.mu.Unlock()
		<-w.wake // it is in a group already, or leads the next: see it through
	}
	if w.state == leading {
		lo, hi := s.commitGroup(ctx, s.takeGroup())
		s.handOff()
		s.maintain(context.WithoutCancel(ctx), lo, hi)
	}
	return nil
}

// takeGroup takes the queued writes, at most maxGroup and at most one per
// document, as the next group. The leader is first in the queue, so in it.
func (s *Store) takeGroup() []*statusWrite {
	g := &s.groups
	g.mu.Lock()
	defer g.mu.Unlock()
	type doc struct{ kind, key string }
	seen := make(map[doc]bool, len(g.queue))
	var group []*statusWrite
	rest := g.queue[:0]
	for _, w := range g.queue {
		d := doc{w.kind, w.key}
		if seen[d] || len(group) == maxGroup {
			rest = append(rest, w)
			continue
		}
		seen[d] = true
		w.state = taken
		group = append(group, w)
	}
	clear(g.queue[len(rest):])
	g.queue = rest
	return group
}

// handOff passes the lead to the first queued write, or ends the group
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

// commitGroup writes the group in one statement and sets every write's
// result, then marks them done. The statement runs to its end even if ctx
// is cancelled: other callers' writes ride on it. It returns the lowest and
// highest revision written, zero if none.
func (s *Store) commitGroup(ctx context.Context, group []*statusWrite) (lo, hi int64) {
	n := len(group)
	nums, revs, fences := make([]int32, n), make([]int64, n), make([]*int64, n)
	kinds, keys, leases := make([]string, n), make([]string, n), make([]*string, n)
	statuses := make([][]byte, n)
	for i, w := range group {
		nums[i], kinds[i], keys[i], revs[i], statuses[i] = int32(i), w.kind, w.key, w.rev, w.status
		if w.fenced {
			leases[i], fences[i] = &w.fence.Lease, &w.fence.Token
		}
	}
	var rows []groupRow
	_, err := s.statement(context.WithoutCancel(ctx), func(row pgx.Row) error {
		var r groupRow
		var err error
		r.doc, err = scanDoc(row, &r.n, &r.held, &r.written, &r.found)
		rows = append(rows, r)
		return err
	}, func() { rows = rows[:0] }, s.sql.updateStatuses, nums, kinds, keys, revs, statuses, leases, fences)
	for _, w := range group {
		w.err = err
	}
	if err == nil {
		for _, r := range rows {
			w := group[r.n]
			w.held, w.written, w.found = r.held, r.written, r.found
			if r.found {
				w.out = r.doc
			}
		}
	}
	for _, w := range group {
		if w.written {
			if r := w.out.Meta.Revision; lo == 0 || r < lo {
				lo = r
			}
			hi = max(hi, w.out.Meta.Revision)
		}
	}
	s.groups.mu.Lock()
	for _, w := range group {
		if w.state == taken {
			w.state = done
			w.wake <- struct{}{}
		}
	}
	s.groups.mu.Unlock()
	return lo, hi
}
