package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tendhq/tend/manager"

	"github.com/tendhq/tend/backends/postgres"
	"github.com/tendhq/tend/cascade"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/store"
)

// dying is the store as one replica process reaches it: once it dies,
// every later call fails, so nothing more of it reaches the server and its
// leases lapse. Its successful deletes are counted in deletes and in the
// ledger its replicas share.
//
// With freeze set, the process dies at its first delete instead, and that
// delete waits until freeze is closed: then it reaches the server, as a
// request already sent would, and its result is sent on frozen.
type dying struct {
	store.Backend
	ledger  *ledger
	deletes atomic.Int64
	dead    atomic.Bool
	freeze  chan struct{}
	froze   atomic.Bool
	frozen  chan error // capacity 1
}

// ledger counts the successful deletes of the replicas sharing it, per
// document and in all. When the count in all reaches crashAt, victim dies:
// the crash comes at a set point of the cascade whichever replica made the
// deletes before it (with shards, which replica reconciles a document
// depends on the hash of its UID, and which of two replicas deletes a
// dependent on which reads first).
type ledger struct {
	deleted sync.Map // "Kind/key@uid" -> *atomic.Int64
	total   atomic.Int64
	crashAt int64
	victim  *dying
}

// record counts the delete of the document named by kind, key and uid.
func (l *ledger) record(kind, key, uid string) {
	n, _ := l.deleted.LoadOrStore(kind+"/"+key+"@"+uid, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
	if l.total.Add(1) == l.crashAt {
		l.victim.dead.Store(true)
	}
}

// twice returns the documents deleted more than once, with their counts.
func (l *ledger) twice() []string {
	var out []string
	l.deleted.Range(func(doc, n any) bool {
		if c := n.(*atomic.Int64).Load(); c > 1 {
			out = append(out, fmt.Sprintf("%s ×%d", doc, c))
		}
		return true
	})
	return out
}

var errDead = errors.New("the process is dead")

func (d *dying) check() error {
	if d.dead.Load() {
		return errDead
	}
	return nil
}

func (d *dying) Get(ctx context.Context, kind, key string) (store.Document, error) {
	if err := d.check(); err != nil {
		return store.Document{}, err
	}
	return d.Backend.Get(ctx, kind, key)
}

func (d *dying) List(ctx context.Context, kind string, opts store.ListOptions) (store.ListResult, error) {
	if err := d.check(); err != nil {
		return store.ListResult{}, err
	}
	return d.Backend.List(ctx, kind, opts)
}

func (d *dying) Watch(ctx context.Context, kind string, from int64) (store.Watch, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	return d.Backend.Watch(ctx, kind, from)
}

func (d *dying) UpdateSpec(ctx context.Context, doc store.Document) (store.Document, error) {
	if err := d.check(); err != nil {
		return store.Document{}, err
	}
	return d.Backend.UpdateSpec(ctx, doc)
}

func (d *dying) Delete(ctx context.Context, kind, key string, opts store.DeleteOptions) error {
	if d.freeze != nil && d.froze.CompareAndSwap(false, true) {
		d.dead.Store(true)
		<-d.freeze
		err := d.Backend.Delete(context.WithoutCancel(ctx), kind, key, opts)
		d.frozen <- err
		return err
	}
	if err := d.check(); err != nil {
		return err
	}
	err := d.Backend.Delete(ctx, kind, key, opts)
	if err == nil {
		d.deletes.Add(1)
		d.ledger.record(kind, key, opts.UID)
	}
	return err
}

func (d *dying) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (store.Lease, error) {
	if err := d.check(); err != nil {
		return store.Lease{}, err
	}
	return d.Backend.AcquireLease(ctx, name, holder, ttl)
}

func (d *dying) RenewLease(ctx context.Context, l store.Lease) (store.Lease, error) {
	if err := d.check(); err != nil {
		return store.Lease{}, err
	}
	return d.Backend.RenewLease(ctx, l)
}

func (d *dying) ReleaseLease(ctx context.Context, l store.Lease) error {
	if err := d.check(); err != nil {
		return err
	}
	return d.Backend.ReleaseLease(ctx, l)
}

func (d *dying) ListLeases(ctx context.Context, prefix string) ([]store.Lease, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	return d.Backend.ListLeases(ctx, prefix)
}

// Two replicas run the cascade garbage collector under managers that elect
// a leader or shard the keys, each on its own connection pool to one
// schema. One dies when the cascade has made its third delete, in the
// middle of a foreground cascade; the other takes its leases and work over
// and completes it: dependents go before their owners, no document is
// deleted twice, and a dependent with another owner stays with that owner
// alone.
func TestCascadeFailover(t *testing.T) {
	for _, mode := range []manager.Mode{manager.LeaderElection, manager.Sharded} {
		t.Run(mode.String(), func(t *testing.T) {
			ctx := t.Context()
			kinds := []string{"Gateway", "Route", "Secret"}
			schema := newSchema(t, newPool(t))
			s := newStore(t, postgres.Config{Schema: schema, Kinds: kinds, Logger: nopLogger})
			create := func(kind, key string, owners ...store.Document) store.Document {
				t.Helper()
				var refs []store.OwnerRef
				for _, o := range owners {
					refs = append(refs, store.OwnerRef{Kind: o.Meta.Kind, Key: o.Meta.Key, UID: o.Meta.UID, BlockOwnerDeletion: o.Meta.Kind != "Gateway" || o.Meta.Key == "g"})
				}
				doc, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: kind, Key: key, Owners: refs}})
				if err != nil {
					t.Fatal(err)
				}
				return doc
			}
			g := create("Gateway", "g")
			keep := create("Gateway", "keep")
			const n = 10
			for i := range n {
				r := create("Route", fmt.Sprintf("r%02d", i), g)
				create("Secret", fmt.Sprintf("s%02d", i), r)
			}
			create("Route", "shared", g, keep)

			deletes := &ledger{crashAt: 3}
			var replicas []*dying
			var managers []*manager.Manager
			for _, id := range []string{"a", "b"} {
				d := &dying{Backend: newStore(t, postgres.Config{Schema: schema, Kinds: kinds, Logger: nopLogger}), ledger: deletes}
				if id == "a" {
					deletes.victim = d
				}
				c, err := cascade.NewController(cascade.Config{Backend: d, Workers: 2})
				if err != nil {
					t.Fatal(err)
				}
				m, err := manager.New(manager.Config{
					Controllers:   []*controller.Controller{c},
					Mode:          mode,
					Leaser:        d,
					Identity:      id,
					LeaseDuration: 3 * time.Second,
					RenewPeriod:   time.Second,
					Shards:        8,
				})
				if err != nil {
					t.Fatal(err)
				}
				runCtx, stop := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- m.Run(runCtx) }()
				t.Cleanup(func() {
					stop()
					if err := <-done; err != nil {
						t.Errorf("replica %s: Run: %v", id, err)
					}
				})
				replicas, managers = append(replicas, d), append(managers, m)
				waitFor(t, 30*time.Second, "replica "+id+" to start", func() bool {
					switch mode {
					case manager.LeaderElection:
						return managers[0].IsLeader()
					default:
						return len(m.OwnedShards()) > 0 && (len(managers) == 1 || len(managers[0].OwnedShards()) < 8)
					}
				})
			}
			a, b := replicas[0], replicas[1]

			from := g.Meta.Revision
			if err := cascade.Delete(ctx, s, "Gateway", "g", cascade.Foreground); err != nil {
				t.Fatal(err)
			}
			names := func() []string {
				var out []string
				for _, k := range kinds {
					res, err := s.List(ctx, k, store.ListOptions{})
					if err != nil {
						t.Fatal(err)
					}
					for _, d := range res.Items {
						out = append(out, k+"/"+d.Meta.Key)
					}
				}
				return out
			}
			want := []string{"Gateway/keep", "Route/shared"}
			waitFor(t, 60*time.Second, "the cascade to complete", func() bool { return slices.Equal(names(), want) })
			if !a.dead.Load() {
				t.Fatalf("replica a did not die: the cascade made %d deletes", deletes.total.Load())
			}
			if b.deletes.Load() == 0 {
				t.Fatal("replica b deleted nothing")
			}
			waitFor(t, 30*time.Second, "replica b to take every lease over", func() bool {
				if mode == manager.LeaderElection {
					return managers[1].IsLeader()
				}
				return len(managers[1].OwnedShards()) == 8
			})
			shared, err := s.Get(ctx, "Route", "shared")
			if err != nil {
				t.Fatal(err)
			}
			if len(shared.Meta.Owners) != 1 || shared.Meta.Owners[0].UID != keep.Meta.UID {
				t.Errorf("Route/shared owners = %+v, want Gateway/keep alone", shared.Meta.Owners)
			}
			if twice := deletes.twice(); len(twice) > 0 {
				t.Errorf("deleted more than once: %v", twice)
			}

			// Removal order: each secret before its route, each route
			// before the gateway.
			gone := map[string]int64{}
			for _, k := range kinds {
				w, err := s.Watch(ctx, k, from)
				if err != nil {
					t.Fatal(err)
				}
				for {
					wctx, cancel := context.WithTimeout(ctx, time.Second)
					ev, err := w.Next(wctx)
					cancel()
					if err != nil {
						break
					}
					if ev.Type == store.Deleted {
						gone[k+"/"+ev.Document.Meta.Key] = ev.Revision
					}
				}
				w.Close()
			}
			for i := range n {
				r, sec := fmt.Sprintf("Route/r%02d", i), fmt.Sprintf("Secret/s%02d", i)
				for _, before := range [][2]string{{sec, r}, {r, "Gateway/g"}} {
					if gone[before[0]] == 0 || gone[before[0]] > gone[before[1]] {
						t.Errorf("%s removed at %d, %s at %d: want the dependent first", before[0], gone[before[0]], before[1], gone[before[1]])
					}
				}
			}
			t.Logf("deletes: a %d before it died, b %d", a.deletes.Load(), b.deletes.Load())
		})
	}
}

