package driver_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/internal/doctest"
	"github.com/tendhq/tend/manager"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/informer"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// observed wraps a memory store: it counts reads and watches, can hold
// every watch's events back, and counts the writes made from a revision
// older than the last one written to the same key (a writer acting on a
// view that does not show its own last write).
type observed struct {
	*memory.Store

	mu      sync.Mutex // guards the fields below
	gets    int
	watches int
	held    chan struct{}    // while set, watches deliver nothing
	last    map[string]int64 // the revision of the last write, by key
	stale   []string         // writes based on an older revision than the key's last write
}

func newObserved(t *testing.T, kinds ...string) *observed {
	t.Helper()
	mem, err := memory.New(memory.Config{Kinds: kinds})
	if err != nil {
		t.Fatal(err)
	}
	return &observed{Store: mem, last: map[string]int64{}}
}

func (o *observed) Get(ctx context.Context, kind, key string) (store.Document, error) {
	o.mu.Lock()
	o.gets++
	o.mu.Unlock()
	return o.Store.Get(ctx, kind, key)
}

func (o *observed) reads() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.gets
}

func (o *observed) watched() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.watches
}

func (o *observed) write(op string, d store.Document, do func(store.Document) (store.Document, error)) (store.Document, error) {
	o.mu.Lock()
	if last := o.last[d.Meta.Key]; d.Meta.Revision < last {
		o.stale = append(o.stale, fmt.Sprintf("%s of %s from revision %d after writing %d", op, d.Meta.Key, d.Meta.Revision, last))
	}
	o.mu.Unlock()
	written, err := do(d)
	if err == nil {
		o.mu.Lock()
		o.last[d.Meta.Key] = written.Meta.Revision
		o.mu.Unlock()
	}
	return written, err
}

func (o *observed) UpdateStatus(ctx context.Context, d store.Document) (store.Document, error) {
	return o.write("update status", d, func(d store.Document) (store.Document, error) { return o.Store.UpdateStatus(ctx, d) })
}

func (o *observed) UpdateSpec(ctx context.Context, d store.Document) (store.Document, error) {
	return o.write("update spec", d, func(d store.Document) (store.Document, error) { return o.Store.UpdateSpec(ctx, d) })
}

func (o *observed) staleWrites() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.stale
}

func (o *observed) hold() {
	o.mu.Lock()
	o.held = make(chan struct{})
	o.mu.Unlock()
}

func (o *observed) release() {
	o.mu.Lock()
	close(o.held)
	o.held = nil
	o.mu.Unlock()
}

func (o *observed) Watch(ctx context.Context, kind string, from int64) (store.Watch, error) {
	o.mu.Lock()
	o.watches++
	o.mu.Unlock()
	w, err := o.Store.Watch(ctx, kind, from)
	if err != nil {
		return nil, err
	}
	return &heldWatch{Watch: w, o: o}, nil
}

type heldWatch struct {
	store.Watch
	o *observed
}

func (w *heldWatch) Next(ctx context.Context) (store.Event, error) {
	ev, err := w.Watch.Next(ctx)
	w.o.mu.Lock()
	held := w.o.held
	w.o.mu.Unlock()
	if held != nil && err == nil {
		select {
		case <-held:
		case <-ctx.Done():
			return store.Event{}, ctx.Err()
		}
	}
	return ev, err
}

