package informer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tendhq/tend/internal/wait"

	"github.com/tendhq/tend/store"
)

// Sentinel errors of the package; match them with errors.Is.
var (
	// ErrRunning: Run was called while the informer or factory already runs.
	ErrRunning = errors.New("informer: already running")
	// ErrUnknownIndex: ByIndex named an index that was never added.
	ErrUnknownIndex = errors.New("informer: unknown index")
	// ErrIndexExists: AddIndex named an index that already exists.
	ErrIndexExists = errors.New("informer: index already exists")
	// ErrClosed: the subscription was closed.
	ErrClosed = errors.New("informer: subscription closed")
)

// ListWatcher is the part of a store an informer reads: a store.Backend, or
// anything that lists and watches like one.
type ListWatcher interface {
	// List is store.Reader.List.
	List(ctx context.Context, kind string, opts store.ListOptions) (store.ListResult, error)
	// Watch is store.Watcher.Watch.
	Watch(ctx context.Context, kind string, fromRevision int64) (store.Watch, error)
}

// Defaults of [Config.Backoff]: the wait after the n-th consecutive failure
// is DefaultBackoffBase·2ⁿ⁻¹, at most DefaultBackoffMax.
const (
	DefaultBackoffBase = 100 * time.Millisecond
	DefaultBackoffMax  = 30 * time.Second
)

// Config configures an [Informer]. The zero value is ready to use.
type Config struct {
	// Backoff returns how long to wait before listing or watching again
	// after the failures-th consecutive failure (1 for the first). Nil means
	// [DefaultBackoff]. The wait is a timer of the time package, so a
	// testing/synctest bubble runs it on its fake clock.
	Backoff func(failures int) time.Duration

	// OnError, when set, is told of each store error the informer retries
	// (it is called from the goroutine of [Informer.Run]; it must not
	// block). Nil means the errors go unreported.
	OnError func(err error)
}

// DefaultBackoff is the schedule of a nil [Config.Backoff]: 100 ms, doubling
// up to 30 s.
func DefaultBackoff(failures int) time.Duration {
	d := DefaultBackoffBase
	for i := 1; i < failures && d < DefaultBackoffMax; i++ {
		d *= 2
	}
	return min(d, DefaultBackoffMax)
}

// Informer keeps an indexed in-memory copy of the documents of one kind,
// fed by one list-watch-resume loop, and fans every change out to its
// subscribers. See the package documentation.
type Informer struct {
	lw      ListWatcher
	kind    string
	backoff func(int) time.Duration
	onError func(error)
	running atomic.Bool

	mu     sync.Mutex // guards the fields below
	cache  cache
	rev    int64         // the revision the cache shows every change up to
	synced chan struct{} // closed once the first list landed
	failed error         // the error Run stopped on; nil while it can go on
	failCh chan struct{} // closed when failed is set
	subs   map[*Subscription]struct{}
	hooks  map[*revisionHook]struct{}
}

// New returns an informer of the documents of kind in lw. It starts nothing:
// see [Informer.Run]. A malformed kind is an error matching
// store.ErrInvalid; a kind lw does not hold makes Run fail with
// store.ErrUnknownKind.
func New(lw ListWatcher, kind string, cfg Config) (*Informer, error) {
	if lw == nil {
		return nil, fmt.Errorf("%w: informer needs a ListWatcher", store.ErrInvalid)
	}
	if err := store.ValidateKind(kind); err != nil {
		return nil, &store.Error{Op: "informer", Kind: kind, Err: err}
	}
	i := &Informer{
		lw:      lw,
		kind:    kind,
		backoff: cfg.Backoff,
		onError: cfg.OnError,
		cache:   newCache(),
		synced:  make(chan struct{}),
		failCh:  make(chan struct{}),
		subs:    map[*Subscription]struct{}{},
		hooks:   map[*revisionHook]struct{}{},
	}
	if i.backoff == nil {
		i.backoff = DefaultBackoff
	}
	return i, nil
}

// Kind returns the kind the informer follows.
func (i *Informer) Kind() string { return i.kind }

// Run lists the kind, then watches it from the list's revision, keeping the
// cache and the subscribers up to date, until ctx ends; it then returns nil.
//
// When the store no longer holds the history the watch needs
// (store.ErrCompacted) it lists again (at once, unless nothing was received
// since the last list) and delivers the differences
// between the cache and the new list as changes: a document that appeared,
// changed or disappeared meanwhile. When the watch fell behind
// (store.ErrWatchLagged) it watches again at once from the last revision it
// received. Any other failure is retried after [Config.Backoff], from the
// last revision received, so nothing is missed and nothing is delivered
// twice. An error that retrying cannot mend (store.ErrUnknownKind,
// store.ErrInvalid, store.ErrClosed) ends Run with that error, which
// [Informer.WaitForSync] and every subscription then report.
//
// Run may be called again after it returned: the cache is kept, and the
// first list of the new run delivers what changed meanwhile. A concurrent
// call fails with [ErrRunning].
func (i *Informer) Run(ctx context.Context) error {
	if !i.running.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: %s", ErrRunning, i.kind)
	}
	defer i.running.Store(false)
	i.mu.Lock()
	if i.failed != nil {
		i.failed, i.failCh = nil, make(chan struct{})
		for s := range i.subs {
			s.fail(nil)
		}
	}
	i.mu.Unlock()
	listed, failures := false, 0 // every run starts with a list
	// quiet: the last list was made after a compaction, and its watch has
	// received nothing since.
	quiet := false
	for {
		var err error
		if !listed {
			var res store.ListResult
			if res, err = i.lw.List(ctx, i.kind, store.ListOptions{}); err == nil {
				i.replace(res)
				listed = true
			}
		}
		if listed {
			var w store.Watch
			if w, err = i.lw.Watch(ctx, i.kind, i.Revision()); err == nil {
				var received bool
				if received, err = i.follow(ctx, w); received {
					failures, quiet = 0, false
				}
				_ = w.Close()
			}
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, store.ErrCompacted):
			// List again at once, unless the watch of a list made after a
			// compaction received nothing before it too was compacted:
			// then back off.
			listed = false
			if !quiet {
				quiet = true
				continue
			}
		case errors.Is(err, store.ErrWatchLagged):
			continue
		case Permanent(err):
			err = fmt.Errorf("informer %s: %w", i.kind, err)
			i.fail(err)
			return err
		}
		failures++
		if i.onError != nil {
			i.onError(fmt.Errorf("informer %s: %w", i.kind, err))
		}
		if wait.Sleep(ctx, i.backoff(failures)) != nil {
			return nil
		}
	}
}

