package cascade_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tendhq/tend/cascade"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/store"
)

func TestBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		w.create("Gateway/g")
		w.create("Gateway/g2")
		w.create("Route/r1")
		w.own("Route/r1", "Gateway/g")
		w.create("Secret/s1")
		w.own("Secret/s1", "Route/r1")
		w.create("Route/r2")
		w.own("Route/r2", "Gateway/g", "Gateway/g2")
		w.create("Route/free")
		stop := start(t, cascade.Config{Backend: w.s})
		defer stop()
		settle()

		w.delete("Gateway/g", cascade.Background)
		if w.exists("Gateway/g") {
			t.Fatal("a background delete kept the owner")
		}
		settle()
		if got, want := w.names(), []string{"Gateway/g2", "Route/free", "Route/r2"}; !slices.Equal(got, want) {
			t.Errorf("documents = %v, want %v", got, want)
		}
		if got := w.owners("Route/r2"); !slices.Equal(got, []string{"Gateway/g2"}) {
			t.Errorf("Route/r2 owners = %v, want only its remaining owner", got)
		}
	})
}

func TestForeground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		w.create("Gateway/g")
		w.create("Route/r1")
		w.own("Route/r1", "!Gateway/g")
		w.create("Secret/s1")
		w.own("Secret/s1", "!Route/r1")
		w.create("Route/r2")
		w.own("Route/r2", "Gateway/g") // does not block
		w.create("Secret/held", "example.com/hold")
		w.own("Secret/held", "!Gateway/g")
		stop := start(t, cascade.Config{Backend: w.s})
		defer stop()
		settle()
		from := w.revision()

		w.delete("Gateway/g", cascade.Foreground)
		settle()
		// Secret/held blocks the gateway until its own finalizer goes.
		if got, want := w.names(), []string{"Gateway/g", "Secret/held"}; !slices.Equal(got, want) {
			t.Fatalf("documents = %v, want %v", got, want)
		}
		g := w.get("Gateway/g")
		if !g.Meta.Terminating() || !slices.Equal(g.Meta.Finalizers, []string{cascade.ForegroundFinalizer}) {
			t.Errorf("owner meta = %+v, want Terminating with the foreground finalizer", g.Meta)
		}
		held := w.get("Secret/held")
		if !held.Meta.Terminating() {
			t.Error("the blocking dependent was not deleted")
		}
		held.Meta.Finalizers = nil
		if _, err := w.s.UpdateSpec(context.Background(), held); err != nil {
			t.Fatal(err)
		}
		settle()
		if got := w.names(); len(got) != 0 {
			t.Fatalf("documents = %v, want none", got)
		}
		gone := w.removals(from)
		for _, before := range [][2]string{
			{"Secret/s1", "Route/r1"}, {"Route/r1", "Gateway/g"}, {"Secret/held", "Gateway/g"},
		} {
			if gone[before[0]] == 0 || gone[before[0]] > gone[before[1]] {
				t.Errorf("%s removed at %d, %s at %d: want the dependent first", before[0], gone[before[0]], before[1], gone[before[1]])
			}
		}
	})
}

func TestOrphan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		w.create("Gateway/g")
		w.create("Gateway/g2")
		w.create("Route/r1")
		w.own("Route/r1", "!Gateway/g")
		w.create("Route/r2")
		w.own("Route/r2", "Gateway/g", "Gateway/g2")
		w.create("Secret/s1")
		w.own("Secret/s1", "Route/r1")
		stop := start(t, cascade.Config{Backend: w.s})
		defer stop()
		settle()

		w.delete("Gateway/g", cascade.Orphan)
		if g := w.get("Gateway/g"); !g.Meta.Terminating() || !g.Meta.HasFinalizer(cascade.OrphanFinalizer) {
			t.Fatalf("owner meta = %+v, want Terminating with the orphan finalizer", g.Meta)
		}
		settle()
		if got, want := w.names(), []string{"Gateway/g2", "Route/r1", "Route/r2", "Secret/s1"}; !slices.Equal(got, want) {
			t.Errorf("documents = %v, want %v", got, want)
		}
		for name, want := range map[string][]string{
			"Route/r1":  nil,
			"Route/r2":  {"Gateway/g2"},
			"Secret/s1": {"Route/r1"},
		} {
			if got := w.owners(name); !slices.Equal(got, want) {
				t.Errorf("%s owners = %v, want %v", name, got, want)
			}
		}
	})
}

