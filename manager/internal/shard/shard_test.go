package shard_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/manager/internal/lease"
	"github.com/tendhq/tend/manager/internal/shard"
)

// replica runs a Sharder until stop is called, which returns once Run has
// returned.
type replica struct {
	s    *shard.Sharder
	stop func()
}

func start(t *testing.T, mem *memory.Store, identity string, shards int) replica {
	t.Helper()
	k := lease.New(lease.Config{Leaser: mem, Identity: identity, Duration: 3 * time.Second, Renew: time.Second, Log: zap.NewNop()})
	s := shard.New(shard.Config{Leases: k, Shards: shards, Identity: identity, Log: zap.NewNop()})
	ctx, cancel := context.WithCancel(context.Background())
	var run sync.WaitGroup
	run.Go(func() { s.Run(ctx, ctx) })
	return replica{s: s, stop: func() { cancel(); run.Wait() }}
}

// TestBalance checks that replicas split the shards evenly and without
// overlap, that the keys admitted are those of the shards owned, and that
// the shards of a replica that stops are taken by the others.
func TestBalance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, err := memory.New(memory.Config{})
		if err != nil {
			t.Fatal(err)
		}
		const shards = 6
		a, b := start(t, mem, "a", shards), start(t, mem, "b", shards)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		ownedA, ownedB := a.s.Owned(), b.s.Owned()
		if len(ownedA) != 3 || len(ownedB) != 3 {
			t.Fatalf("two replicas own %v and %v of %d shards, want 3 each", ownedA, ownedB, shards)
		}
		for _, i := range ownedA {
			if slices.Contains(ownedB, i) {
				t.Fatalf("shard %d is owned by both replicas: %v and %v", i, ownedA, ownedB)
			}
		}
		if why := a.s.ShareMissing(); why != "" {
			t.Errorf("a replica holding its share reports: %s", why)
		}
		for _, key := range []string{"k1", "k2", "k3", "k4", "k5", "k6", "k7"} {
			own := slices.Contains(ownedA, shard.Of(key, shards))
			if a.s.Owns(key) != own {
				t.Errorf("Owns(%q) = %v, want %v", key, !own, own)
			}
			_, done, ok := a.s.Admit(context.Background(), key)
			if ok != own {
				t.Errorf("Admit(%q) admitted %v, want %v", key, ok, own)
			}
			if ok {
				done()
			}
		}
		b.stop()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if got := a.s.Owned(); len(got) != shards {
			t.Errorf("after the other replica stopped, the one left owns %v, want all %d", got, shards)
		}
		a.stop()
		if got := a.s.Owned(); got != nil {
			t.Errorf("a stopped replica still owns %v", got)
		}
	})
}