// follow applies each event of w until it fails, and reports whether it
// received any.
func (i *Informer) follow(ctx context.Context, w store.Watch) (received bool, err error) {
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			return received, err
		}
		received = true
		i.apply(ev)
	}
}

// Permanent reports whether a store error is one that retrying cannot mend
// (store.ErrUnknownKind, store.ErrInvalid, store.ErrClosed): the errors
// [Informer.Run] ends on, where it retries any other.
func Permanent(err error) bool {
	return errors.Is(err, store.ErrUnknownKind) || errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrClosed)
}

// replace makes the cache the list res and delivers the differences.
func (i *Informer) replace(res store.ListResult) {
	i.mu.Lock()
	defer i.mu.Unlock()
	seen := make(map[string]struct{}, len(res.Items))
	for k := range res.Items {
		d := &res.Items[k]
		seen[d.Meta.Key] = struct{}{}
		old := i.cache.get(d.Meta.Key)
		switch {
		case old == nil:
			i.cache.put(d)
			i.publish(Event{Type: store.Added, Revision: d.Meta.Revision, Document: d})
		case old.Meta.Revision != d.Meta.Revision || old.Meta.UID != d.Meta.UID:
			i.cache.put(d)
			i.publish(Event{Type: store.Modified, Revision: d.Meta.Revision, Document: d, Old: old})
		}
	}
	for _, old := range i.cache.all() {
		if _, ok := seen[old.Meta.Key]; !ok {
			i.cache.remove(old)
			i.publish(Event{Type: store.Deleted, Revision: res.Revision, Document: old, Old: old})
		}
	}
	i.advance(res.Revision)
	select {
	case <-i.synced:
	default:
		close(i.synced)
	}
}

// apply records one watched change and delivers it.
func (i *Informer) apply(ev store.Event) {
	i.mu.Lock()
	defer i.mu.Unlock()
	d := &ev.Document
	old := i.cache.get(d.Meta.Key)
	e := Event{Type: ev.Type, Revision: ev.Revision, Document: d, Old: old}
	switch {
	case ev.Type == store.Deleted:
		if old != nil {
			i.cache.remove(old)
		}
	case old == nil:
		e.Type = store.Added
		i.cache.put(d)
	default:
		e.Type = store.Modified
		i.cache.put(d)
	}
	if ev.Type != store.Deleted || old != nil {
		i.publish(e)
	}
	i.advance(ev.Revision)
}

// advance records that the cache shows every change up to rev.
func (i *Informer) advance(rev int64) {
	if rev <= i.rev {
		return
	}
	i.rev = rev
	for h := range i.hooks {
		h.f(rev)
	}
}

// publish queues e on every subscription.
func (i *Informer) publish(e Event) {
	for s := range i.subs {
		s.push(e)
	}
}

// fail records the error Run stopped on and tells the subscribers.
func (i *Informer) fail(err error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.failed = err
	close(i.failCh)
	for s := range i.subs {
		s.fail(err)
	}
}

// HasSynced reports whether the first list has landed in the cache.
func (i *Informer) HasSynced() bool {
	select {
	case <-i.synced:
		return true
	default:
		return false
	}
}

// WaitForSync blocks until the first list has landed in the cache and
// returns nil. It returns ctx.Err() if ctx ends first, or the error
// [Informer.Run] stopped on if it failed before the list landed.
func (i *Informer) WaitForSync(ctx context.Context) error {
	for {
		i.mu.Lock()
		failCh := i.failCh
		i.mu.Unlock()
		select {
		case <-i.synced:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-failCh:
		}
		i.mu.Lock()
		err := i.failed
		i.mu.Unlock()
		if err != nil && !i.HasSynced() {
			return err
		}
		// Synced meanwhile, or a new run began: look again.
	}
}

// Revision returns the revision of the store the cache shows every change
// up to: the last list's or the last event's. Zero before the first list.
func (i *Informer) Revision() int64 {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.rev
}

// revisionHook is one function given to ObserveRevisions.
type revisionHook struct{ f func(int64) }

// ObserveRevisions calls f with the informer's revision now and each time it
// advances, once the cache shows every change up to it; the returned func
// stops the calls. f is called with the informer's lock held, in revision
// order: it must be quick and must not call the informer. Its purpose is to
// feed a read-your-writes gate, such as expectations.Gate's Observed method.
func (i *Informer) ObserveRevisions(f func(rev int64)) (stop func()) {
	h := &revisionHook{f: f}
	i.mu.Lock()
	i.hooks[h] = struct{}{}
	f(i.rev)
	i.mu.Unlock()
	return func() {
		i.mu.Lock()
		delete(i.hooks, h)
		i.mu.Unlock()
	}
}