// waitFor polls cond until it holds, failing the test after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A leader frozen in the middle of a delete loses its lease and the other
// replica completes the cascade; when the frozen delete reaches the server
// at last, the server refuses it: its fence is no longer the lease's.
func TestCascadeFencedWriteOfDeposedLeader(t *testing.T) {
	ctx := t.Context()
	kinds := []string{"Gateway", "Route"}
	schema := newSchema(t, newPool(t))
	s := newStore(t, postgres.Config{Schema: schema, Kinds: kinds, Logger: nopLogger})
	g, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Gateway", Key: "g"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Route", Key: fmt.Sprint("r", i),
			Owners: []store.OwnerRef{{Kind: "Gateway", Key: "g", UID: g.Meta.UID, BlockOwnerDeletion: true}}}}); err != nil {
			t.Fatal(err)
		}
	}
	var replicas []*dying
	var managers []*manager.Manager
	for _, id := range []string{"a", "b"} {
		d := &dying{Backend: newStore(t, postgres.Config{Schema: schema, Kinds: kinds, Logger: nopLogger}), ledger: &ledger{}}
		if id == "a" {
			d.freeze, d.frozen = make(chan struct{}), make(chan error, 1)
		}
		c, err := cascade.NewController(cascade.Config{Backend: d})
		if err != nil {
			t.Fatal(err)
		}
		m, err := manager.New(manager.Config{
			Controllers:   []*controller.Controller{c},
			Mode:          manager.LeaderElection,
			Leaser:        d,
			Identity:      id,
			LeaseDuration: 3 * time.Second,
			RenewPeriod:   time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- m.Run(runCtx) }()
		t.Cleanup(func() {
			stop()
			if err := <-done; err != nil {
				t.Errorf("replica %s: Run: %v", id, err)
			}
		})
		replicas, managers = append(replicas, d), append(managers, m)
		waitFor(t, 30*time.Second, "replica a to lead", managers[0].IsLeader)
	}
	a := replicas[0]
	t.Cleanup(func() {
		if !a.froze.Load() {
			return
		}
		select {
		case <-a.freeze:
		default:
			close(a.freeze) // let the frozen delete end, so its replica stops
		}
	})

	if err := cascade.Delete(ctx, s, "Gateway", "g", cascade.Foreground); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the other replica to complete the cascade", func() bool {
		res, err := s.List(ctx, "Route", store.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Get(ctx, "Gateway", "g")
		return len(res.Items) == 0 && errors.Is(err, store.ErrNotFound)
	})
	if !a.froze.Load() {
		t.Fatal("replica a never deleted anything")
	}
	close(a.freeze)
	if err := <-a.frozen; !errors.Is(err, store.ErrFenced) {
		t.Errorf("the deposed leader's delete = %v, want ErrFenced", err)
	}
}
