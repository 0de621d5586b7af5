package history

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/tendhq/tend/internal/wait"
	"github.com/tendhq/tend/store"
)

// Defaults of [RecorderConfig].
const (
	// DefaultMaxEntries is how many entries a history keeps when
	// RecorderConfig.MaxEntries is zero.
	DefaultMaxEntries = 100
	// DefaultMaxAge is how old an entry a history keeps when
	// RecorderConfig.MaxAge is zero.
	DefaultMaxAge = 7 * 24 * time.Hour
	// DefaultBufferSize is how many entries wait to be written when
	// RecorderConfig.BufferSize is zero.
	DefaultBufferSize = 4096
	// DefaultFlushInterval is the least time between two writes of one
	// history when RecorderConfig.FlushInterval is zero.
	DefaultFlushInterval = time.Second
)

// Values of the reason label of tend_history_entries_dropped_total.
const (
	// DropBufferFull counts entries pushed out of a full buffer (routine
	// entries first: see [Entry.Routine]): recorded faster than the store
	// took them, or waiting while the store was unreachable.
	DropBufferFull = "buffer_full"
	// DropWriteFailed counts entries the store refused for good (an
	// unknown kind, an invalid document, a closed store) and entries still
	// unwritten when [Recorder.Run] returned.
	DropWriteFailed = "write_failed"
)

// A history write that conflicts with another writer's is tried again
// after a pause drawn around a backoff that starts at firstBackoff and
// doubles up to maxBackoff, for as long as its context lasts.
const (
	firstBackoff = 5 * time.Millisecond
	maxBackoff   = time.Second
)

// shutdownFlushTimeout bounds the last write of [Recorder.Run].
const shutdownFlushTimeout = 5 * time.Second

// ErrInvalidConfig is returned, wrapped with the reason, by [NewRecorder]
// for a configuration value out of range.
var ErrInvalidConfig = errors.New("history: invalid config")

// RecorderConfig configures a [Recorder].
type RecorderConfig struct {
	// MaxEntries is how many entries a history keeps, the newest. Zero
	// means [DefaultMaxEntries].
	MaxEntries int
	// MaxAge is how long an entry is kept. Zero means [DefaultMaxAge].
	MaxAge time.Duration
	// BufferSize is how many entries can wait to be written; an entry
	// recorded while that many wait is dropped. Zero means
	// [DefaultBufferSize].
	BufferSize int
	// FlushInterval is how long the recorder waits after a write before the
	// next, so that one write carries every entry a document had meanwhile.
	// Zero means [DefaultFlushInterval].
	FlushInterval time.Duration
	// Replica names this replica in the entries it records
	// (Entry.Replica). Empty leaves the field empty.
	Replica string
	// Logger receives the recorder's logs (a failed write, once per
	// flush). Nil means no logs.
	Logger *zap.Logger
	// Metrics, when set, is given the recorder's numbers ([RecorderStats]):
	// package history/historyprom exposes them to Prometheus as
	// tend_history_entries_written_total and
	// tend_history_entries_dropped_total (by reason: buffer_full,
	// write_failed). Nil means no metrics.
	Metrics MetricsProvider
}

// MetricsProvider exposes the metrics of the recorder given it in
// RecorderConfig.Metrics: package history/historyprom exposes them to
// Prometheus. A provider is told about a recorder once, by [NewRecorder],
// and reads its numbers whenever it wants, through stats, for as long as
// the recorder lives.
type MetricsProvider interface {
	// Track starts exposing the metrics of a recorder, read with stats. An
	// error (the provider already exposes another recorder's) is returned
	// by NewRecorder.
	Track(stats func() RecorderStats) error
}

// RecorderStats are a recorder's counters since it was made.
type RecorderStats struct {
	// Written counts the entries written to the store.
	Written uint64
	// DroppedBufferFull and DroppedWriteFailed count the entries dropped
	// for each reason: [DropBufferFull] and [DropWriteFailed].
	DroppedBufferFull, DroppedWriteFailed uint64
}

