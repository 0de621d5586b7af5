package controller_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tendhq/tend/manager"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/store"
)

// A controller fed by a channel: each key sent is reconciled, in order with
// one worker.
func Example() {
	ctx, stop := context.WithCancel(context.Background())
	keys := make(chan string, 2)
	keys <- "team-a/gw-1"
	keys <- "team-b/gw-2"

	c, err := controller.New(controller.Config{
		Name: "gateways",
		Reconciler: controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
			fmt.Println("reconciling", key)
			if key == "team-b/gw-2" {
				stop()
			}
			return controller.Result{}, nil
		}),
		Sources: []controller.Source{controller.Channel(keys)},
	})
	if err != nil {
		panic(err)
	}
	if err := c.Run(ctx); err != nil {
		panic(err)
	}
	// Output:
	// reconciling team-a/gw-1
	// reconciling team-b/gw-2
}

// A controller watching a kind of a store: it copies each document's intent
// into its status, the smallest possible reconcile.
func ExampleFor() {
	ctx, stop := context.WithCancel(context.Background())
	s, err := memory.New(memory.Config{Kinds: []string{"Widget"}})
	if err != nil {
		panic(err)
	}
	for _, key := range []string{"a", "b"} {
		if _, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: key}, Spec: []byte(`{"size":1}`)}); err != nil {
			panic(err)
		}
	}

	c, err := controller.New(controller.Config{
		Name: "widgets",
		Reconciler: controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
			d, err := s.Get(ctx, "Widget", key)
			if errors.Is(err, store.ErrNotFound) {
				return controller.Result{}, nil // deleted: nothing to do
			}
			if err != nil {
				return controller.Result{}, err
			}
			if string(d.Status) == string(d.Spec) {
				fmt.Println(key, "is up to date")
				if key == "b" {
					stop()
				}
				return controller.Result{}, nil
			}
			d.Status = d.Spec
			_, err = s.UpdateStatus(ctx, d) // a conflict is retried with backoff
			fmt.Println(key, "updated")
			return controller.Result{}, err
		}),
		Sources: []controller.Source{controller.For(s, "Widget")},
	})
	if err != nil {
		panic(err)
	}
	if err := c.Run(ctx); err != nil {
		panic(err)
	}
	// Output:
	// a updated
	// b updated
	// a is up to date
	// b is up to date
}

// A reconcile that can never succeed returns a terminal error: it is logged
// and counted, and the key is not retried until it is queued again.
func ExampleTerminal() {
	err := fmt.Errorf("gateway team-a/gw-1: %w", controller.Terminal(errors.New("unknown region mars-1")))
	fmt.Println(err)
	fmt.Println(errors.Is(err, controller.ErrTerminal))
	// Output:
	// gateway team-a/gw-1: terminal: unknown region mars-1
	// true
}

// A sharded manager: this replica is alone, so it takes every shard, and
// each reconcile carries the fence of its key's shard lease.
func ExampleManager() {
	ctx, stop := context.WithCancel(context.Background())
	s, err := memory.New(memory.Config{Kinds: []string{"Widget"}})
	if err != nil {
		panic(err)
	}
	keys := []string{"team-a/gw-1", "team-a/gw-2", "team-b/gw-1", "team-b/gw-2"}
	for _, key := range keys {
		if _, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: key}, Spec: []byte(`{}`)}); err != nil {
			panic(err)
		}
	}

	var mu sync.Mutex // guards seen
	seen := map[string]string{}
	c, err := controller.New(controller.Config{
		Name: "widgets",
		Reconciler: controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
			fence, _ := store.FenceFrom(ctx)
			mu.Lock()
			defer mu.Unlock()
			seen[key] = fence.Lease
			if len(seen) == len(keys) {
				stop()
			}
			return controller.Result{}, nil
		}),
		Sources: []controller.Source{controller.For(s, "Widget")},
	})
	if err != nil {
		panic(err)
	}
	m, err := manager.New(manager.Config{
		Controllers: []*controller.Controller{c},
		Mode:        manager.Sharded,
		Leaser:      s,
		Identity:    "replica-1",
		Shards:      4,
	})
	if err != nil {
		panic(err)
	}
	if err := m.Run(ctx); err != nil {
		panic(err)
	}
	for _, key := range slices.Sorted(maps.Keys(seen)) {
		fmt.Printf("%s in shard %d, fenced by %s\n", key, manager.ShardOf(key, 4), seen[key])
	}
	leases, _ := s.ListLeases(context.Background(), "")
	fmt.Println("leases held after Run:", len(leases))
	// Output:
	// team-a/gw-1 in shard 3, fenced by shard/3
	// team-a/gw-2 in shard 2, fenced by shard/2
	// team-b/gw-1 in shard 0, fenced by shard/0
	// team-b/gw-2 in shard 1, fenced by shard/1
	// leases held after Run: 0
}

