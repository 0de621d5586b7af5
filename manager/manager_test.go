package manager_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/internal/doctest"
	"github.com/tendhq/tend/manager"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/store"
)

// crashable is a replica's view of the store's leases; crash makes the
// replica vanish as a killed process would: it never renews or releases its
// leases again, so they lapse on their own.
type crashable struct {
	store.Leaser
	dead atomic.Bool
	// cut makes every lease call fail, as a network partition between the
	// replica and the store would, until it is cleared.
	cut atomic.Bool
	// loseNext makes the next RenewLease report store.ErrLeaseLost.
	loseNext atomic.Bool
	// stall, when set before the replica starts, holds every lease call
	// until it is closed or the call's context ends, as a store that stopped
	// answering would.
	stall chan struct{}
}

// wait holds a call while the store stalls.
func (c *crashable) wait(ctx context.Context) error {
	if c.stall == nil {
		return nil
	}
	select {
	case <-c.stall:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

var (
	errCrashed     = errors.New("replica crashed")
	errUnreachable = errors.New("store unreachable")
)

// errCannotFence is what a store that cannot check fences answers a fenced
// write with.
var errCannotFence = errors.New("fenced writes are not supported")

// cannotFence is a Leaser of a store that cannot check fences atomically.
type cannotFence struct{ store.Leaser }

func (cannotFence) FencingUnsupported() error { return errCannotFence }

func (c *crashable) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (store.Lease, error) {
	if c.dead.Load() {
		return store.Lease{}, errCrashed
	}
	if c.cut.Load() {
		return store.Lease{}, errUnreachable
	}
	if err := c.wait(ctx); err != nil {
		return store.Lease{}, err
	}
	return c.Leaser.AcquireLease(ctx, name, holder, ttl)
}

func (c *crashable) RenewLease(ctx context.Context, l store.Lease) (store.Lease, error) {
	if c.dead.Load() {
		return store.Lease{}, errCrashed
	}
	if c.cut.Load() {
		return store.Lease{}, errUnreachable
	}
	if err := c.wait(ctx); err != nil {
		return store.Lease{}, err
	}
	if c.loseNext.CompareAndSwap(true, false) {
		return store.Lease{}, fmt.Errorf("renew: %w", store.ErrLeaseLost)
	}
	return c.Leaser.RenewLease(ctx, l)
}

func (c *crashable) ReleaseLease(ctx context.Context, l store.Lease) error {
	if c.dead.Load() {
		return nil
	}
	if c.cut.Load() {
		return errUnreachable
	}
	return c.Leaser.ReleaseLease(ctx, l)
}

func (c *crashable) ListLeases(ctx context.Context, prefix string) ([]store.Lease, error) {
	if c.dead.Load() {
		return nil, errCrashed
	}
	if c.cut.Load() {
		return nil, errUnreachable
	}
	if err := c.wait(ctx); err != nil {
		return nil, err
	}
	return c.Leaser.ListLeases(ctx, prefix)
}

// fleet is replicas reconciling one store. Each reconcile copies a widget's
// spec into its status with a fenced write, after some work; the fleet
// records every time two replicas held one key at once.
type fleet struct {
	t      *testing.T
	s      *memory.Store
	shards int
	// unfenced runs the replicas with Config.Unfenced over a Leaser
	// that cannot fence, writing through a store that refuses fenced writes,
	// as the Kubernetes backend does.
	unfenced bool
	// configure, when set, completes the configuration of each replica's
	// manager.
	configure func(id string, cfg *manager.Config)

	mu         sync.Mutex        // guards the fields below
	inflight   map[string]string // key -> replica reconciling it
	overlaps   []string
	badFences  []string
	reconciles map[string]int       // per replica
	first      map[string]time.Time // per replica: its first reconcile
}

func newFleet(t *testing.T, docs, shards int, unfenced bool) *fleet {
	f := &fleet{
		t:          t,
		s:          doctest.NewStore(t, memory.Config{}),
		shards:     shards,
		unfenced:   unfenced,
		inflight:   map[string]string{},
		reconciles: map[string]int{},
		first:      map[string]time.Time{},
	}
	for i := range docs {
		if _, err := f.s.Create(t.Context(), store.Document{
			Meta: store.Meta{Kind: "Widget", Key: fmt.Sprintf("w%02d", i)},
			Spec: []byte(`{"v":0}`),
		}); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// reconciler returns replica's reconciler. It ignores ctx during its work,
// as careless code would, so only the manager's admission keeps replicas
// apart; crashed ends the work as the death of the process would.
func (f *fleet) reconciler(replica string, wantLease func(key string) string, crashed <-chan struct{}) controller.Reconciler {
	return controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
		f.mu.Lock()
		if other, busy := f.inflight[key]; busy {
			f.overlaps = append(f.overlaps, fmt.Sprintf("%s by %s and %s at %v", key, other, replica, time.Now()))
		}
		f.inflight[key] = replica
		f.reconciles[replica]++
		if _, ok := f.first[replica]; !ok {
			f.first[replica] = time.Now()
		}
		if fence, ok := store.FenceFrom(ctx); ok == f.unfenced || ok && fence.Lease != wantLease(key) {
			f.badFences = append(f.badFences, fmt.Sprintf("%s by %s: fence %+v (unfenced %v)", key, replica, fence, f.unfenced))
		}
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			delete(f.inflight, key)
			f.mu.Unlock()
		}()

		// Some keys take longer than a renew period.
		work := 50 * time.Millisecond
		if key[len(key)-1] < '3' {
			work = 3 * time.Second
		}
		select {
		case <-time.After(work):
		case <-crashed:
			return controller.Result{}, errCrashed
		}
		d, err := f.s.Get(ctx, "Widget", key)
		if errors.Is(err, store.ErrNotFound) {
			return controller.Result{}, nil
		}
		if err != nil {
			return controller.Result{}, err
		}
		if string(d.Status) == string(d.Spec) {
			return controller.Result{}, nil
		}
		d.Status = d.Spec
		if _, fenced := store.FenceFrom(ctx); fenced && f.unfenced {
			return controller.Result{}, errCannotFence
		}
		_, err = f.s.UpdateStatus(ctx, d)
		return controller.Result{}, err
	})
}

// bump changes every widget's spec, as users would, racing the replicas'
// status writes.
func (f *fleet) bump(v int) {
	ctx := context.Background()
	list, err := f.s.List(ctx, "Widget", store.ListOptions{})
	if err != nil {
		f.t.Error(err)
		return
	}
	for _, d := range list.Items {
		for {
			d.Spec = []byte(`{"v":` + strconv.Itoa(v) + `}`)
			_, err := f.s.UpdateSpec(ctx, d)
			if !errors.Is(err, store.ErrConflict) {
				if err != nil {
					f.t.Error(err)
				}
				break
			}
			if d, err = f.s.Get(ctx, "Widget", d.Meta.Key); err != nil {
				f.t.Error(err)
				break
			}
		}
	}
}

// converged reports whether every widget's status matches its spec.
func (f *fleet) converged() bool {
	list, err := f.s.List(context.Background(), "Widget", store.ListOptions{})
	if err != nil {
		f.t.Error(err)
		return false
	}
	for _, d := range list.Items {
		if string(d.Status) != string(d.Spec) {
			return false
		}
	}
	return true
}

// holders counts the shard leases per holder.
func (f *fleet) holders() map[string]int {
	leases, err := f.s.ListLeases(context.Background(), "shard/")
	if err != nil {
		f.t.Fatal(err)
	}
	n := map[string]int{}
	for _, l := range leases {
		n[l.Holder]++
	}
	return n
}

type replica struct {
	m       *manager.Manager
	leaser  *crashable
	crashed chan struct{}
	cancel  context.CancelFunc
	done    chan error
}

func (f *fleet) start(id string, mode manager.Mode, wantLease func(string) string) *replica {
	f.t.Helper()
	crashed := make(chan struct{})
	c, err := controller.New(controller.Config{
		Name:                "widgets",
		Reconciler:          f.reconciler(id, wantLease, crashed),
		Sources:             []controller.Source{controller.For(f.s, "Widget")},
		Workers:             2,
		ShutdownGracePeriod: time.Second,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	r := &replica{leaser: &crashable{Leaser: f.s}, crashed: crashed, done: make(chan error, 1)}
	var leaser store.Leaser = r.leaser
	if f.unfenced {
		leaser = cannotFence{leaser}
	}
	cfg := manager.Config{
		Controllers:   []*controller.Controller{c},
		Mode:          mode,
		Leaser:        leaser,
		Unfenced:      f.unfenced,
		Identity:      id,
		LeaseDuration: 3 * time.Second,
		RenewPeriod:   time.Second,
		Shards:        f.shards,
	}
	if f.configure != nil {
		f.configure(id, &cfg)
	}
	r.m, err = manager.New(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	var ctx context.Context
	ctx, r.cancel = context.WithCancel(f.t.Context())
	go func() { r.done <- r.m.Run(ctx) }()
	return r
}

// crash kills r without giving up its leases.
func (r *replica) crash() error {
	r.leaser.dead.Store(true)
	close(r.crashed)
	r.cancel()
	return <-r.done
}

// stop stops r gracefully.
func (r *replica) stop() error {
	r.cancel()
	return <-r.done
}

// TestShardedReplicas runs three replicas sharing shards on one store while
// the widgets keep changing: replicas join one after another, one crashes,
// and the check is that no key is ever reconciled by two replicas at once,
// that each reconcile carries its shard's fence, that the crashed replica's
// shards move within one lease period and a renew period, and that every
// widget converges. Unfenced, the same holds with no fence on the
// reconciles' contexts.
func TestShardedReplicas(t *testing.T) {
	for _, unfenced := range []bool{false, true} {
		t.Run(fmt.Sprintf("unfenced=%v", unfenced), func(t *testing.T) { testShardedReplicas(t, unfenced) })
	}
}

func testShardedReplicas(t *testing.T, unfenced bool) {
	synctest.Test(t, func(t *testing.T) {
		const shards, lease, renew = 12, 3 * time.Second, time.Second
		f := newFleet(t, 40, shards, unfenced)
		shardLease := func(key string) string { return "shard/" + strconv.Itoa(manager.ShardOf(key, shards)) }

		var writes sync.WaitGroup
		stopWrites := make(chan struct{})
		writes.Go(func() {
			for v := 1; ; v++ {
				select {
				case <-stopWrites:
					return
				case <-time.After(700 * time.Millisecond):
				}
				f.bump(v)
			}
		})

		a := f.start("a", manager.Sharded, shardLease)
		time.Sleep(2 * time.Second)
		if got := f.holders(); got["a"] != shards {
			t.Errorf("alone, a holds %v, want all %d shards", got, shards)
		}
		b := f.start("b", manager.Sharded, shardLease)
		time.Sleep(2 * time.Second)
		c := f.start("c", manager.Sharded, shardLease)
		time.Sleep(5 * time.Second)
		if got := f.holders(); got["a"] != 4 || got["b"] != 4 || got["c"] != 4 {
			t.Errorf("with three replicas the shards are held %v, want 4 each", got)
		}

		killed := time.Now()
		if err := b.crash(); err != nil {
			t.Errorf("crashed replica's Run: %v", err)
		}
		var moved time.Duration
		for moved == 0 {
			time.Sleep(100 * time.Millisecond)
			if got := f.holders(); got["a"]+got["c"] == shards {
				moved = time.Since(killed)
			}
		}
		if moved > lease+renew {
			t.Errorf("the crashed replica's shards moved after %v, want at most %v", moved, lease+renew)
		}
		time.Sleep(5 * time.Second)
		if got := f.holders(); got["a"] != 6 || got["c"] != 6 {
			t.Errorf("after the crash the shards are held %v, want 6 each by a and c", got)
		}

		close(stopWrites)
		writes.Wait()
		deadline := time.Now().Add(time.Minute)
		for !f.converged() && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if !f.converged() {
			t.Error("the widgets did not converge")
		}
		if err := a.stop(); err != nil {
			t.Error(err)
		}
		if err := c.stop(); err != nil {
			t.Error(err)
		}
		if got := f.holders(); len(got) != 0 {
			t.Errorf("after a graceful stop shards are still held: %v", got)
		}

		f.mu.Lock()
		defer f.mu.Unlock()
		for _, o := range f.overlaps {
			t.Errorf("reconciled by two replicas at once: %s", o)
		}
		for _, b := range f.badFences {
			t.Errorf("wrong fence: %s", b)
		}
		for _, id := range []string{"a", "b", "c"} {
			if f.reconciles[id] == 0 {
				t.Errorf("replica %s never reconciled", id)
			}
		}
		t.Logf("reconciles per replica: %v; shards moved %v after the crash", f.reconciles, moved)
	})
}

// TestLeaderElection runs two replicas electing a leader: only the leader
// reconciles, with the leader lease's fence; when it crashes the other takes
// over within a lease period and a renew period, never overlapping it.
func TestLeaderElection(t *testing.T) {
	for _, unfenced := range []bool{false, true} {
		t.Run(fmt.Sprintf("unfenced=%v", unfenced), func(t *testing.T) { testLeaderElection(t, unfenced) })
	}
}

func testLeaderElection(t *testing.T, unfenced bool) {
	synctest.Test(t, func(t *testing.T) {
		const lease, renew = 3 * time.Second, time.Second
		f := newFleet(t, 10, 0, unfenced)
		leader := func(string) string { return "leader" }
		a := f.start("a", manager.LeaderElection, leader)
		time.Sleep(time.Second)
		b := f.start("b", manager.LeaderElection, leader)
		time.Sleep(3 * time.Second)
		f.bump(1)
		time.Sleep(3 * time.Second)
		f.mu.Lock()
		if f.reconciles["a"] == 0 || f.reconciles["b"] != 0 {
			t.Errorf("reconciles %v: want only the leader a", f.reconciles)
		}
		f.mu.Unlock()

		killed := time.Now()
		if err := a.crash(); err != nil {
			t.Error(err)
		}
		f.bump(2)
		for !f.converged() {
			time.Sleep(100 * time.Millisecond)
		}
		f.mu.Lock()
		if took := f.first["b"].Sub(killed); took > lease+renew {
			t.Errorf("b took over %v after a crashed, want within %v", took, lease+renew)
		}
		f.mu.Unlock()
		if err := b.stop(); err != nil {
			t.Error(err)
		}
		leases, _ := f.s.ListLeases(context.Background(), "leader")
		if len(leases) != 0 {
			t.Errorf("after a graceful stop the lead is still held: %v", leases)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.reconciles["b"] == 0 {
			t.Error("b never took over")
		}
		for _, o := range f.overlaps {
			t.Errorf("reconciled by two replicas at once: %s", o)
		}
		for _, b := range f.badFences {
			t.Errorf("wrong fence: %s", b)
		}
	})
}

// TestLostLeadStopsWork checks that a leader told its lease is lost cancels
// its reconciles at once, with store.ErrLeaseLost as the cause, then stands by
// and leads again when it can.
func TestLostLeadStopsWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := doctest.NewStore(t, memory.Config{})
		doctest.Create(t, s, "Widget", "a")
		leaser := &crashable{Leaser: s}
		var mu sync.Mutex // guards starts, causes
		var starts []time.Duration
		var causes []error
		begin := time.Now()
		c, err := controller.New(controller.Config{
			Name: "blocking",
			Reconciler: controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
				mu.Lock()
				starts = append(starts, time.Since(begin))
				mu.Unlock()
				<-ctx.Done()
				mu.Lock()
				causes = append(causes, context.Cause(ctx))
				mu.Unlock()
				return controller.Result{}, ctx.Err()
			}),
			Sources: []controller.Source{controller.For(s, "Widget")},
		})
		if err != nil {
			t.Fatal(err)
		}
		m, err := manager.New(manager.Config{
			Controllers:   []*controller.Controller{c},
			Mode:          manager.LeaderElection,
			Leaser:        leaser,
			Identity:      "solo",
			LeaseDuration: 3 * time.Second,
			RenewPeriod:   time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		time.Sleep(1500 * time.Millisecond)
		leaser.loseNext.Store(true) // the renewal at 2 s reports the lease lost
		time.Sleep(time.Second)
		mu.Lock()
		if len(causes) != 1 || !errors.Is(causes[0], store.ErrLeaseLost) {
			t.Errorf("causes %v, want one store.ErrLeaseLost", causes)
		}
		mu.Unlock()
		time.Sleep(3 * time.Second)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if len(starts) < 2 || starts[0] != 0 || starts[1] < 2*time.Second || starts[1] > 4*time.Second {
			t.Errorf("reconciles started at %v: want one at 0, and another after leading again", starts)
		}
	})
}

func TestManagerSingle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex // guards seen
		seen := map[string]bool{}
		newController := func(name string, src <-chan string, err error) *controller.Controller {
			c, e := controller.New(controller.Config{
				Name: name,
				Reconciler: controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
					mu.Lock()
					seen[name+"/"+key] = true
					mu.Unlock()
					if _, ok := store.FenceFrom(ctx); ok {
						t.Errorf("%s: a fence without leases", name)
					}
					return controller.Result{}, nil
				}),
				Sources: []controller.Source{controller.Channel(src), controller.SourceFunc(func(ctx context.Context, _ controller.Enqueuer) error {
					if err == nil {
						return nil
					}
					time.Sleep(time.Second)
					return err
				})},
			})
			if e != nil {
				t.Fatal(e)
			}
			return c
		}
		m, err := manager.New(manager.Config{Controllers: []*controller.Controller{
			newController("one", closedWith("x"), nil),
			newController("two", closedWith("y"), nil),
		}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if !seen["one/x"] || !seen["two/y"] {
			t.Errorf("reconciled %v, want one/x and two/y", seen)
		}

		errBroken := errors.New("broken")
		m, err = manager.New(manager.Config{Controllers: []*controller.Controller{
			newController("ok", make(chan string), nil),
			newController("broken", make(chan string), errBroken),
		}})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Run(t.Context()); !errors.Is(err, errBroken) {
			t.Errorf("Run: %v, want the broken controller's error", err)
		}
	})
}

