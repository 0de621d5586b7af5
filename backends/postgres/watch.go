package postgres

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/backend"
)

// watchBatch is how many changes a watch reads per query.
const watchBatch = 256

// Watch returns every change to kind after fromRevision. The watch reads the
// change log; between reads it waits on its own LISTEN connection for a
// notification, or for Config.PollInterval, whichever comes first, so a lost
// notification only delays an event. From a revision the store has not
// reached yet, it reads nothing until changes after that revision are
// logged. It starts no goroutine.
func (s *Store) Watch(ctx context.Context, kind string, fromRevision int64) (store.Watch, error) {
	const op = "watch"
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.checkKind(op, kind, "", false); err != nil {
		return nil, err
	}
	if err := backend.CheckWatch(kind, fromRevision); err != nil {
		return nil, err
	}
	var compacted int64
	if err := s.pool.QueryRow(ctx, s.sql.currentCompaction).Scan(&compacted); err != nil {
		return nil, s.translate(ctx, op, kind, "", err)
	}
	if fromRevision < compacted {
		return nil, backend.Compacted(kind, fromRevision, compacted)
	}
	life, stop := context.WithCancel(context.Background())
	return &watch{s: s, kind: kind, last: fromRevision, settled: fromRevision, life: life, stop: stop}, nil
}

// watch pages through the change log of one kind. Next must not be called
// from two goroutines at once; Close may be called from any.
type watch struct {
	s    *Store
	kind string
	// life is cancelled by Close; it ends a Next waiting in another
	// goroutine.
	life context.Context
	stop context.CancelFunc

	// Owned by Next.
	buf     []store.Event
	last    int64 // revision of the last event delivered
	settled int64 // every revision up to it is in buf or delivered, or never logged
	err     error // the failure every later Next returns
	// caughtUp is set when the last read reached the end of the log, with
	// no gap, while listening: every change committed after it is
	// notified, so the watch waits for a notification before reading
	// again.
	caughtUp bool

	// mu guards conn and closed.
	mu     sync.Mutex
	conn   *pgx.Conn // the LISTEN connection, nil while Next uses it or before it connects
	closed bool
}

// Next returns the next change.
func (w *watch) Next(ctx context.Context) (store.Event, error) {
	for {
		if w.err != nil {
			return store.Event{}, w.err
		}
		if err := ctx.Err(); err != nil {
			return store.Event{}, err
		}
		if w.life.Err() != nil {
			w.err = &store.Error{Op: "watch", Kind: w.kind, Err: store.ErrClosed}
			continue
		}
		if len(w.buf) > 0 {
			e := w.buf[0]
			w.buf = w.buf[1:]
			w.last = e.Revision
			return e, nil
		}
		if err := w.await(ctx); err != nil {
			return store.Event{}, err
		}
	}
}

// await fills the buffer from the change log, or waits for a notification
// or the poll interval if there is nothing to read. It returns only the
// caller's context error; other failures are recorded in w.err or, if
// transient, retried on the next poll.
func (w *watch) await(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(w.life, cancel)()

	// Listen before reading, so that a change committed after the read
	// is notified.
	conn := w.takeConn(ctx)
	defer w.putConn(conn)
	var err error
	if conn == nil || !w.caughtUp {
		err = w.fill(ctx)
		// Only a read made while listening may skip the next one.
		w.caughtUp = w.caughtUp && conn != nil && err == nil
		if err == nil && len(w.buf) > 0 {
			return nil
		}
	}
	// What the wait brings is read next.
	w.caughtUp = false
	if err != nil {
		switch {
		case errors.Is(err, store.ErrCompacted):
			w.err = err
			return nil
		case ctx.Err() != nil:
		default:
			w.s.log.Warn("watch: reading changes failed; retrying", zap.String("kind", w.kind), zap.Error(err))
		}
	}
	wait, cancelWait := context.WithTimeout(ctx, w.s.poll)
	defer cancelWait()
	if conn == nil {
		<-wait.Done()
	} else {
		for {
			n, err := conn.WaitForNotification(wait)
			if err != nil {
				if wait.Err() == nil {
					// The connection failed: drop it; the next wait
					// connects again.
					w.s.log.Warn("watch: notification connection failed", zap.String("kind", w.kind), zap.Error(err))
					conn.Close(context.WithoutCancel(ctx)) //nolint:errcheck // already broken
					conn = nil
					<-wait.Done()
				}
				break
			}
			if n.Payload == w.kind || n.Payload == "" {
				break
			}
		}
	}
	if cerr := ctx.Err(); cerr != nil && w.life.Err() == nil {
		return cerr
	}
	return nil
}

