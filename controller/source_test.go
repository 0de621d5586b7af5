package controller_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/internal/doctest"
	"github.com/tendhq/tend/store"
)

// recorder is an Enqueuer that records what sources queue.
type recorder struct {
	mu     sync.Mutex // guards queued and block
	queued []string
	block  chan struct{} // when set, Enqueue waits for it to close
}

func (r *recorder) Enqueue(key, reason string) { r.add(key + " " + reason) }

func (r *recorder) EnqueueLow(key, reason string) { r.add(key + " " + reason + " (low)") }

func (r *recorder) EnqueueTrigger(key string, t controller.Trigger, priority int) {
	if priority == controller.LowPriority {
		r.add(key + " " + t.String() + " (low)")
		return
	}
	r.add(key + " " + t.String())
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	block := r.block
	r.mu.Unlock()
	if block != nil {
		<-block
	}
	r.mu.Lock()
	r.queued = append(r.queued, s)
	r.mu.Unlock()
}

// take returns and forgets what was queued so far.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.queued
	r.queued = nil
	return q
}

// start runs src with rec until the test's bubble ends it; it returns a
// func that stops it and returns Start's error.
func start(t *testing.T, src controller.Source, rec controller.Enqueuer) func() error {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- src.Start(ctx, rec) }()
	synctest.Wait()
	return func() error {
		cancel()
		return <-done
	}
}

func TestWatchSources(t *testing.T) {
	owner := func(kind, key string, ctrl bool) store.OwnerRef {
		return store.OwnerRef{Kind: kind, Key: key, UID: "uid-" + key, Controller: ctrl}
	}
	tests := []struct {
		name    string
		source  func(s *memory.Store) controller.Source
		listed  []string // queued by the first list
		changes func(t *testing.T, s *memory.Store)
		watched []string // queued by the changes
	}{
		{
			name:   "kind",
			source: func(s *memory.Store) controller.Source { return controller.For(s, "Widget") },
			listed: []string{"a listed", "b listed"},
			changes: func(t *testing.T, s *memory.Store) {
				doctest.Create(t, s, "Widget", "c")
				doctest.Create(t, s, "Gadget", "g") // another kind: ignored
				d, _ := s.Get(t.Context(), "Widget", "a")
				d.Spec = []byte(`{"x":1}`)
				if _, err := s.UpdateSpec(t.Context(), d); err != nil {
					t.Fatal(err)
				}
				if err := s.Delete(t.Context(), "Widget", "b", store.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			},
			watched: []string{"c spec 1", "a spec 2", "b delete"},
		},
		{
			name:   "owns",
			source: func(s *memory.Store) controller.Source { return controller.Owns(s, "Gadget", "Widget") },
			listed: []string{"a owned Gadget g1"},
			changes: func(t *testing.T, s *memory.Store) {
				doctest.Create(t, s, "Gadget", "g2", owner("Widget", "b", true))
				doctest.Create(t, s, "Gadget", "g3", owner("Widget", "a", false))                             // not the controller
				doctest.Create(t, s, "Gadget", "g4", owner("Other", "a", true))                               // another owner kind
				doctest.Create(t, s, "Gadget", "g5", owner("Widget", "x", false), owner("Widget", "c", true)) // the controller among others
				if err := s.Delete(t.Context(), "Gadget", "g1", store.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			},
			watched: []string{"b owned Gadget g2", "c owned Gadget g5", "a owned Gadget g1"},
		},
		{
			name: "watches",
			source: func(s *memory.Store) controller.Source {
				return controller.Watches(s, "Gadget", func(d store.Document) []string {
					return []string{"all", "of-" + d.Meta.Key}
				})
			},
			listed: []string{"all watched Gadget g1", "of-g1 watched Gadget g1"},
			changes: func(t *testing.T, s *memory.Store) {
				doctest.Create(t, s, "Gadget", "g2")
			},
			watched: []string{"all watched Gadget g2", "of-g2 watched Gadget g2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := doctest.NewStore(t, memory.Config{})
				doctest.Create(t, s, "Widget", "a")
				doctest.Create(t, s, "Widget", "b")
				doctest.Create(t, s, "Gadget", "g1", owner("Widget", "a", true))
				rec := &recorder{}
				stop := start(t, tt.source(s), rec)
				if got := rec.take(); !slices.Equal(got, tt.listed) {
					t.Errorf("listed %q, want %q", got, tt.listed)
				}
				tt.changes(t, s)
				synctest.Wait()
				if got := rec.take(); !slices.Equal(got, tt.watched) {
					t.Errorf("watched %q, want %q", got, tt.watched)
				}
				if err := stop(); err != nil {
					t.Errorf("Start: %v", err)
				}
			})
		})
	}
}

