package platform

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/examples/gateway/infra"
	sm "github.com/tendhq/tend/statemachine"
)

// countingCluster counts the calls made to the cluster it wraps.
type countingCluster struct {
	infra.Cluster

	mu            sync.Mutex // guards gets and deletes
	gets, deletes int
}

func (c *countingCluster) Get(ctx context.Context, ref infra.Ref) (infra.Observed, error) {
	c.mu.Lock()
	c.gets++
	c.mu.Unlock()
	return c.Cluster.Get(ctx, ref)
}

func (c *countingCluster) Delete(ctx context.Context, ref infra.Ref) error {
	c.mu.Lock()
	c.deletes++
	c.mu.Unlock()
	return c.Cluster.Delete(ctx, ref)
}

// calls returns the counts since the last call, and starts them over.
func (c *countingCluster) calls() (gets, deletes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gets, deletes = c.gets, c.deletes
	c.gets, c.deletes = 0, 0
	return gets, deletes
}

// A step that removes resources asks for each deletion once, then only
// reads while it waits: every call an attempt makes must succeed for the
// attempt to, so a call made without need only makes the step likelier to
// fail and its backoff to grow.
func TestRemoveResourcesAsksOnceThenReads(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	sim, err := infra.NewSim(infra.SimConfig{DeleteDelay: time.Minute, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	gw := "gw-1"
	for _, ref := range []infra.Ref{namespaceRef(gw), deploymentRef(gw), serviceRef(gw)} {
		if err := sim.Apply(ctx, resource(gw, ref, nil)); err != nil {
			t.Fatal(err)
		}
	}
	c := &countingCluster{Cluster: sim}
	p := &Platform{cluster: c}
	refs := []infra.Ref{deploymentRef(gw), serviceRef(gw)}

	steps := []struct {
		name          string
		before        func()
		want          sm.Outcome
		gets, deletes int
	}{
		{"both present: deletion asked for", nil, sm.Progressed, 2, 2},
		{"both Terminating: only read", nil, sm.Progressed, 2, 0},
		{"both gone: done after reading them", func() { now = now.Add(time.Minute) }, sm.Done, 2, 0},
		{"gone already: done, nothing asked", nil, sm.Done, 2, 0},
	}
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		out, err := p.removeResources(ctx, refs...)
		if err != nil || out != s.want {
			t.Fatalf("%s: removeResources = %v, %v; want %v", s.name, out, err, s.want)
		}
		if gets, deletes := c.calls(); gets != s.gets || deletes != s.deletes {
			t.Errorf("%s: %d reads and %d deletions, want %d and %d", s.name, gets, deletes, s.gets, s.deletes)
		}
	}
}

// A resource that exists again after its deletion (made anew) is deleted
// again; a failed call fails the step, to be retried with backoff.
func TestRemoveResourcesDeletesWhatReturnsAndFails(t *testing.T) {
	ctx := t.Context()
	sim, err := infra.NewSim(infra.SimConfig{})
	if err != nil {
		t.Fatal(err)
	}
	gw := "gw-1"
	for _, ref := range []infra.Ref{namespaceRef(gw), routeRef(gw, "dev")} {
		if err := sim.Apply(ctx, resource(gw, ref, nil)); err != nil {
			t.Fatal(err)
		}
	}
	c := &countingCluster{Cluster: sim}
	p := &Platform{cluster: c}
	ref := routeRef(gw, "dev")
	if out, err := p.removeResources(ctx, ref); err != nil || out != sm.Progressed {
		t.Fatalf("first call: %v, %v; want Progressed", out, err)
	}
	if out, err := p.removeResources(ctx, ref); err != nil || out != sm.Done {
		t.Fatalf("once gone: %v, %v; want Done", out, err)
	}
	if err := sim.Apply(ctx, resource(gw, ref, nil)); err != nil {
		t.Fatal(err)
	}
	c.calls()
	if out, err := p.removeResources(ctx, ref); err != nil || out != sm.Progressed {
		t.Fatalf("made anew: %v, %v; want Progressed", out, err)
	}
	if _, deletes := c.calls(); deletes != 1 {
		t.Errorf("made anew: %d deletions, want 1", deletes)
	}
	if err := sim.Apply(ctx, resource(gw, ref, nil)); err != nil {
		t.Fatal(err)
	}
	sim.SetFailureRate(1)
	if out, err := p.removeResources(ctx, ref); err == nil || out != sm.Failed {
		t.Fatalf("every call failing: %v, %v; want Failed with the error", out, err)
	}
}

// A failing step's retries follow the backoff up to Config.MaxBackoff, and
// no further: the platform gives its cap to the drivers.
func TestMaxBackoffCapsStepRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, infra.SimConfig{FailureRate: 1})
		const maxBackoff = 100 * time.Millisecond
		p, err := New(Config{Store: e.st, Cluster: e.sim, Databases: e.sim, Poll: 20 * time.Millisecond, MaxBackoff: maxBackoff})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var calls []time.Time
		p.observe = func(ev stepEvent) {
			if ev.Outcome == 0 && ev.Step == StepCreateNamespace {
				mu.Lock()
				calls = append(calls, time.Now())
				mu.Unlock()
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		if _, err := p.CreateGateway(ctx, "gw-1", GatewaySpec{State: Running}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		// 5, 10, 20, 40, 80 ms, then 100 ms: about 20 calls in 2 s, where
		// the default cap of 2 s would allow 10.
		if len(calls) < 15 {
			t.Fatalf("%d calls of the failing step in 2 s, want the retries capped at %v", len(calls), maxBackoff)
		}
		for i := 1; i < len(calls); i++ {
			want := min(5*time.Millisecond<<(i-1), maxBackoff)
			if gap := calls[i].Sub(calls[i-1]); gap != want {
				t.Errorf("retry %d came %v after the call before, want %v", i, gap, want)
			}
		}
	})
}