// Dependents of another kind than their owner are found and handled under
// each policy.
func TestDependentsOfAnotherKind(t *testing.T) {
	for _, tt := range []struct {
		policy cascade.Policy
		want   []string
	}{
		{cascade.Background, nil},
		{cascade.Foreground, nil},
		{cascade.Orphan, []string{"Secret/a", "Secret/b"}},
	} {
		t.Run(tt.policy.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t)
				w.create("Gateway/g")
				w.create("Secret/a")
				w.own("Secret/a", "!Gateway/g")
				w.create("Secret/b")
				w.own("Secret/b", "Gateway/g")
				stop := start(t, cascade.Config{Backend: w.s})
				defer stop()
				w.delete("Gateway/g", tt.policy)
				settle()
				if got := w.names(); !slices.Equal(got, tt.want) {
					t.Errorf("documents = %v, want %v", got, tt.want)
				}
			})
		})
	}
}

func TestCycles(t *testing.T) {
	type edge struct{ dependent, owner string } // owner prefixed "!" blocks
	tests := []struct {
		name    string
		docs    []string
		edges   []edge
		deletes map[string]cascade.Policy
		want    []string
	}{
		{name: "two, background",
			docs:    []string{"Gateway/a", "Route/b"},
			edges:   []edge{{"Route/b", "Gateway/a"}, {"Gateway/a", "Route/b"}},
			deletes: map[string]cascade.Policy{"Gateway/a": cascade.Background}},
		{name: "two, foreground, blocking both ways",
			docs:    []string{"Gateway/a", "Route/b"},
			edges:   []edge{{"Route/b", "!Gateway/a"}, {"Gateway/a", "!Route/b"}},
			deletes: map[string]cascade.Policy{"Gateway/a": cascade.Foreground}},
		{name: "three, foreground",
			docs:    []string{"Gateway/a", "Route/b", "Secret/c"},
			edges:   []edge{{"Route/b", "!Gateway/a"}, {"Secret/c", "!Route/b"}, {"Gateway/a", "!Secret/c"}},
			deletes: map[string]cascade.Policy{"Gateway/a": cascade.Foreground}},
		{name: "both foreground-deleted at once",
			docs:    []string{"Gateway/a", "Route/b"},
			edges:   []edge{{"Route/b", "!Gateway/a"}, {"Gateway/a", "!Route/b"}},
			deletes: map[string]cascade.Policy{"Gateway/a": cascade.Foreground, "Route/b": cascade.Foreground}},
		{name: "self-owned, foreground",
			docs:    []string{"Gateway/a"},
			edges:   []edge{{"Gateway/a", "!Gateway/a"}},
			deletes: map[string]cascade.Policy{"Gateway/a": cascade.Foreground}},
		{name: "self-owned, orphan",
			docs:    []string{"Gateway/a"},
			edges:   []edge{{"Gateway/a", "!Gateway/a"}},
			deletes: map[string]cascade.Policy{"Gateway/a": cascade.Orphan}},
		{name: "cycle under a foreground owner",
			docs:    []string{"Gateway/a", "Route/b", "Route/c"},
			edges:   []edge{{"Route/b", "!Gateway/a"}, {"Route/b", "!Route/c"}, {"Route/c", "!Route/b"}},
			deletes: map[string]cascade.Policy{"Gateway/a": cascade.Foreground},
			want:    []string{"Route/b", "Route/c"}},
		{name: "live cycle stays",
			docs:  []string{"Gateway/a", "Route/b"},
			edges: []edge{{"Route/b", "Gateway/a"}, {"Gateway/a", "Route/b"}},
			want:  []string{"Gateway/a", "Route/b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t)
				for _, d := range tt.docs {
					w.create(d)
				}
				owners := map[string][]string{}
				for _, e := range tt.edges {
					owners[e.dependent] = append(owners[e.dependent], e.owner)
				}
				for d, os := range owners {
					w.own(d, os...)
				}
				stop := start(t, cascade.Config{Backend: w.s})
				defer stop()
				settle()
				for d, p := range tt.deletes {
					w.delete(d, p)
				}
				settle()
				if got := w.names(); !slices.Equal(got, tt.want) {
					t.Errorf("documents = %v, want %v", got, tt.want)
				}
			})
		})
	}
}