// flaky wraps a store: it can fail the next List calls, or make the next
// Watch.Next fail with a chosen error, and records what was asked.
type flaky struct {
	*memory.Store
	mu        sync.Mutex // guards the fields below
	listErrs  []error
	nextErr   error
	lists     int
	watchRevs []int64
}

func (f *flaky) List(ctx context.Context, kind string, opts store.ListOptions) (store.ListResult, error) {
	f.mu.Lock()
	f.lists++
	var err error
	if len(f.listErrs) > 0 {
		err, f.listErrs = f.listErrs[0], f.listErrs[1:]
	}
	f.mu.Unlock()
	if err != nil {
		return store.ListResult{}, err
	}
	return f.Store.List(ctx, kind, opts)
}

func (f *flaky) Watch(ctx context.Context, kind string, from int64) (store.Watch, error) {
	f.mu.Lock()
	f.watchRevs = append(f.watchRevs, from)
	f.mu.Unlock()
	w, err := f.Store.Watch(ctx, kind, from)
	if err != nil {
		return nil, err
	}
	return &flakyWatch{Watch: w, f: f}, nil
}

func (f *flaky) failNext(err error) {
	f.mu.Lock()
	f.nextErr = err
	f.mu.Unlock()
}

type flakyWatch struct {
	store.Watch
	f *flaky
}

func (w *flakyWatch) Next(ctx context.Context) (store.Event, error) {
	ev, err := w.Watch.Next(ctx)
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	if injected := w.f.nextErr; err == nil && injected != nil {
		w.f.nextErr = nil
		return store.Event{}, injected
	}
	return ev, err
}

// TestWatchRecovers checks the list-then-watch loop: a compacted history
// makes it list again, a lagging watch resumes from the last revision
// received, other failures are retried with backoff, and fatal ones stop it.
func TestWatchRecovers(t *testing.T) {
	t.Run("compacted relists", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &flaky{Store: doctest.NewStore(t, memory.Config{})}
			doctest.Create(t, f, "Widget", "a")
			rec := &recorder{}
			stop := start(t, controller.For(f, "Widget"), rec)
			f.failNext(fmt.Errorf("wrapped: %w", store.ErrCompacted))
			doctest.Create(t, f, "Widget", "b") // its event is swallowed by the failure; the relist finds b
			synctest.Wait()
			// The relist reports what changed meanwhile, not what did not.
			want := []string{"a listed", "b spec 1"}
			if got := rec.take(); !slices.Equal(got, want) {
				t.Errorf("queued %q, want %q", got, want)
			}
			if f.lists != 2 {
				t.Errorf("%d lists, want 2", f.lists)
			}
			if err := stop(); err != nil {
				t.Error(err)
			}
		})
	})
	t.Run("lagged resumes", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &flaky{Store: doctest.NewStore(t, memory.Config{})}
			rec := &recorder{}
			stop := start(t, controller.For(f, "Widget"), rec)
			a := doctest.Create(t, f, "Widget", "a")
			synctest.Wait()
			f.failNext(store.ErrWatchLagged) // the event of b is cut off, not lost
			doctest.Create(t, f, "Widget", "b")
			synctest.Wait()
			want := []string{"a spec 1", "b spec 1"}
			if got := rec.take(); !slices.Equal(got, want) {
				t.Errorf("queued %q, want %q", got, want)
			}
			if f.lists != 1 || len(f.watchRevs) != 2 || f.watchRevs[1] != a.Meta.Revision {
				t.Errorf("lists %d, watches from %v; want 1 list and a second watch from %d", f.lists, f.watchRevs, a.Meta.Revision)
			}
			if err := stop(); err != nil {
				t.Error(err)
			}
		})
	})
	t.Run("transient errors back off", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &flaky{Store: doctest.NewStore(t, memory.Config{})}
			doctest.Create(t, f, "Widget", "a")
			errDown := errors.New("store unreachable")
			f.listErrs = []error{errDown, errDown, errDown}
			rec := &recorder{}
			begin := time.Now()
			stop := start(t, controller.For(f, "Widget"), rec)
			if got := rec.take(); len(got) != 0 {
				t.Fatalf("queued %q before the store answered", got)
			}
			time.Sleep(700*time.Millisecond - time.Nanosecond) // 100 + 200 + 400 ms
			synctest.Wait()
			if got := rec.take(); len(got) != 0 {
				t.Fatalf("queued %q before the third backoff ended", got)
			}
			time.Sleep(time.Nanosecond)
			synctest.Wait()
			if got := rec.take(); !slices.Equal(got, []string{"a listed"}) {
				t.Errorf("after %v queued %q", time.Since(begin), got)
			}
			if err := stop(); err != nil {
				t.Error(err)
			}
		})
	})
	// A consumer that blocks no longer holds up the store's watch (the
	// informer queues for it), but with a tiny history the watch may still
	// lag or be compacted: whichever happens, nothing is lost.
	t.Run("a blocked consumer and a tiny history lose nothing", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := &flaky{Store: doctest.NewStore(t, memory.Config{History: 4, WatchBuffer: 2})}
			rec := &recorder{block: make(chan struct{})}
			stop := start(t, controller.For(s, "Widget"), rec)
			doctest.Create(t, s, "Widget", "k0") // the source blocks queueing it
			synctest.Wait()
			for i := 1; i < 20; i++ {
				doctest.Create(t, s, "Widget", fmt.Sprint("k", i))
			}
			rec.mu.Lock()
			close(rec.block)
			rec.block = nil
			rec.mu.Unlock()
			// Let any backoff of the informer's watch run out.
			time.Sleep(time.Minute)
			synctest.Wait()
			seen := map[string]bool{}
			for _, q := range rec.take() {
				seen[strings.Fields(q)[0]] = true
			}
			for i := range 20 {
				if k := fmt.Sprint("k", i); !seen[k] {
					t.Errorf("%s was never queued", k)
				}
			}
			t.Logf("lists %d, watches from %v", s.lists, s.watchRevs)
			if err := stop(); err != nil {
				t.Error(err)
			}
		})
	})
	t.Run("unknown kind is fatal", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := doctest.NewStore(t, memory.Config{})
			c, err := controller.New(controller.Config{
				Name:       "unknown",
				Reconciler: controller.ReconcilerFunc(func(context.Context, string) (controller.Result, error) { return controller.Result{}, nil }),
				Sources:    []controller.Source{controller.For(s, "Nope")},
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Run(t.Context()); !errors.Is(err, store.ErrUnknownKind) {
				t.Errorf("Run: %v, want store.ErrUnknownKind", err)
			}
		})
	})
}

