package cascade_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/informer"
	"github.com/tendhq/tend/manager"
	"github.com/tendhq/tend/registry"

	"github.com/tendhq/tend/cascade"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// counted is a store that counts the watches it opens, by kind, and its
// reads.
type counted struct {
	store.Backend

	mu      sync.Mutex // guards the fields below
	watches map[string]int
	reads   int
}

func (c *counted) Watch(ctx context.Context, kind string, from int64) (store.Watch, error) {
	c.mu.Lock()
	c.watches[kind]++
	c.mu.Unlock()
	return c.Backend.Watch(ctx, kind, from)
}

// Get counts reads of documents; the Manager's reads of the machine
// registry (it looks for a newer machine once a renew period) are not the
// collector's.
func (c *counted) Get(ctx context.Context, kind, key string) (store.Document, error) {
	c.mu.Lock()
	if kind != registry.Kind {
		c.reads++
	}
	c.mu.Unlock()
	return c.Backend.Get(ctx, kind, key)
}

func (c *counted) List(ctx context.Context, kind string, opts store.ListOptions) (store.ListResult, error) {
	if opts.OwnerUID != "" {
		c.mu.Lock()
		c.reads++
		c.mu.Unlock()
	}
	return c.Backend.List(ctx, kind, opts)
}

func (c *counted) counts() (map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := make(map[string]int, len(c.watches))
	for k, n := range c.watches {
		w[k] = n
	}
	return w, c.reads
}

type lampSpec struct {
	State string `json:"state"`
}

func (s lampSpec) Intent() string { return s.State }

type lampStatus struct {
	statemachine.Status[string, string]
}

// A process running a driver of gateways and the garbage collector under
// one Manager, both given the manager's cache, opens one watch per kind:
// the collector shares the informers of the driver's source. A dependent whose owner is there costs
// the collector no read of the store: it reads the shared cache.
func TestOneWatchPerKindWithADriver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		s := &counted{Backend: w.s, watches: map[string]int{}}
		m, err := statemachine.New(statemachine.Definition[string, string]{
			Name:    "Gateway",
			States:  []string{"Up"},
			Initial: "Up",
			Phases:  []statemachine.PhaseSpec[string]{{Phase: "Up"}},
			Settled: []statemachine.Settle[string, string]{{State: "Up", Phase: "Up"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		gateways, err := store.NewCollection[lampSpec, lampStatus](s, "Gateway", store.CollectionConfig{})
		if err != nil {
			t.Fatal(err)
		}
		cache, err := informer.NewFactory(s, informer.FactoryConfig{})
		if err != nil {
			t.Fatal(err)
		}
		d, err := driver.New(gateways, m, driver.Config[lampSpec, lampStatus]{Cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		dc, err := controller.New(controller.Config{Name: "gateway", Reconciler: d, Sources: []controller.Source{d.Source()}})
		if err != nil {
			t.Fatal(err)
		}
		gc, err := cascade.NewController(cascade.Config{Backend: s, ResyncPeriod: -1, Cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		mgr, err := manager.New(manager.Config{Controllers: []*controller.Controller{dc, gc}, Informers: cache})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- mgr.Run(ctx) }()
		settle()

		w.create("Gateway/g")
		w.create("Route/r")
		w.create("Secret/s")
		settle()
		_, before := s.counts()
		w.own("Route/r", "Gateway/g")
		w.own("Secret/s", "Route/r")
		settle()
		if _, after := s.counts(); after != before {
			t.Errorf("%d store reads for dependents whose owners are there, want 0", after-before)
		}
		w.delete("Gateway/g", cascade.Background)
		settle()
		for _, name := range []string{"Route/r", "Secret/s"} {
			if w.exists(name) {
				t.Errorf("%s outlived its owner", name)
			}
		}
		watches, _ := s.counts()
		for _, k := range kinds {
			if watches[k] != 1 {
				t.Errorf("%d watches of %s, want 1 (all: %v)", watches[k], k, watches)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