// runFactory runs f until the returned func stops it.
func runFactory(t *testing.T, f *informer.Factory) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	if err := f.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// cachedGateway returns a store under observation, a fixture on it, and a
// driver reading a cache of it, once the cache shows a gateway gw created
// with intent Running. The cache lists and watches through cached, a
// wrapper of the store (the store itself when nil), and the driver is
// built by the fixture with plant(cache) around it (none when nil). It
// runs in t's synctest bubble; the cache stops with t.
func cachedGateway(t *testing.T, cached func(o *observed) informer.ListWatcher, plant func(cache *informer.Factory) fault) (*observed, *gwFixture, *driver.Driver[gwSpec, gwStatus]) {
	t.Helper()
	o := newObserved(t, "ApiGateway")
	fx := newGWFixtureOn(t, o.Store, o)
	var lw informer.ListWatcher = o
	if cached != nil {
		lw = cached(o)
	}
	f, err := informer.NewFactory(lw, informer.FactoryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := fx.config()
	cfg.Cache = f
	var plantF fault
	if plant != nil {
		plantF = plant(f)
	}
	d := fx.driverWith(t, cfg, plantF)
	fx.create(t, "gw", gwRunning)
	t.Cleanup(runFactory(t, f))
	synctest.Wait()
	return o, fx, d
}

// A driver that reads from a cache reconciles again before the cache shows
// its last write: the read-your-writes gate makes the read wait, so the
// driver never writes from a view older than its own writes. A cache whose
// watch loses the driver's write, yet shows a later write to another
// document, opens the gate on a view without the driver's write, as if
// there were no gate: the driver writes from its stale view.
func TestDriverCacheReadsYourWrites(t *testing.T) {
	for _, planted := range []bool{false, true} {
		t.Run(fmt.Sprintf("gate fooled=%v", planted), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var losing atomic.Bool // the cache's watch loses gw's events
				var cached func(o *observed) informer.ListWatcher
				if planted {
					cached = func(o *observed) informer.ListWatcher {
						return &faultyStore{Backend: o, unseen: func(key string, _ bool) bool { return key == "gw" && losing.Load() }}
					}
				}
				o, fx, d := cachedGateway(t, cached, nil)

				if planted {
					losing.Store(true)
				} else {
					o.hold() // the cache sees none of the driver's writes for now
				}
				if _, err := d.Reconcile(t.Context(), "gw"); err != nil {
					t.Fatal(err)
				}
				if got := fx.get(t, "gw").Status.Phase; got != phStarted {
					t.Fatalf("phase %v after the first reconcile, want Started", got)
				}
				fx.create(t, "other", gwStopped) // a later revision, for the cache to show
				synctest.Wait()
				done := make(chan error, 1)
				go func() {
					_, err := d.Reconcile(t.Context(), "gw")
					done <- err
				}()
				synctest.Wait()
				if !planted {
					o.release()
				}
				synctest.Wait()
				err := <-done
				stale := o.staleWrites()
				if planted {
					if len(stale) == 0 {
						t.Fatal("with the gate fooled the driver wrote from no stale view: the test cannot see the gate")
					}
					t.Logf("with the gate fooled: %q (reconcile error: %v)", stale, err)
					return
				}
				if err != nil {
					t.Errorf("second reconcile: %v", err)
				}
				if len(stale) > 0 {
					t.Errorf("the driver wrote from a view older than its own writes: %q", stale)
				}

				// Steady state: a reconcile of a settled document reads
				// nothing from the store.
				before := o.reads()
				for range 3 {
					if _, err := d.Reconcile(t.Context(), "gw"); err != nil {
						t.Fatal(err)
					}
				}
				if n := o.reads() - before; n != 0 {
					t.Errorf("%d store reads for 3 reconciles of a settled document, want 0", n)
				}
			})
		})
	}
}

// cacheReads is a fault that, once on is set, answers the driver's reads
// of a document from cache, the cache the driver reads too: the check of
// the stored revision before a step always agrees with the cache.
func cacheReads(on *atomic.Bool) func(cache *informer.Factory) fault {
	return func(cache *informer.Factory) fault {
		return func(b store.Backend, _ *store.Collection[gwSpec, gwStatus]) store.Backend {
			return &cachedReads{Backend: b, cache: cache, on: on}
		}
	}
}

// cachedReads is a store whose Get answers from a cache while on is set.
type cachedReads struct {
	store.Backend
	cache *informer.Factory
	on    *atomic.Bool
}

func (b *cachedReads) Get(ctx context.Context, kind, key string) (store.Document, error) {
	if !b.on.Load() {
		return b.Backend.Get(ctx, kind, key)
	}
	inf, err := b.cache.For(kind)
	if err != nil {
		return store.Document{}, err
	}
	doc, ok := inf.Get(key)
	if !ok {
		return store.Document{}, &store.Error{Op: "get", Kind: kind, Key: key, Err: store.ErrNotFound}
	}
	return doc.Clone(), nil
}

// A step runs only on a revision the store still holds: a driver whose
// cache has not seen another replica's writes (the replica that led before
// it) reads the store before running a step, and decides on what is stored
// instead of running again the steps the other replica did. A store that
// answers that read from the cache makes it repeat them.
func TestDriverConfirmsTheCacheBeforeAStep(t *testing.T) {
	for _, planted := range []bool{false, true} {
		t.Run(fmt.Sprintf("store read from the cache=%v", planted), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var fromCache atomic.Bool // set once the cache falls behind
				var plant func(*informer.Factory) fault
				if planted {
					plant = cacheReads(&fromCache)
				}
				o, fx, cached := cachedGateway(t, nil, plant)

				// The cached driver does the first step and fails the
				// second once: its checkpoint is stored, and its cache shows it.
				failed := false
				fx.world.hook = func(r stepRun) (sm.Outcome, error) {
					if r.step == "create_database" && !failed {
						failed = true
						return sm.Failed, errors.New("database server busy")
					}
					return 0, nil
				}
				_, _ = cached.Reconcile(t.Context(), "gw") // fails, to be retried
				if op := fx.get(t, "gw").Status.Operation; op == nil || op.Attempts != 1 {
					t.Fatalf("after the failed step: operation %+v, want one failed attempt", op)
				}
				synctest.Wait()

				o.hold() // the cache sees nothing of what the other replica writes
				fromCache.Store(planted)
				time.Sleep(time.Second) // past the failed step's backoff
				other := fx.driver(t, fx.config())
				if _, err := other.Reconcile(t.Context(), "gw"); err != nil {
					t.Fatal(err)
				}
				done := slices.Clone(fx.world.stepsRun("gw"))
				_, err := cached.Reconcile(t.Context(), "gw")
				o.release()
				synctest.Wait()
				var repeated []string
				for _, s := range fx.world.stepsRun("gw")[len(done):] {
					if slices.Contains(done, s) {
						repeated = append(repeated, s)
					}
				}
				if planted {
					if len(repeated) == 0 {
						t.Fatalf("with the store read from the cache no step ran again: the test cannot see the check (steps %q, done %q, err %v)", fx.world.stepsRun("gw"), done, err)
					}
					t.Logf("with the store read from the cache, ran again: %q (reconcile error: %v)", repeated, err)
					return
				}
				if err != nil {
					t.Errorf("reconcile on a stale cache: %v", err)
				}
				if len(repeated) > 0 {
					t.Errorf("steps the other replica did ran again on a stale cache: %q (done: %q)", repeated, done)
				}
			})
		})
	}
}

