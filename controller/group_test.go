package controller_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/controller"
)

// tenant groups a key by its prefix before the first "/".
func tenant(key string) string {
	t, _, _ := strings.Cut(key, "/")
	return t
}

// smallTenantsDone queues a backlog of big keys of tenant "big", then ten
// keys of each of nine small tenants, with one worker, and returns, per
// small tenant, how many reconciles had run when its last key was done.
func smallTenantsDone(t *testing.T, big int, group func(string) string) map[string]int {
	done := map[string]int{}
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex // guards n, left and done
		n := 0
		left := map[string]int{}
		release := make(chan struct{})
		var e controller.Enqueuer
		ready := make(chan struct{})
		c, err := controller.New(controller.Config{
			Name:  "tenants",
			Group: group,
			Reconciler: controller.ReconcilerFunc(func(_ context.Context, key string) (controller.Result, error) {
				if key == "hold" {
					<-release
				}
				mu.Lock()
				defer mu.Unlock()
				n++
				tn := tenant(key)
				if left[tn]--; left[tn] == 0 && tn != "big" {
					done[tn] = n
				}
				return controller.Result{}, nil
			}),
			Sources: []controller.Source{controller.SourceFunc(func(ctx context.Context, en controller.Enqueuer) error {
				e = en
				close(ready)
				<-ctx.Done()
				return nil
			})},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(t.Context())
		stopped := run(c, ctx)
		<-ready
		e.Enqueue("hold", "test")
		synctest.Wait()
		mu.Lock()
		left["big"] = big
		for i := range 9 {
			left[fmt.Sprint("t", i)] = 10
		}
		mu.Unlock()
		for i := range big {
			e.Enqueue(fmt.Sprint("big/", i), "backlog")
		}
		for i := range 9 {
			for j := range 10 {
				e.Enqueue(fmt.Sprint("t", i, "/", j), "small")
			}
		}
		close(release)
		synctest.Wait()
		stop()
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
	})
	return done
}

// TestGroups checks that with keys grouped by tenant, nine small tenants
// behind a 1,000-key backlog of another are done at their fair share: ten
// rounds of the ten groups, 100 reconciles after the one in flight.
func TestGroups(t *testing.T) {
	done := smallTenantsDone(t, 1000, tenant)
	if len(done) != 9 {
		t.Fatalf("small tenants done: %v, want 9", done)
	}
	for tn, n := range done {
		if n > 101 {
			t.Errorf("tenant %s done after %d reconciles, want at most 101", tn, n)
		}
	}
}

// TestGroupsCatchesIgnoredGroups plants a defect, a group function whose
// answer is lost (every key in one group), and checks that the fairness
// test sees it.
func TestGroupsCatchesIgnoredGroups(t *testing.T) {
	done := smallTenantsDone(t, 1000, func(string) string { return "" })
	late := 0
	for _, n := range done {
		if n > 101 {
			late++
		}
	}
	if late == 0 {
		t.Errorf("with groups ignored, small tenants done after %v reconciles: the test cannot tell", done)
	}
}

// maxInFlight runs 40 keys of one tenant with four workers and the cap
// perGroup, grouped by group, and returns how many of its reconciles ran
// at once at most.
func maxInFlight(t *testing.T, perGroup int, group func(string) string) int {
	most := 0
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex // guards now and most
		now := 0
		var ks []string
		for i := range 40 {
			ks = append(ks, fmt.Sprint("t/", i))
		}
		c, err := controller.New(controller.Config{
			Name:                "capped",
			Workers:             4,
			Group:               group,
			MaxInFlightPerGroup: perGroup,
			Reconciler: controller.ReconcilerFunc(func(context.Context, string) (controller.Result, error) {
				mu.Lock()
				now++
				most = max(most, now)
				mu.Unlock()
				time.Sleep(time.Second) // every other worker that can start does meanwhile
				mu.Lock()
				now--
				mu.Unlock()
				return controller.Result{}, nil
			}),
			Sources: []controller.Source{controller.Channel(keys(ks...))},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(t.Context())
		stopped := run(c, ctx)
		time.Sleep(time.Minute)
		stop()
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
	})
	return most
}

// TestMaxInFlightPerGroup checks that a group's reconciles never exceed its
// cap, whatever the workers, and plants a defect (a group function that
// puts each key in a group of its own) that the check must see.
func TestMaxInFlightPerGroup(t *testing.T) {
	if got := maxInFlight(t, 2, tenant); got != 2 {
		t.Errorf("at most %d reconciles of one tenant at once, want 2", got)
	}
	if got := maxInFlight(t, 2, func(k string) string { return k }); got <= 2 {
		t.Errorf("with every key in a group of its own, %d at once: the test cannot tell", got)
	}
}