func TestMissingOwners(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		w.create("Gateway/g")
		ghost := store.OwnerRef{Kind: "Gateway", Key: "ghost", UID: "never-stored"}

		w.create("Route/orphaned")
		w.setOwners("Route/orphaned", []store.OwnerRef{ghost})
		w.create("Secret/grandchild")
		w.own("Secret/grandchild", "Route/orphaned")

		// An owner replaced under the same key is another owner.
		w.create("Gateway/replaced")
		w.create("Route/stale")
		w.own("Route/stale", "Gateway/replaced")
		if err := w.s.Delete(context.Background(), "Gateway", "replaced", store.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		w.create("Gateway/replaced")

		w.create("Route/half")
		w.own("Route/half", "Gateway/g")
		w.setOwners("Route/half", append(w.get("Route/half").Meta.Owners, ghost))

		// Owners that cannot be checked are kept.
		w.create("Route/foreign")
		w.setOwners("Route/foreign", []store.OwnerRef{{Kind: "Volume", Key: "v", UID: "u"}})

		stop := start(t, cascade.Config{Backend: w.s})
		defer stop()
		settle()
		if got, want := w.names(), []string{"Gateway/g", "Gateway/replaced", "Route/foreign", "Route/half"}; !slices.Equal(got, want) {
			t.Errorf("documents = %v, want %v", got, want)
		}
		if got := w.owners("Route/half"); !slices.Equal(got, []string{"Gateway/g"}) {
			t.Errorf("Route/half owners = %v, want the missing one removed", got)
		}
		if got := w.owners("Route/foreign"); !slices.Equal(got, []string{"Volume/v"}) {
			t.Errorf("Route/foreign owners = %v, want kept", got)
		}

		// A dependent created later under a missing owner goes too, and so
		// does one whose owner is replaced while the collector runs.
		w.create("Route/late")
		w.setOwners("Route/late", []store.OwnerRef{ghost})
		w.create("Gateway/swap")
		w.create("Route/swapped")
		w.own("Route/swapped", "Gateway/swap")
		settle()
		if err := w.s.Delete(context.Background(), "Gateway", "swap", store.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		w.create("Gateway/swap")
		settle()
		if w.exists("Route/late") || w.exists("Route/swapped") {
			t.Errorf("documents = %v: a dependent of a missing or replaced owner was kept", w.names())
		}
	})
}

// Owners of a kind the collector does not watch are still checked in the
// store, so an existing one keeps its dependents and a missing one does not.
func TestOwnerOfUnwatchedKind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		w.create("Secret/s")
		w.create("Route/kept")
		w.own("Route/kept", "Secret/s")
		w.create("Route/dropped")
		w.setOwners("Route/dropped", []store.OwnerRef{{Kind: "Secret", Key: "missing", UID: "x"}})
		stop := start(t, cascade.Config{Backend: w.s, Kinds: []string{"Route"}})
		defer stop()
		settle()
		if got, want := w.names(), []string{"Route/kept", "Secret/s"}; !slices.Equal(got, want) {
			t.Errorf("documents = %v, want %v", got, want)
		}
	})
}

