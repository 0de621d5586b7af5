package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tendhq/tend/backends/memory"
	tendctrl "github.com/tendhq/tend/controller"
	tenddriver "github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/informer"
	tendmanager "github.com/tendhq/tend/manager"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// countingStore counts the reads and watches a memory store serves.
type countingStore struct {
	*memory.Store
	mu      sync.Mutex // guards reads and watches
	reads   int
	watches int
}

func (s *countingStore) Get(ctx context.Context, kind, key string) (store.Document, error) {
	s.mu.Lock()
	s.reads++
	s.mu.Unlock()
	return s.Store.Get(ctx, kind, key)
}

func (s *countingStore) List(ctx context.Context, kind string, opts store.ListOptions) (store.ListResult, error) {
	s.mu.Lock()
	s.reads++
	s.mu.Unlock()
	return s.Store.List(ctx, kind, opts)
}

func (s *countingStore) Watch(ctx context.Context, kind string, from int64) (store.Watch, error) {
	s.mu.Lock()
	s.watches++
	s.mu.Unlock()
	return s.Store.Watch(ctx, kind, from)
}

func (s *countingStore) counts() (reads, watches int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads, s.watches
}

func newCountingStore(tb testing.TB) *countingStore {
	mem, err := memory.New(memory.Config{Kinds: []string{"Lamp"}})
	if err != nil {
		tb.Fatal(err)
	}
	return &countingStore{Store: mem}
}

type lampSpec struct {
	State string `json:"state"`
}

func (s lampSpec) Intent() string { return s.State }

type lampStatus struct {
	statemachine.Status[string, string]
}

// lampDriver returns a driver of a two-phase lamp machine over s, reading
// through f when f is not nil.
func lampDriver(tb testing.TB, s store.Backend, f *informer.Factory) (*tenddriver.Driver[lampSpec, lampStatus], *store.Collection[lampSpec, lampStatus]) {
	m, err := statemachine.New(statemachine.Definition[string, string]{
		Name:    "Lamp",
		States:  []string{"On"},
		Initial: "Dark",
		Phases: []statemachine.PhaseSpec[string]{
			{Phase: "Dark"},
			{Phase: "Brightening", Type: statemachine.Transitional, Unbounded: true, Steps: []string{"switch_on"},
				Completion: []statemachine.Require{statemachine.Is("lit")}, Then: "Lit"},
			{Phase: "Lit"},
		},
		Settled: []statemachine.Settle[string, string]{{State: "On", Phase: "Lit"}},
		Rules:   []statemachine.Rule[string, string]{{State: "On", Phase: "Dark", Begin: "Brightening"}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	lamps, err := store.NewCollection[lampSpec, lampStatus](s, "Lamp", store.CollectionConfig{})
	if err != nil {
		tb.Fatal(err)
	}
	d, err := tenddriver.New(lamps, m, tenddriver.Config[lampSpec, lampStatus]{
		Cache: f,
		Steps: map[string]tenddriver.StepFunc[lampSpec, lampStatus]{
			"switch_on": func(context.Context, *store.Object[lampSpec, lampStatus], string) (statemachine.Outcome, error) {
				return statemachine.Done, nil
			},
		},
		Observers: map[string]tenddriver.ObserverFunc[lampSpec, lampStatus]{
			"lit": func(context.Context, *store.Object[lampSpec, lampStatus]) (bool, string, error) { return true, "", nil },
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return d, lamps
}

// BenchmarkSteadyReconcile reconciles settled documents, as a resync does,
// with a driver that reads the store and with one that reads a shared
// informer's cache. It reports the store reads per reconcile: one without
// the cache, zero with it.
func BenchmarkSteadyReconcile(b *testing.B) {
	const docs = 100
	for _, cached := range []bool{false, true} {
		name := "store"
		if cached {
			name = "cache"
		}
		b.Run(name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(b.Context())
			defer cancel()
			s := newCountingStore(b)
			var f *informer.Factory
			if cached {
				var err error
				if f, err = informer.NewFactory(s, informer.FactoryConfig{}); err != nil {
					b.Fatal(err)
				}
				var wg sync.WaitGroup
				defer wg.Wait()
				defer cancel()
				wg.Go(func() { _ = f.Run(ctx) })
			}
			d, lamps := lampDriver(b, s, f)
			keys := make([]string, docs)
			for i := range keys {
				keys[i] = "lamp-" + strconv.Itoa(i)
				if _, err := lamps.Create(ctx, &store.Object[lampSpec, lampStatus]{Meta: store.Meta{Key: keys[i]}, Spec: lampSpec{State: "On"}}); err != nil {
					b.Fatal(err)
				}
			}
			for _, k := range keys { // settle every lamp
				if _, err := d.Reconcile(ctx, k); err != nil {
					b.Fatal(err)
				}
			}
			if f != nil {
				if err := f.WaitForSync(ctx); err != nil {
					b.Fatal(err)
				}
			}
			before, _ := s.counts()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, err := d.Reconcile(ctx, keys[i%docs]); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			after, _ := s.counts()
			b.ReportMetric(float64(after-before)/float64(b.N), "store-reads/reconcile")
		})
	}
}

// BenchmarkWatchesPerProcess starts five controllers following one kind
// under one Manager, until each has synced, and stops them: uncached, each
// source watching on its own, and sharing the Manager's informer factory
// (the default). It reports
// the backend watches the process opened: five without the factory, one
// with it.
func BenchmarkWatchesPerProcess(b *testing.B) {
	for _, shared := range []bool{false, true} {
		name := "own-watches"
		if shared {
			name = "factory"
		}
		b.Run(name, func(b *testing.B) {
			s := newCountingStore(b)
			if _, err := s.Create(b.Context(), store.Document{Meta: store.Meta{Kind: "Lamp", Key: "a"}}); err != nil {
				b.Fatal(err)
			}
			watches := 0
			for range b.N {
				_, w0 := s.counts()
				runFive(b, s, shared)
				_, w1 := s.counts()
				watches += w1 - w0
			}
			b.ReportMetric(float64(watches)/float64(b.N), "backend-watches/process")
		})
	}
}

// runFive runs five controllers of the Lamp kind under a Manager until all
// have synced, then stops them.
func runFive(b *testing.B, s *countingStore, shared bool) {
	mc := tendmanager.Config{}
	var lw informer.ListWatcher = s
	if shared {
		f, err := informer.NewFactory(s, informer.FactoryConfig{})
		if err != nil {
			b.Fatal(err)
		}
		lw, mc.Informers = f, f
	}
	for i := range 5 {
		c, err := tendctrl.New(tendctrl.Config{
			Name: fmt.Sprint("c", i),
			Reconciler: tendctrl.ReconcilerFunc(func(context.Context, string) (tendctrl.Result, error) {
				return tendctrl.Result{}, nil
			}),
			Sources: []tendctrl.Source{tendctrl.For(lw, "Lamp")},
		})
		if err != nil {
			b.Fatal(err)
		}
		mc.Controllers = append(mc.Controllers, c)
	}
	m, err := tendmanager.New(mc)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	for {
		synced := true
		for _, c := range mc.Controllers {
			synced = synced && c.HasSynced()
		}
		if synced {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