// Recorder writes the entries given to [Recorder.Record] to their
// documents' histories: see the package documentation. Record is safe for
// concurrent use and never blocks; [Recorder.Run] does the writing.
type Recorder struct {
	b          store.Backend
	maxEntries int
	maxAge     time.Duration
	bufferSize int
	interval   time.Duration
	replica    string
	log        *zap.Logger // a no-op logger when logging is off

	wake     chan struct{} // capacity 1: entries wait
	flushing chan struct{} // capacity 1: held by the flush under way

	mu       sync.Mutex // guards pending, drops, unlogged and written
	pending  []pendingEntry
	drops    map[string]uint64 // by reason
	unlogged map[string]uint64 // drops not yet logged, by reason
	written  uint64
}

// pendingEntry is an entry waiting to be written.
type pendingEntry struct {
	kind, key, uid string
	e              Entry
}

// NewRecorder returns a recorder writing to b. It starts nothing: see
// [Recorder.Run]. With Metrics it has the provider track the recorder.
func NewRecorder(b store.Backend, cfg RecorderConfig) (*Recorder, error) {
	switch {
	case b == nil:
		return nil, fmt.Errorf("%w: NewRecorder needs a backend", ErrInvalidConfig)
	case cfg.MaxEntries < 0, cfg.MaxAge < 0, cfg.BufferSize < 0, cfg.FlushInterval < 0:
		return nil, fmt.Errorf("%w: MaxEntries, MaxAge, BufferSize and FlushInterval must not be negative", ErrInvalidConfig)
	}
	r := &Recorder{
		b:          b,
		maxEntries: cmp.Or(cfg.MaxEntries, DefaultMaxEntries),
		maxAge:     cmp.Or(cfg.MaxAge, DefaultMaxAge),
		bufferSize: cmp.Or(cfg.BufferSize, DefaultBufferSize),
		interval:   cmp.Or(cfg.FlushInterval, DefaultFlushInterval),
		replica:    cfg.Replica,
		wake:       make(chan struct{}, 1),
		flushing:   make(chan struct{}, 1),
		drops:      map[string]uint64{},
		unlogged:   map[string]uint64{},
	}
	r.log = cmp.Or(cfg.Logger, zap.NewNop()).Named("history")
	if cfg.Metrics != nil {
		if err := cfg.Metrics.Track(r.stats); err != nil {
			return nil, fmt.Errorf("history: metrics: %w", err)
		}
	}
	return r, nil
}

// stats returns the recorder's counters.
func (r *Recorder) stats() RecorderStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return RecorderStats{Written: r.written, DroppedBufferFull: r.drops[DropBufferFull], DroppedWriteFailed: r.drops[DropWriteFailed]}
}

// wrote counts n entries written.
func (r *Recorder) wrote(n int) {
	r.mu.Lock()
	r.written += uint64(n)
	r.mu.Unlock()
}

// Record adds e to the history of the document of kind and key whose UID is
// uid, to be written by [Recorder.Run]. It never blocks: when the buffer is
// full, the oldest routine entry waiting ([Entry.Routine]), or else the
// oldest entry, is dropped and counted. A zero e.Time is set to now, an
// empty e.Replica to the configured replica, and an empty e.ID to a new id.
func (r *Recorder) Record(kind, key, uid string, e Entry) {
	e = r.prepare(e)
	r.mu.Lock()
	r.pending = append(r.pending, pendingEntry{kind: kind, key: key, uid: uid, e: e})
	r.trim()
	r.mu.Unlock()
	r.signal()
}

// signal wakes Run: entries wait.
func (r *Recorder) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// trim drops entries from pending, routine ones first and oldest first,
// until it fits the buffer. r.mu is held.
func (r *Recorder) trim() {
	over := len(r.pending) - r.bufferSize
	if over <= 0 {
		return
	}
	dropped := over
	r.pending = slices.DeleteFunc(r.pending, func(p pendingEntry) bool {
		if over > 0 && p.e.Routine() {
			over--
			return true
		}
		return false
	})
	r.pending = slices.Delete(r.pending, 0, over)
	r.dropLocked(DropBufferFull, dropped)
}

// prepare returns e with its ID, Time (now) and Replica set when empty,
// and its text fields bounded.
func (r *Recorder) prepare(e Entry) Entry {
	if e.ID == "" {
		e.ID = newID()
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	if e.Replica == "" {
		e.Replica = r.replica
	}
	e.bound()
	return e
}

// Dropped returns how many entries were dropped for reason
// ([DropBufferFull] or [DropWriteFailed]) since the recorder was made.
func (r *Recorder) Dropped(reason string) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.drops[reason]
}

