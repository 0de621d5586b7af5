package informer

import (
	"context"
	"errors"
	"sync"

	"github.com/tendhq/tend/store"
)

// FactoryConfig configures a [Factory]. The zero value is ready to use.
type FactoryConfig struct {
	// Informer configures each informer the factory makes.
	Informer Config
}

// Factory hands out one [Informer] per kind of one store, however many
// consumers ask for it, so that a process opens one watch per kind. Create
// one per store and process, give it to every consumer, and run it.
//
// A Factory is also a ListWatcher: [Factory.List] is served from the
// informer's cache, and [Factory.Watch] opens a watch of the store, so it
// can stand in for the store wherever a ListWatcher is taken.
type Factory struct {
	lw  ListWatcher
	cfg Config

	mu        sync.Mutex // guards the fields below
	informers map[string]*Informer
	started   map[string]bool // kinds a running Run has started
	added     chan struct{}   // closed, and replaced, when an informer is added
	running   bool
}

// NewFactory returns a factory of informers over lw. It starts nothing: see
// [Factory.Run].
func NewFactory(lw ListWatcher, cfg FactoryConfig) (*Factory, error) {
	if lw == nil {
		return nil, &store.Error{Op: "informer factory", Err: store.ErrInvalid}
	}
	return &Factory{lw: lw, cfg: cfg.Informer, informers: map[string]*Informer{}, added: make(chan struct{})}, nil
}

// For returns the informer of kind, making it on the first call: every call
// for a kind returns the same informer. A running [Factory.Run] starts a new
// informer at once; otherwise the next Run does. A malformed kind is an
// error matching store.ErrInvalid.
func (f *Factory) For(kind string) (*Informer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i := f.informers[kind]; i != nil {
		return i, nil
	}
	i, err := New(f.lw, kind, f.cfg)
	if err != nil {
		return nil, err
	}
	f.informers[kind] = i
	close(f.added)
	f.added = make(chan struct{})
	return i, nil
}

// ListWatcher returns the store the factory's informers list and watch: the
// one given to [NewFactory].
func (f *Factory) ListWatcher() ListWatcher { return f.lw }

// Kinds returns the kinds of the informers made so far, in no order.
func (f *Factory) Kinds() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	kinds := make([]string, 0, len(f.informers))
	for k := range f.informers {
		kinds = append(kinds, k)
	}
	return kinds
}

// Run runs every informer made so far, and each one made while it runs,
// until ctx ends; it returns once they all stopped. It returns nil, or the
// errors of the informers that failed (each also reported to that
// informer's waiters and subscribers; the others run on). A concurrent call
// fails with [ErrRunning].
func (f *Factory) Run(ctx context.Context) error {
	f.mu.Lock()
	if f.running {
		f.mu.Unlock()
		return ErrRunning
	}
	f.running, f.started = true, map[string]bool{}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.running = false
		f.mu.Unlock()
	}()

	var wg sync.WaitGroup
	var errMu sync.Mutex // guards errs
	var errs []error
	for {
		f.mu.Lock()
		added := f.added
		for kind, i := range f.informers {
			if f.started[kind] {
				continue
			}
			f.started[kind] = true
			wg.Go(func() {
				if err := i.Run(ctx); err != nil {
					errMu.Lock()
					errs = append(errs, err)
					errMu.Unlock()
				}
			})
		}
		f.mu.Unlock()
		select {
		case <-ctx.Done():
			wg.Wait()
			return errors.Join(errs...)
		case <-added:
		}
	}
}

// WaitForSync waits until every informer made so far has synced, as
// [Informer.WaitForSync] does.
func (f *Factory) WaitForSync(ctx context.Context) error {
	f.mu.Lock()
	infs := make([]*Informer, 0, len(f.informers))
	for _, i := range f.informers {
		infs = append(infs, i)
	}
	f.mu.Unlock()
	for _, i := range infs {
		if err := i.WaitForSync(ctx); err != nil {
			return err
		}
	}
	return nil
}

// List lists kind from its informer's cache, once the informer has synced
// (waiting for it as [Informer.WaitForSync] does; the factory must run), and
// returns the revision the cache shows every change up to. The documents
// are shared: see [Informer.Get].
func (f *Factory) List(ctx context.Context, kind string, opts store.ListOptions) (store.ListResult, error) {
	i, err := f.For(kind)
	if err != nil {
		return store.ListResult{}, err
	}
	if err := i.WaitForSync(ctx); err != nil {
		return store.ListResult{}, err
	}
	docs, rev, err := i.List(opts)
	return store.ListResult{Items: docs, Revision: rev}, err
}

// Watch opens a watch of kind on the store itself: see
// store.Watcher.Watch. Consumers that share the factory's watch subscribe to
// an informer instead ([Informer.Subscribe]).
func (f *Factory) Watch(ctx context.Context, kind string, fromRevision int64) (store.Watch, error) {
	return f.lw.Watch(ctx, kind, fromRevision)
}