// A replica's health over HTTP, as Kubernetes' probes and Prometheus read it.
// A replica standing by for the lead is ready; it leads as soon as it takes
// the leader lease, and the leader gauge follows.
func ExampleManager_Handler() {
	s, err := memory.New(memory.Config{Kinds: []string{"Widget"}})
	if err != nil {
		panic(err)
	}
	reg := prometheus.NewRegistry()
	c, err := controller.New(controller.Config{
		Name: "widgets",
		Reconciler: controller.ReconcilerFunc(func(context.Context, string) (controller.Result, error) {
			return controller.Result{}, nil
		}),
		Sources:           []controller.Source{controller.For(s, "Widget")},
		MetricsRegisterer: reg,
	})
	if err != nil {
		panic(err)
	}
	changes := make(chan manager.Leadership, 2)
	m, err := manager.New(manager.Config{
		Controllers:        []*controller.Controller{c},
		Mode:               manager.LeaderElection,
		Leaser:             s,
		Identity:           "replica-1",
		MetricsRegisterer:  reg,
		OnLeadershipChange: func(l manager.Leadership) { changes <- l },
	})
	if err != nil {
		panic(err)
	}
	h := m.Handler(manager.HandlerConfig{Gatherer: reg})
	show := func(path string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		fmt.Println("GET", path, rec.Code)
		for line := range strings.Lines(rec.Body.String()) {
			if path != "/metrics" || strings.HasPrefix(line, "leader_election_master_status{") {
				fmt.Println(" ", strings.TrimSpace(line))
			}
		}
	}
	show("/readyz")

	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	fmt.Printf("changed: %+v\n", <-changes)
	for m.CheckReadiness() != nil { // until the sources have listed
		time.Sleep(10 * time.Millisecond)
	}
	show("/readyz")
	show("/healthz?verbose")
	show("/metrics")
	stop()
	if err := <-done; err != nil {
		panic(err)
	}
	fmt.Printf("changed: %+v\n", <-changes)
	// Output:
	// GET /readyz 503
	//   [-]running failed: the manager is not running
	//   [+]sources ok
	//   readyz check failed
	// changed: {Leader:true Shards:[]}
	// GET /readyz 200
	//   ok
	// GET /healthz?verbose 200
	//   [+]reconciles ok
	//   [+]leases ok
	//   healthz check passed
	// GET /metrics 200
	//   leader_election_master_status{name="leader"} 1
	// changed: {Leader:false Shards:[]}
}

// The main function of a replica: the manager and its health endpoints run
// until the process is interrupted, and both have stopped when main returns.
func ExampleManager_Serve() {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()

	reg := prometheus.NewRegistry()
	c, err := controller.New(controller.Config{
		Name: "widgets",
		Reconciler: controller.ReconcilerFunc(func(context.Context, string) (controller.Result, error) {
			return controller.Result{}, nil
		}),
		MetricsRegisterer: reg,
	})
	if err != nil {
		panic(err)
	}
	m, err := manager.New(manager.Config{
		Controllers:       []*controller.Controller{c},
		MetricsRegisterer: reg,
	})
	if err != nil {
		panic(err)
	}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.Run(ctx) })
	g.Go(func() error { return m.Serve(ctx, ":8080", manager.HandlerConfig{Gatherer: reg}) })
	if err := g.Wait(); err != nil {
		fmt.Println(err)
	}
}