// Five controllers following one kind under a Manager open one watch of
// the store when they are given the factory the Manager runs; given the
// store, each opens its own.
func TestFiveControllersOneWatch(t *testing.T) {
	for _, how := range []string{"given factory", "given the store"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := newObserved(t, "Widget")
				doctest.Create(t, o, "Widget", "a")
				var lw informer.ListWatcher = o
				mc := manager.Config{}
				if how == "given factory" {
					f, err := informer.NewFactory(o, informer.FactoryConfig{})
					if err != nil {
						t.Fatal(err)
					}
					lw, mc.Informers = f, f
				}
				var mu sync.Mutex
				reconciled := map[string]int{}
				for i := range 5 {
					name := fmt.Sprint("c", i)
					c, err := controller.New(controller.Config{
						Name: name,
						Reconciler: controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
							mu.Lock()
							reconciled[name]++
							mu.Unlock()
							return controller.Result{}, nil
						}),
						Sources: []controller.Source{controller.For(lw, "Widget")},
					})
					if err != nil {
						t.Fatal(err)
					}
					mc.Controllers = append(mc.Controllers, c)
				}
				m, err := manager.New(mc)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() { done <- m.Run(ctx) }()
				synctest.Wait()
				doctest.Create(t, o, "Widget", "b")
				synctest.Wait()
				want := 1
				if how == "given the store" {
					want = 5
				}
				if n := o.watched(); n != want {
					t.Errorf("%d watches of the store, want %d", n, want)
				}
				for _, c := range mc.Controllers {
					if got := reconciled[c.Name()]; got != 2 {
						t.Errorf("%s reconciled %d times, want 2 (a listed, b added)", c.Name(), got)
					}
				}
				cancel()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// A driver given a cache reads its documents from it; without one, every
// reconcile reads the store.
func TestDriverReadsItsCache(t *testing.T) {
	for _, uncached := range []bool{false, true} {
		t.Run(fmt.Sprintf("uncached=%v", uncached), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := newObserved(t, "ApiGateway")
				fx := newGWFixtureOn(t, o.Store, o)
				cfg := fx.config()
				if !uncached {
					f, err := informer.NewFactory(o, informer.FactoryConfig{})
					if err != nil {
						t.Fatal(err)
					}
					cfg.Cache = f
					t.Cleanup(runFactory(t, f))
				}
				d := fx.driver(t, cfg)
				c, err := controller.New(controller.Config{
					Name: "gateway", Reconciler: d, Sources: []controller.Source{d.Source()},
				})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() { done <- c.Run(ctx) }()
				synctest.Wait()
				fx.create(t, "gw", gwRunning)
				// Polls read the store under the counter.
				direct := newGWFixtureOn(t, o.Store, o.Store)
				for range 100 {
					if direct.get(t, "gw").Status.Phase == phStarted {
						break
					}
					time.Sleep(time.Second)
				}
				if got := direct.get(t, "gw").Status.Phase; got != phStarted {
					t.Fatalf("phase %v, want Started", got)
				}
				reads := o.reads()
				cancel()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				if stale := o.staleWrites(); len(stale) > 0 {
					t.Errorf("the driver wrote from a view older than its own writes: %q", stale)
				}
				t.Logf("%d store reads", reads)
				switch {
				case !uncached && reads > 1:
					// The one read: before the reconcile's first step, the
					// driver checks that the store holds the revision it
					// read from the cache.
					t.Errorf("%d store reads by the driver, want one: it reads the cache", reads)
				case uncached && reads == 0:
					t.Error("no store read by an uncached driver")
				}
			})
		})
	}
}

// A driver given a cache that does not run (reconciled outside any run, as
// a test does) reads the store instead of waiting for the cache to list.
func TestDriverReadsTheStoreUntilItsCacheListed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := newObserved(t, "ApiGateway")
		fx := newGWFixtureOn(t, o.Store, o)
		f, err := informer.NewFactory(o, informer.FactoryConfig{})
		if err != nil {
			t.Fatal(err)
		}
		cfg := fx.config()
		cfg.Cache = f // never run
		d := fx.driver(t, cfg)
		fx.create(t, "gw", gwRunning)
		done := make(chan error, 1)
		go func() {
			_, err := d.Reconcile(t.Context(), "gw")
			done <- err
		}()
		synctest.Wait()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatal("Reconcile waits for a cache that does not run")
		}
		if got := fx.get(t, "gw").Status.Phase; got != phStarted {
			t.Errorf("phase %v after a reconcile on the store, want Started", got)
		}
	})
}