func TestResync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := doctest.NewStore(t, memory.Config{})
		doctest.Create(t, s, "Widget", "a")
		doctest.Create(t, s, "Widget", "b")
		rec := &recorder{}
		stop := start(t, controller.Resync(s, "Widget", 10*time.Second), rec)
		time.Sleep(10*time.Second - time.Nanosecond)
		synctest.Wait()
		if got := rec.take(); len(got) != 0 {
			t.Errorf("queued %q before the first period", got)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		want := []string{"a resync (low)", "b resync (low)"}
		if got := rec.take(); !slices.Equal(got, want) {
			t.Errorf("queued %q, want %q", got, want)
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if got := rec.take(); !slices.Equal(got, want) {
			t.Errorf("second period queued %q, want %q", got, want)
		}
		if err := stop(); err != nil {
			t.Error(err)
		}
		if err := controller.Resync(s, "Widget", 0).Start(t.Context(), rec); !errors.Is(err, controller.ErrInvalidConfig) {
			t.Errorf("Resync with no period: %v, want ErrInvalidConfig", err)
		}
	})
}

// TestResyncYieldsToChanges checks end to end that keys a resync queues wait
// behind keys queued by changes.
func TestResyncYieldsToChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := doctest.NewStore(t, memory.Config{})
		for _, k := range []string{"r1", "r2", "r3"} {
			doctest.Create(t, s, "Widget", k)
		}
		events := make(chan string, 3)
		gate := make(chan struct{})
		var order []string
		c, err := controller.New(controller.Config{
			Name: "order",
			Reconciler: controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
				if key == "first" {
					<-gate
				}
				order = append(order, key)
				return controller.Result{}, nil
			}),
			Sources: []controller.Source{controller.Resync(s, "Widget", time.Second), controller.Channel(events)},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := run(c, ctx)
		events <- "first" // holds the only worker
		synctest.Wait()
		time.Sleep(time.Second) // the resync queues r1..r3 at low priority
		synctest.Wait()
		events <- "e1"
		events <- "e2"
		synctest.Wait()
		close(gate)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		want := []string{"first", "e1", "e2", "r1", "r2", "r3"}
		if !slices.Equal(order[:6], want) {
			t.Errorf("order %v, want %v first", order, want)
		}
	})
}

func TestChannelCloses(t *testing.T) {
	rec := &recorder{}
	if err := controller.Channel(keys("x", "y")).Start(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	if got, want := rec.take(), []string{"x channel", "y channel"}; !slices.Equal(got, want) {
		t.Errorf("queued %q, want %q", got, want)
	}
}