func TestCrashResume(t *testing.T) {
	for _, tt := range []struct {
		name        string
		policy      cascade.Policy
		after       int64
		wantBetween []string
	}{
		// Route/r and Secret/s are Terminating, Secret/leaf not yet deleted.
		{"foreground", cascade.Foreground, 2, []string{"Gateway/g", "Route/r", "Secret/leaf", "Secret/s"}},
		// Route/r is gone, nothing else yet.
		{"background", cascade.Background, 1, []string{"Secret/leaf", "Secret/s"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t)
				w.create("Gateway/g")
				w.create("Route/r")
				w.own("Route/r", "!Gateway/g")
				w.create("Secret/s")
				w.own("Secret/s", "!Route/r")
				w.create("Secret/leaf")
				w.own("Secret/leaf", "!Secret/s")
				w.create("Gateway/other")

				crash := newHost(w.s, nil)
				crash.crashAfter = tt.after
				stopCrashed := start(t, cascade.Config{Backend: crash, Workers: 1})
				w.delete("Gateway/g", tt.policy)
				settle()
				stopCrashed()
				if got, want := w.names(), sorted(append(slices.Clone(tt.wantBetween), "Gateway/other")); !slices.Equal(got, want) {
					t.Fatalf("after the crash: documents = %v, want %v and Gateway/other", got, tt.wantBetween)
				}

				stop := start(t, cascade.Config{Backend: w.s})
				settle()
				stop()
				if got := w.names(); !slices.Equal(got, []string{"Gateway/other"}) {
					t.Errorf("after the restart: documents = %v, want [Gateway/other]", got)
				}
			})
		})
	}
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}

// Several collectors on one store do the work once between them; conflicts
// are retried and nothing is left half done.
func TestReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		w.create("Gateway/g")
		var want []string
		for i := range 20 {
			r := "Route/r" + string(rune('a'+i))
			w.create(r)
			w.own(r, "!Gateway/g")
			s := "Secret/s" + string(rune('a'+i))
			w.create(s)
			w.own(s, "!"+r)
			o := "Secret/o" + string(rune('a'+i))
			w.create(o)
			w.own(o, r, "Gateway/g")
			w.create("Gateway/keep" + string(rune('a'+i)))
			want = append(want, "Gateway/keep"+string(rune('a'+i)))
		}
		for range 3 {
			defer start(t, cascade.Config{Backend: w.s, Workers: 3})()
		}
		w.delete("Gateway/g", cascade.Foreground)
		settle()
		if got := w.names(); !slices.Equal(got, want) {
			t.Errorf("documents = %v, want %v", got, want)
		}
	})
}

// faulty makes the watches of one kind fail once, after receiving their next
// event, with the given error. The event is lost, as it would be to a
// compaction.
type faulty struct {
	store.Backend
	kind string
	err  error
	arm  atomic.Bool
	// gate, when set, holds Lists of kind until it is closed.
	gate atomic.Pointer[chan struct{}]
}

func (f *faulty) List(ctx context.Context, kind string, opts store.ListOptions) (store.ListResult, error) {
	if g := f.gate.Load(); g != nil && kind == f.kind {
		<-*g
	}
	return f.Backend.List(ctx, kind, opts)
}

func (f *faulty) Watch(ctx context.Context, kind string, from int64) (store.Watch, error) {
	w, err := f.Backend.Watch(ctx, kind, from)
	if err != nil || kind != f.kind {
		return w, err
	}
	return &faultyWatch{Watch: w, f: f}, nil
}

type faultyWatch struct {
	store.Watch
	f *faulty
}

func (w *faultyWatch) Next(ctx context.Context) (store.Event, error) {
	ev, err := w.Watch.Next(ctx)
	if err == nil && w.f.arm.CompareAndSwap(true, false) {
		return store.Event{}, w.f.err
	}
	return ev, err
}