func TestNewManagerValidates(t *testing.T) {
	rec := controller.ReconcilerFunc(func(context.Context, string) (controller.Result, error) { return controller.Result{}, nil })
	c1, _ := controller.New(controller.Config{Name: "one", Reconciler: rec})
	c2, _ := controller.New(controller.Config{Name: "one", Reconciler: rec})
	s := doctest.NewStore(t, memory.Config{})
	cs := []*controller.Controller{c1}
	tests := []struct {
		name string
		cfg  manager.Config
		ok   bool
	}{
		{"single", manager.Config{Controllers: cs}, true},
		{"sharded", manager.Config{Controllers: cs, Mode: manager.Sharded, Leaser: s}, true},
		{"no controllers (the builders add them)", manager.Config{}, true},
		{"nil controller", manager.Config{Controllers: []*controller.Controller{nil}}, false},
		{"duplicate names", manager.Config{Controllers: []*controller.Controller{c1, c2}}, false},
		{"leader without leaser", manager.Config{Controllers: cs, Mode: manager.LeaderElection}, false},
		{"unknown mode", manager.Config{Controllers: cs, Mode: 7, Leaser: s}, false},
		{"renew too slow", manager.Config{Controllers: cs, Mode: manager.Sharded, Leaser: s,
			LeaseDuration: 10 * time.Second, RenewPeriod: 5 * time.Second}, false},
		{"negative shards", manager.Config{Controllers: cs, Mode: manager.Sharded, Leaser: s, Shards: -1}, false},
		{"leaser cannot fence", manager.Config{Controllers: cs, Mode: manager.Sharded, Leaser: cannotFence{s}}, false},
		{"leaser cannot fence, unfenced", manager.Config{Controllers: cs, Mode: manager.LeaderElection,
			Leaser: cannotFence{s}, Unfenced: true}, true},
		{"single with a leaser that cannot fence", manager.Config{Controllers: cs, Leaser: cannotFence{s}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := manager.New(tt.cfg)
			if (err == nil) != tt.ok {
				t.Fatalf("New: %v, want ok=%v", err, tt.ok)
			}
			if !tt.ok && !errors.Is(err, manager.ErrInvalidConfig) {
				t.Errorf("New: %v does not match ErrInvalidConfig", err)
			}
			if tt.ok && m.Identity() == "" {
				t.Error("no default identity")
			}
		})
	}
}

func TestShardOf(t *testing.T) {
	counts := make([]int, 8)
	for i := range 8000 {
		s := manager.ShardOf(fmt.Sprint("team/doc-", i), 8)
		if s < 0 || s >= 8 {
			t.Fatalf("shard %d out of range", s)
		}
		counts[s]++
	}
	for s, n := range counts {
		if n < 800 || n > 1200 {
			t.Errorf("shard %d has %d of 8000 keys: the hash spreads badly", s, n)
		}
	}
	if manager.ShardOf("x", 0) != 0 {
		t.Error("ShardOf with no shards is not 0")
	}
	if manager.ShardOf("team/doc-1", 8) != manager.ShardOf("team/doc-1", 8) {
		t.Error("ShardOf is not deterministic")
	}
}

// closedWith returns a channel holding key, closed.
func closedWith(key string) <-chan string {
	ch := make(chan string, 1)
	ch <- key
	close(ch)
	return ch
}
