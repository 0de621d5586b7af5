package cascade_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/manager"

	"github.com/tendhq/tend/cascade"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/store"
)

// replica is one process running the garbage collector under a Manager.
type replica struct {
	h    *host
	m    *manager.Manager
	stop context.CancelFunc
	done chan error
}

// startReplica runs the garbage collector on h under a manager in mode,
// named id.
func startReplica(t *testing.T, h *host, mode manager.Mode, id string) *replica {
	t.Helper()
	c, err := cascade.NewController(cascade.Config{Backend: h, Workers: 2, ResyncPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	m, err := manager.New(manager.Config{
		Controllers: []*controller.Controller{c},
		Mode:        mode,
		Leaser:      h,
		Identity:    id,
		Shards:      8,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	r := &replica{h: h, m: m, stop: stop, done: make(chan error, 1)}
	go func() { r.done <- m.Run(ctx) }()
	return r
}

// halt stops the replica and checks that its manager returned nil.
func (r *replica) halt(t *testing.T) {
	t.Helper()
	r.stop()
	if err := <-r.done; err != nil {
		t.Errorf("replica %s: Run: %v", r.m.Identity(), err)
	}
}

// cascadeWorld stores the documents of the failover tests: Gateway/g, to
// delete in the foreground, owns twenty routes that each own a secret, all
// references blocking, and Route/shared, which Gateway/keep owns too;
// Gateway/h, to delete in the background, owns Route/h1, which owns
// Secret/h1; Gateway/o, to orphan, owns Route/o1; Gateway/keep owns
// Secret/k.
func cascadeWorld(t *testing.T) *world {
	t.Helper()
	w := newWorld(t)
	w.create("Gateway/g")
	for i := range 20 {
		r, s := fmt.Sprintf("Route/r%02d", i), fmt.Sprintf("Secret/s%02d", i)
		w.create(r)
		w.own(r, "!Gateway/g")
		w.create(s)
		w.own(s, "!"+r)
	}
	w.create("Gateway/keep")
	w.create("Route/shared")
	w.own("Route/shared", "Gateway/g", "Gateway/keep")
	w.create("Secret/k")
	w.own("Secret/k", "Gateway/keep")
	w.create("Gateway/h")
	w.create("Route/h1")
	w.own("Route/h1", "Gateway/h")
	w.create("Secret/h1")
	w.own("Secret/h1", "Route/h1")
	w.create("Gateway/o")
	w.create("Route/o1")
	w.own("Route/o1", "Gateway/o")
	return w
}

// deleteAll deletes the gateways of cascadeWorld under their policies.
func deleteAll(w *world) {
	w.delete("Gateway/g", cascade.Foreground)
	w.delete("Gateway/h", cascade.Background)
	w.delete("Gateway/o", cascade.Orphan)
}

// checkOutcome checks that the cascades of deleteAll completed: the
// documents that must stay are there with the owners they must keep, the
// others are gone, the foreground deletion removed dependents before their
// owners, and no document was deleted twice.
func checkOutcome(t *testing.T, w *world, l *ledger, from int64) {
	t.Helper()
	if got, want := w.names(), []string{"Gateway/keep", "Route/o1", "Route/shared", "Secret/k"}; !slices.Equal(got, want) {
		t.Errorf("documents = %v, want %v", got, want)
	}
	for name, want := range map[string][]string{
		"Route/o1":     nil,
		"Route/shared": {"Gateway/keep"},
		"Secret/k":     {"Gateway/keep"},
	} {
		if !w.exists(name) {
			continue
		}
		if got := w.owners(name); !slices.Equal(got, want) {
			t.Errorf("%s owners = %v, want %v", name, got, want)
		}
		if doc := w.get(name); doc.Meta.Terminating() {
			t.Errorf("%s is Terminating", name)
		}
	}
	gone := w.removals(from)
	for i := range 20 {
		r, s := fmt.Sprintf("Route/r%02d", i), fmt.Sprintf("Secret/s%02d", i)
		for _, before := range [][2]string{{s, r}, {r, "Gateway/g"}} {
			if gone[before[0]] == 0 || gone[before[0]] > gone[before[1]] {
				t.Errorf("%s removed at %d, %s at %d: want the dependent first", before[0], gone[before[0]], before[1], gone[before[1]])
			}
		}
	}
	if twice := l.twice(); len(twice) > 0 {
		t.Errorf("deleted more than once: %v", twice)
	}
}

// Two replicas run the garbage collector under managers that elect a leader
// or shard the keys. One dies in the middle of the cascades; the other takes
// its work over and completes them, with the foreground order kept, no
// document deleted twice and none collected or orphaned wrongly.
func TestFailover(t *testing.T) {
	for _, mode := range []manager.Mode{manager.LeaderElection, manager.Sharded} {
		t.Run(mode.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := cascadeWorld(t)
				l := &ledger{}
				a := startReplica(t, newHost(w.s, l), mode, "a")
				synctest.Wait()
				b := startReplica(t, newHost(w.s, l), mode, "b")
				defer b.halt(t)
				defer a.halt(t)
				time.Sleep(time.Minute) // the shards are balanced
				synctest.Wait()
				switch {
				case mode == manager.LeaderElection && (!a.m.IsLeader() || b.m.IsLeader()):
					t.Fatalf("leaders: a %v, b %v; want a", a.m.IsLeader(), b.m.IsLeader())
				case mode == manager.Sharded && (len(a.m.OwnedShards()) == 0 || len(b.m.OwnedShards()) == 0):
					t.Fatalf("shards: a %v, b %v; want both some", a.m.OwnedShards(), b.m.OwnedShards())
				}

				a.h.crashAfter = 3
				from := w.revision()
				deleteAll(w)
				settle()
				if !a.h.dead.Load() {
					t.Fatal("replica a did not die: it deleted fewer than three documents")
				}
				if b.h.deletes.Load() == 0 {
					t.Fatal("replica b deleted nothing")
				}
				checkOutcome(t, w, l, from)
				t.Logf("deletes: a %d before it died, b %d", a.h.deletes.Load(), b.h.deletes.Load())
			})
		})
	}
}

// A replica frozen in the middle of a delete loses its lease; the other
// takes over and completes the cascades. When the frozen delete reaches the
// store at last, the store refuses it: it carries the fence of a lease the
// replica no longer holds.
func TestFencedWriteOfDeposedReplica(t *testing.T) {
	for _, mode := range []manager.Mode{manager.LeaderElection, manager.Sharded} {
		t.Run(mode.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := cascadeWorld(t)
				l := &ledger{}
				ha := newHost(w.s, l)
				ha.freeze, ha.frozen = make(chan struct{}), make(chan error, 1)
				a := startReplica(t, ha, mode, "a")
				synctest.Wait()
				b := startReplica(t, newHost(w.s, l), mode, "b")
				defer b.halt(t)
				defer a.halt(t)
				time.Sleep(time.Minute)
				synctest.Wait()

				from := w.revision()
				deleteAll(w)
				settle()
				if !ha.froze.Load() {
					t.Fatal("replica a never deleted anything")
				}
				close(ha.freeze)
				if err := <-ha.frozen; !errors.Is(err, store.ErrFenced) {
					t.Errorf("the deposed replica's delete = %v, want ErrFenced", err)
				}
				settle()
				checkOutcome(t, w, l, from)
			})
		})
	}
}