func TestLostWatch(t *testing.T) {
	for _, tt := range []struct {
		err error
		// resync is the ResyncPeriod the collection needs: a
		// compaction loses the deletion, so only a resync finds the
		// dependent.
		resync time.Duration
	}{
		{store.ErrCompacted, time.Hour},
		{store.ErrWatchLagged, 0},
		{errUnavailable, 0},
	} {
		for _, recreate := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/recreate=%v", tt.err, recreate), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					w := newWorld(t)
					w.create("Gateway/g")
					w.create("Route/r")
					w.own("Route/r", "Gateway/g")
					f := &faulty{Backend: w.s, kind: "Gateway", err: &store.Error{Op: "watch", Kind: "Gateway", Err: tt.err}}
					stop := start(t, cascade.Config{Backend: f, ResyncPeriod: tt.resync})
					defer stop()
					settle()
					f.arm.Store(true)
					w.delete("Gateway/g", cascade.Background) // this event is lost
					if recreate {
						w.create("Gateway/g") // another gateway under the same key
					}
					settle()
					if w.exists("Route/r") {
						t.Error("the dependent of an owner deleted during a lost watch was kept")
					}
				})
			})
		}
	}
}

// The sources of the kinds list one after the other. An owner deleted
// after its dependents' kind was listed and before its own kind was is
// reported by no event; the pass over every document once all kinds are
// listed finds its dependents.
func TestOwnerDeletedWhileStarting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		w.create("Gateway/g")
		w.create("Route/r")
		w.own("Route/r", "Gateway/g")
		f := &faulty{Backend: w.s, kind: "Gateway"}
		gate := make(chan struct{})
		f.gate.Store(&gate)
		stop := start(t, cascade.Config{Backend: f})
		defer stop()
		synctest.Wait() // Routes are listed and Route/r looked at; Gateways are not listed yet
		if err := w.s.Delete(context.Background(), "Gateway", "g", store.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		f.gate.Store(nil)
		close(gate)
		settle()
		if w.exists("Route/r") {
			t.Error("the dependent of an owner deleted while the collector started was kept")
		}
	})
}

// An owner deleted while its kind's history was compacted is never seen
// going; its dependents of another kind are found by the next resync, and
// not before it.
func TestResyncFindsUnseenDeletion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		f := &faulty{Backend: w.s, kind: "Gateway", err: &store.Error{Op: "watch", Kind: "Gateway", Err: store.ErrCompacted}}
		const period = 10 * time.Hour
		stop := start(t, cascade.Config{Backend: f, ResyncPeriod: period})
		defer stop()
		settle()
		gate := make(chan struct{})
		f.gate.Store(&gate)
		f.arm.Store(true)
		w.create("Gateway/o") // lost: the collector lists Gateways again, held by the gate
		w.create("Route/r")
		w.own("Route/r", "Gateway/o")
		synctest.Wait()
		w.delete("Gateway/o", cascade.Background)
		f.gate.Store(nil)
		close(gate)
		settle()
		if !w.exists("Route/r") {
			t.Fatal("the dependent was collected before any resync: the test no longer loses the deletion")
		}
		time.Sleep(period)
		settle()
		if w.exists("Route/r") {
			t.Error("the dependent of an owner whose deletion was never seen was kept after a resync")
		}
	})
}

func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

func TestMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		w.create("Gateway/g")
		w.create("Gateway/h")
		w.create("Route/a")
		w.own("Route/a", "!Gateway/g")
		w.create("Route/b")
		w.own("Route/b", "Gateway/g", "Gateway/h")
		w.create("Route/c")
		w.own("Route/c", "Gateway/h")
		reg := prometheus.NewPedanticRegistry()
		stop := start(t, cascade.Config{Backend: w.s, MetricsRegisterer: reg})
		defer stop()
		w.delete("Gateway/g", cascade.Foreground)
		settle()
		w.delete("Gateway/h", cascade.Orphan)
		settle()
		for name, want := range map[string]float64{
			"cascade_dependents_deleted_total":       1, // Route/a
			"cascade_owner_references_removed_total": 3, // Route/b's to g; Route/b's and Route/c's to h
			"cascade_finalizers_removed_total":       2, // foreground on g, orphan on h
			"cascade_cycles_broken_total":            0,
		} {
			if got := counter(t, reg, name); got != want {
				t.Errorf("%s = %v, want %v", name, got, want)
			}
		}
		if got := counter(t, reg, "workqueue_adds_total"); got == 0 {
			t.Error("the work queue's metrics are not registered")
		}
	})
}