// fill reads the next changes of the kind into the buffer. Revisions may
// commit out of order, so it reads only up to the first gap in the log
// after the revisions it has settled; if the gap leaves it nothing to
// deliver, it settles the gap (statements.fillGaps waits for a write still
// in flight there) and reads again. It fails with store.ErrCompacted if
// changes the watch has not delivered were discarded.
func (w *watch) fill(ctx context.Context) error {
	for range maxAttempts {
		end, err := w.read(ctx)
		if err != nil || len(w.buf) > 0 || end == w.settled {
			return err
		}
		if _, err := w.s.pool.Exec(ctx, w.s.sql.fillGaps, w.settled+1, end); err != nil && !retryable(ctx, err) {
			return err
		}
	}
	return nil
}

// read runs statements.changes once, riding on the status writes' next
// group if one is committing (see batch.go): it buffers the kind's changes
// up to the first gap and returns the last revision it saw of any kind.
func (w *watch) read(ctx context.Context) (int64, error) {
	var compacted, safe, end, window int64
	var decodeErr error
	err := w.s.ride(ctx, &rider{
		queue: func(b *pgx.Batch) {
			b.Queue(w.s.sql.changes, w.kind, w.settled, watchBatch).Query(func(rows pgx.Rows) error {
				for rows.Next() {
					var e store.Event
					var typ int16
					var c, sf int64 // set in the first row only
					if e.Document, decodeErr = scanDoc(rows, &c, &sf, &e.Revision, &typ); decodeErr != nil {
						break
					}
					if e.Revision == 0 { // the first row
						compacted, safe, end, window = c, sf, e.Document.Meta.Revision, e.Document.Meta.Generation
						continue
					}
					if e.Revision > safe {
						break
					}
					e.Type = store.EventType(typ)
					w.buf = append(w.buf, e)
				}
				rows.Close()
				return rows.Err()
			})
		},
		reset: func() { w.buf, decodeErr = w.buf[:0], nil },
	})
	if err == nil {
		err = decodeErr
	}
	if err != nil {
		w.buf = w.buf[:0]
		return 0, err
	}
	if compacted > w.settled {
		w.buf = w.buf[:0]
		return 0, backend.Compacted(w.kind, w.last, compacted)
	}
	w.settled = safe
	w.caughtUp = safe == end && window < watchBatch
	return end, nil
}

// takeConn returns the watch's LISTEN connection, connecting if needed, or
// nil if it cannot connect now (the watch then polls).
func (w *watch) takeConn(ctx context.Context) *pgx.Conn {
	w.mu.Lock()
	conn := w.conn
	w.conn = nil
	w.mu.Unlock()
	if conn != nil && !conn.IsClosed() {
		return conn
	}
	// Changes committed before it listens are not notified to it.
	w.caughtUp = false
	conn, err := pgx.ConnectConfig(ctx, w.s.connectTo)
	if err == nil {
		_, err = conn.Exec(ctx, "LISTEN "+pgx.Identifier{w.s.channel}.Sanitize())
		if err != nil {
			conn.Close(context.WithoutCancel(ctx)) //nolint:errcheck // failed already
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			w.s.log.Warn("watch: cannot listen for notifications; polling", zap.String("kind", w.kind), zap.Error(err))
		}
		return nil
	}
	return conn
}

// putConn gives the connection back to the watch, or closes it if the watch
// was closed meanwhile.
func (w *watch) putConn(conn *pgx.Conn) {
	if conn == nil {
		return
	}
	w.mu.Lock()
	closed := w.closed
	if !closed {
		w.conn = conn
	}
	w.mu.Unlock()
	if closed {
		closeConn(conn)
	}
}

// Close ends the watch; a Next waiting in another goroutine returns
// store.ErrClosed.
func (w *watch) Close() error {
	w.mu.Lock()
	conn := w.conn
	w.conn, w.closed = nil, true
	w.mu.Unlock()
	w.stop()
	if conn != nil {
		closeConn(conn)
	}
	return nil
}

// closeConn closes a LISTEN connection, waiting at most a second for the
// server to acknowledge.
func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	conn.Close(ctx) //nolint:errcheck // nothing to do about it
}