// dropLocked counts n entries dropped for reason. r.mu is held.
func (r *Recorder) dropLocked(reason string, n int) {
	if n > 0 {
		r.drops[reason] += uint64(n)
		r.unlogged[reason] += uint64(n)
	}
}

// Run writes the entries recorded until ctx ends, then writes those left
// (for at most 5 seconds), drops and counts those it could not write, and
// returns nil. Entries whose write failed while the store was unreachable
// wait in the buffer and are tried again after the flush interval. Run
// one Run per recorder.
func (r *Recorder) Run(ctx context.Context) error {
	pause := time.NewTimer(0)
	defer pause.Stop()
	<-pause.C
	for {
		select {
		case <-ctx.Done():
		case <-r.wake:
		}
		if ctx.Err() != nil {
			last, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownFlushTimeout)
			defer cancel()
			r.Flush(last)
			r.mu.Lock()
			r.dropLocked(DropWriteFailed, len(r.pending))
			r.pending = nil
			r.mu.Unlock()
			r.logDrops(nil)
			return nil
		}
		flushCtx, endFlush := graceful(ctx)
		r.Flush(flushCtx)
		endFlush()
		pause.Reset(r.interval)
		select {
		case <-ctx.Done():
		case <-pause.C:
		}
	}
}

// graceful returns a context for a flush begun while ctx runs: it ends
// shutdownFlushTimeout after ctx does, so that a write in flight when the
// recorder is stopped completes instead of dropping its entries.
func graceful(ctx context.Context) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		grace := time.NewTimer(shutdownFlushTimeout)
		defer grace.Stop()
		select {
		case <-grace.C:
		case <-out.Done():
		}
		cancel()
	})
	return out, func() {
		cancel()
		stop()
	}
}

// Flush writes every entry waiting now, one write per document, and
// returns how many it could not write. A flush under way ([Recorder.Run]'s)
// is waited for first, so that when Flush returns every entry recorded
// before it was called has been written, dropped or counted unwritten; if
// ctx ends during that wait, Flush writes nothing and returns how many
// entries wait. A write that conflicts with another writer's is tried
// again, with backoff, until ctx ends. The entries of a write the store
// refused for good are dropped and counted ([DropWriteFailed]); those of
// another failed write (the store unreachable, ctx ended) wait in the
// buffer for the next flush. Drops are logged once per flush.
func (r *Recorder) Flush(ctx context.Context) (unwritten int) {
	select {
	case r.flushing <- struct{}{}:
		defer func() { <-r.flushing }()
	case <-ctx.Done():
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.pending)
	}
	r.mu.Lock()
	batch := r.pending
	r.pending = nil
	r.mu.Unlock()
	type target struct{ kind, key string }
	byDoc := map[target][]pendingEntry{}
	var order []target
	for _, p := range batch {
		t := target{p.kind, p.key}
		if _, ok := byDoc[t]; !ok {
			order = append(order, t)
		}
		byDoc[t] = append(byDoc[t], p)
	}
	var (
		firstErr error
		retry    []pendingEntry
		refused  int
	)
	for _, t := range order {
		ps := byDoc[t]
		err := r.write(ctx, t.kind, t.key, ps, false)
		switch {
		case err == nil:
			r.wrote(len(ps))
			continue
		case refusedForGood(err):
			refused += len(ps)
		default:
			retry = append(retry, ps...)
		}
		unwritten += len(ps)
		firstErr = cmp.Or(firstErr, err)
	}
	r.mu.Lock()
	r.dropLocked(DropWriteFailed, refused)
	if len(retry) > 0 {
		r.pending = append(retry, r.pending...)
		r.trim()
	}
	r.mu.Unlock()
	if len(retry) > 0 {
		r.signal()
	}
	r.logDrops(firstErr)
	return unwritten
}

// logDrops logs the entries dropped since it last did, if any, by reason,
// with err, the first write error of the flush.
func (r *Recorder) logDrops(err error) {
	r.mu.Lock()
	full, failed := r.unlogged[DropBufferFull], r.unlogged[DropWriteFailed]
	clear(r.unlogged)
	r.mu.Unlock()
	if full+failed > 0 {
		r.log.Warn("history entries dropped", zap.Uint64(DropBufferFull, full), zap.Uint64(DropWriteFailed, failed), zap.Error(err))
	}
}