func TestNewController(t *testing.T) {
	w := newWorld(t)
	reg := prometheus.NewPedanticRegistry()
	if _, err := cascade.NewController(cascade.Config{Backend: w.s, MetricsRegisterer: reg}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		cfg  cascade.Config
	}{
		{"no backend", cascade.Config{}},
		{"negative workers", cascade.Config{Backend: w.s, Workers: -1}},
		{"unknown kind", cascade.Config{Backend: w.s, Kinds: []string{"Route", "Volume"}}},
		{"metrics registered twice", cascade.Config{Backend: w.s, MetricsRegisterer: reg}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			kinds := slices.Clone(tt.cfg.Kinds)
			if _, err := cascade.NewController(tt.cfg); !errors.Is(err, cascade.ErrInvalidConfig) {
				t.Errorf("NewController = %v, want ErrInvalidConfig", err)
			}
			if !slices.Equal(kinds, tt.cfg.Kinds) {
				t.Error("NewController changed the caller's config")
			}
		})
	}
}

// When the controller's own metrics cannot be registered, NewController
// fails and takes back the cascade metrics it registered.
func TestNewControllerUnregistersOnFailure(t *testing.T) {
	w := newWorld(t)
	reg := prometheus.NewPedanticRegistry()
	noop := controller.ReconcilerFunc(func(context.Context, string) (controller.Result, error) { return controller.Result{}, nil })
	if _, err := controller.New(controller.Config{Name: "cascade", Reconciler: noop, MetricsRegisterer: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := cascade.NewController(cascade.Config{Backend: w.s, MetricsRegisterer: reg}); !errors.Is(err, cascade.ErrInvalidConfig) {
		t.Fatalf("NewController = %v, want ErrInvalidConfig", err)
	}
	if _, err := cascade.NewController(cascade.Config{Backend: w.s, Name: "gc", MetricsRegisterer: reg}); err != nil {
		t.Errorf("NewController under another name = %v: the cascade metrics were left registered", err)
	}
}

// flaky fails the next reads (Get, List, Watch) with an error that is not a
// store sentinel, as a lost connection would.
type flaky struct {
	store.Backend
	fails atomic.Int64
}

var errUnavailable = errors.New("connection refused")

func (f *flaky) fail() bool { return f.fails.Add(-1) >= 0 }

func (f *flaky) Get(ctx context.Context, kind, key string) (store.Document, error) {
	if f.fail() {
		return store.Document{}, errUnavailable
	}
	return f.Backend.Get(ctx, kind, key)
}

func (f *flaky) List(ctx context.Context, kind string, opts store.ListOptions) (store.ListResult, error) {
	if f.fail() {
		return store.ListResult{}, errUnavailable
	}
	return f.Backend.List(ctx, kind, opts)
}

func (f *flaky) Watch(ctx context.Context, kind string, from int64) (store.Watch, error) {
	if f.fail() {
		return nil, errUnavailable
	}
	return f.Backend.Watch(ctx, kind, from)
}

// Store errors are retried with backoff, at start and while running.
func TestTransientErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		w.create("Gateway/g")
		w.create("Route/r")
		w.own("Route/r", "!Gateway/g")
		w.create("Secret/s")
		w.own("Secret/s", "Gateway/g")
		f := &flaky{Backend: w.s}
		f.fails.Store(5) // the first lists and watches fail
		reg := prometheus.NewPedanticRegistry()
		stop := start(t, cascade.Config{Backend: f, MetricsRegisterer: reg})
		defer stop()
		settle()
		f.fails.Store(4) // the first reads of the cascade fail
		w.delete("Gateway/g", cascade.Foreground)
		settle()
		if got := w.names(); len(got) != 0 {
			t.Errorf("documents = %v, want none", got)
		}
		if counter(t, reg, "cascade_errors_total") == 0 {
			t.Error("no processing error was counted")
		}
	})
}