// refusedForGood reports whether a write failed with err would fail again.
func refusedForGood(err error) bool {
	var enc *json.UnsupportedValueError
	return errors.Is(err, store.ErrUnknownKind) || errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrClosed) ||
		errors.As(err, &enc)
}

// Append writes entries to the history of the document of kind, key and
// uid now, with the recorder's retention, and returns when they are stored.
// It is for writers that must know their entry is recorded, such as an
// operator's action; a controller's entries go through [Recorder.Record].
// Entries without a Time get the current time, those without an ID a new
// one; entries are bounded like recorded ones, and carry the recorder's
// replica. A write that fails, unless refused for good (an unknown kind,
// an invalid document), is tried again with backoff until ctx ends; an
// entry already stored under its ID is not stored again, so a write stored
// but reported failed, tried again, keeps one of each entry.
func (r *Recorder) Append(ctx context.Context, kind, key, uid string, entries ...Entry) error {
	ps := make([]pendingEntry, len(entries))
	for i, e := range entries {
		ps[i] = pendingEntry{kind: kind, key: key, uid: uid, e: r.prepare(e)}
	}
	if len(ps) == 0 {
		return nil
	}
	if err := r.write(ctx, kind, key, ps, true); err != nil {
		return fmt.Errorf("history of %s %q: %w", kind, key, err)
	}
	r.wrote(len(ps))
	return nil
}

// write appends ps, entries of one document, to its history, trying
// again until ctx ends after a conflict with another writer or, when
// persist is set, after any failure but a refusal for good.
func (r *Recorder) write(ctx context.Context, kind, key string, ps []pendingEntry, persist bool) error {
	uid := ps[len(ps)-1].uid
	entries := make([]Entry, 0, len(ps))
	for _, p := range ps {
		if p.uid == uid { // entries of an earlier document under the key are moot
			entries = append(entries, p.e)
		}
	}
	slices.SortStableFunc(entries, func(a, b Entry) int { return a.Time.Compare(b.Time) })
	backoff := firstBackoff
	for {
		err := r.writeOnce(ctx, kind, key, uid, entries)
		conflict := errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrAlreadyExists)
		if err == nil || !conflict && (!persist || refusedForGood(err)) {
			return err
		}
		if werr := wait.Sleep(ctx, backoff/2+rand.N(backoff)); werr != nil {
			return errors.Join(err, werr)
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// writeOnce reads the history of the document, adds entries and writes it,
// conditional on the revision read.
func (r *Recorder) writeOnce(ctx context.Context, kind, key, uid string, entries []Entry) error {
	hk := KindFor(kind)
	doc, err := r.b.Get(ctx, hk, key)
	if errors.Is(err, store.ErrNotFound) {
		doc = store.Document{Meta: store.Meta{Kind: hk, Key: key, Owners: owners(kind, key, uid)}}
		if doc.Spec, err = r.encode(log{}, entries); err != nil {
			return err
		}
		_, err = r.b.Create(ctx, doc)
		return err
	}
	if err != nil {
		return err
	}
	var l log
	if json.Unmarshal(doc.Spec, &l) != nil {
		l = log{} // unreadable: start again
	}
	if uid != "" && !slices.Equal(doc.Meta.Owners, owners(kind, key, uid)) {
		// The document was created again under the key: a new life,
		// a new history.
		l = log{}
		doc.Meta.Owners = owners(kind, key, uid)
	}
	if doc.Spec, err = r.encode(l, entries); err != nil {
		return err
	}
	_, err = r.b.UpdateSpec(ctx, doc)
	return err
}

// encode returns the history l with added, entries in time order, added
// to it (see story.add) and the retention rule applied.
func (r *Recorder) encode(l log, added []Entry) ([]byte, error) {
	s := story{entries: l.Entries, gone: l.Gone}
	for _, e := range added {
		s.add(e)
	}
	s.retain(time.Now().Add(-r.maxAge), r.maxEntries)
	return json.Marshal(log{Entries: s.entries, Gone: s.gone})
}

// owners returns the owner references of the history of a document.
func owners(kind, key, uid string) []store.OwnerRef {
	if uid == "" {
		return nil
	}
	return []store.OwnerRef{{Kind: kind, Key: key, UID: uid}}
}
