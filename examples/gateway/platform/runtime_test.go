package platform

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/manager"

	"go.uber.org/goleak"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/examples/gateway/infra"
	"github.com/tendhq/tend/registry"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is one store and one simulated infrastructure, shared by the
// platforms (replicas, or a platform and its successor after a crash) that
// run on it.
type env struct {
	t   testing.TB
	st  *memory.Store
	sim *infra.Sim
}

func newEnv(t testing.TB, cfg infra.SimConfig) *env {
	// The registry's kind is listed: a platform on a store that wraps
	// this one (deadStore) cannot give it kinds.
	st, err := memory.New(memory.Config{Kinds: append(Kinds(), registry.Kinds()...)})
	if err != nil {
		t.Fatal(err)
	}
	sim, err := infra.NewSim(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, st: st, sim: sim}
}

// running is a platform running in the background.
type running struct {
	*Platform
	stop func() // cancels Run and waits for it to return
}

// start runs a platform on the env; observe, when not nil, sees every step.
func (e *env) start(mc manager.Config, observe func(stepEvent)) *running {
	return e.startOn(e.st, e.sim, e.sim, mc, observe)
}

func (e *env) startOn(st store.Backend, c infra.Cluster, dbs infra.Databases, mc manager.Config, observe func(stepEvent)) *running {
	p, err := New(Config{Store: st, Cluster: c, Databases: dbs, Manager: mc, Poll: 20 * time.Millisecond})
	if err != nil {
		e.t.Fatal(err)
	}
	p.observe = observe
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	return &running{Platform: p, stop: func() {
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("run: %v", err)
		}
	}}
}

// waitFor polls cond every 10ms of (fake) time until it holds, for at most
// ten minutes.
func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	for range 60_000 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.t.Fatalf("timed out waiting for %s", what)
}

// settled reports whether gateway id has settled in intent (or is gone, for
// Deleted).
func (e *env) settled(p *Platform, id string, intent GatewayState) bool {
	gw, err := p.docs.Gateways.Get(context.Background(), id)
	if errors.Is(err, store.ErrNotFound) {
		return intent == Deleted
	}
	if err != nil || gw.Status.Phase == "" || gw.Spec.State != intent {
		return false
	}
	m, err := GatewayMachine()
	if err != nil {
		e.t.Fatal(err)
	}
	dec, err := m.Decide(intent, gw.Status.Status, time.Now())
	return err == nil && dec.Action == sm.Nothing
}

// populate creates gateway id with user documents, and its client apps once
// it is created.
func (e *env) populate(p *Platform, id string) {
	ctx := context.Background()
	gw, err := p.CreateGateway(ctx, id, GatewaySpec{State: Running, CustomDomain: id + ".example.com"})
	if err != nil {
		e.t.Fatal(err)
	}
	for i := range 2 {
		if err := p.AddCloudFunction(ctx, gw, fmt.Sprint("fn-", i), CloudFunctionSpec{Runtime: "go"}); err != nil {
			e.t.Fatal(err)
		}
		if err := p.AddCronTrigger(ctx, gw, fmt.Sprint("tr-", i), CronTriggerSpec{Function: "fn-0", Schedule: "@hourly"}); err != nil {
			e.t.Fatal(err)
		}
	}
	e.waitFor(id+" Started", func() bool { return e.settled(p, id, Running) })
	for _, s := range Stages {
		if err := p.AddClientApp(ctx, gw, s, "web", ClientAppSpec{Name: "web"}); err != nil {
			e.t.Fatal(err)
		}
	}
}

// checkClean requires the spec's invariants of a deleted gateway.
func (e *env) checkClean(p *Platform, id string) {
	e.t.Helper()
	if err := CheckOrder(e.sim.Ops()); err != nil {
		e.t.Error(err)
	}
	left, err := p.Leftovers(context.Background(), id, e.sim.Resources(), e.sim.DatabaseNames())
	if err != nil || len(left) > 0 {
		e.t.Errorf("%s removed but %v remain (err %v)", id, left, err)
	}
}

// TestCrashResume stops the controllers at every step of the cascade in
// turn, once just before the step acts and once just after it finished but
// before its checkpoint is written, then starts a new platform on the same
// store. The new one must resume: no step recorded done runs again, and every
// remaining step runs, in order.
func TestCrashResume(t *testing.T) {
	for k, crashAt := range CascadeSteps {
		for _, after := range []bool{false, true} {
			name := fmt.Sprintf("%d-%s-before", k+1, crashAt)
			if after {
				name = fmt.Sprintf("%d-%s-after", k+1, crashAt)
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { crashResume(t, k, after) })
			})
		}
	}
}

// crash is a process's death: once it is set, every write the process makes
// to the store and every change it asks of the infrastructure fails, so
// nothing it does after the crash point takes effect.
type crash struct{ atomic.Bool }

var errCrashed = errors.New("process crashed")

func (c *crash) check() error {
	if c.Load() {
		return errCrashed
	}
	return nil
}

// deadStore is the store as a process that may crash sees it.
type deadStore struct {
	store.Backend
	c *crash
}

func (d deadStore) Create(ctx context.Context, doc store.Document) (store.Document, error) {
	if err := d.c.check(); err != nil {
		return store.Document{}, err
	}
	return d.Backend.Create(ctx, doc)
}

func (d deadStore) UpdateSpec(ctx context.Context, doc store.Document) (store.Document, error) {
	if err := d.c.check(); err != nil {
		return store.Document{}, err
	}
	return d.Backend.UpdateSpec(ctx, doc)
}

func (d deadStore) UpdateStatus(ctx context.Context, doc store.Document) (store.Document, error) {
	if err := d.c.check(); err != nil {
		return store.Document{}, err
	}
	return d.Backend.UpdateStatus(ctx, doc)
}

func (d deadStore) Delete(ctx context.Context, kind, key string, opts store.DeleteOptions) error {
	if err := d.c.check(); err != nil {
		return err
	}
	return d.Backend.Delete(ctx, kind, key, opts)
}

// deadInfra is the infrastructure as a process that may crash sees it.
type deadInfra struct {
	*infra.Sim
	c *crash
}

func (d deadInfra) Apply(ctx context.Context, r infra.Resource) error {
	if err := d.c.check(); err != nil {
		return err
	}
	return d.Sim.Apply(ctx, r)
}

func (d deadInfra) Delete(ctx context.Context, ref infra.Ref) error {
	if err := d.c.check(); err != nil {
		return err
	}
	return d.Sim.Delete(ctx, ref)
}

func (d deadInfra) EnsureDatabase(ctx context.Context, db infra.Database) error {
	if err := d.c.check(); err != nil {
		return err
	}
	return d.Sim.EnsureDatabase(ctx, db)
}

func (d deadInfra) DropDatabase(ctx context.Context, db infra.Database) error {
	if err := d.c.check(); err != nil {
		return err
	}
	return d.Sim.DropDatabase(ctx, db)
}

func crashResume(t *testing.T, k int, after bool) {
	e := newEnv(t, infra.SimConfig{ReadyDelay: 100 * time.Millisecond, DeleteDelay: 100 * time.Millisecond})
	const id = "gw-1"
	var mu sync.Mutex // guards ran, and the crash decision
	crashed := new(crash)
	di := deadInfra{Sim: e.sim, c: crashed}
	first := e.startOn(deadStore{Backend: e.st, c: crashed}, di, di, manager.Config{}, func(ev stepEvent) {
		mu.Lock()
		defer mu.Unlock()
		if ev.Kind != KindApiGateway || ev.Step != CascadeSteps[k] || crashed.Load() {
			return
		}
		if (!after && ev.Outcome == 0) || (after && ev.Outcome == sm.Done) {
			crashed.Store(true)
		}
	})
	ctx := context.Background()
	e.populate(first.Platform, id)
	if _, err := first.SetGatewayState(ctx, id, Deleted); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the crash", crashed.Load)
	first.stop()

	gw, err := first.docs.Gateways.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if gw.Status.Phase != GatewayDeleting || gw.Status.Operation == nil {
		t.Fatalf("crashed in phase %s, want Deleting", gw.Status.Phase)
	}
	done := gw.Status.Operation.Done
	if !slices.Equal(done, CascadeSteps[:len(done)]) || len(done) < k || len(done) > k+1 || (!after && len(done) != k) {
		t.Fatalf("checkpoint at the crash is %v, want the %d steps before %s", done, k, CascadeSteps[k])
	}

	var ran []string // the gateway steps the second platform started, in order
	second := e.start(manager.Config{}, func(ev stepEvent) {
		mu.Lock()
		defer mu.Unlock()
		if ev.Kind == KindApiGateway && ev.Outcome == 0 && (len(ran) == 0 || ran[len(ran)-1] != ev.Step) {
			ran = append(ran, ev.Step)
		}
	})
	e.waitFor(id+" removed", func() bool { return e.settled(second.Platform, id, Deleted) })
	second.stop()

	if want := CascadeSteps[len(done):]; !slices.Equal(ran, want) {
		t.Errorf("after the crash the steps ran %v, want %v (done before the crash: %v)", ran, want, done)
	}
	e.checkClean(second.Platform, id)
}

// TestReplicas runs three replicas sharding the keys of one store; one of
// them dies halfway. No step of one document may run in two replicas at
// once, the work must be shared, and every gateway must converge.
func TestReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, infra.SimConfig{ReadyDelay: 50 * time.Millisecond, DeleteDelay: 50 * time.Millisecond,
			Latency: time.Millisecond, FailureRate: 0.1, Seed: 42})
		var mu sync.Mutex // guards inFlight, perReplica and overlaps
		inFlight := map[string]string{}
		perReplica := map[string]int{}
		var overlaps []string
		observe := func(replica string) func(stepEvent) {
			return func(ev stepEvent) {
				mu.Lock()
				defer mu.Unlock()
				key := ev.Kind + "/" + ev.Key
				if ev.Outcome != 0 {
					delete(inFlight, key)
					return
				}
				if other, ok := inFlight[key]; ok {
					overlaps = append(overlaps, fmt.Sprintf("%s: step %s in %s while %s runs one", key, ev.Step, replica, other))
				}
				inFlight[key] = replica
				perReplica[replica]++
			}
		}
		var replicas []*running
		for i := range 3 {
			id := fmt.Sprint("replica-", i+1)
			replicas = append(replicas, e.start(manager.Config{Mode: manager.Sharded, Identity: id,
				LeaseDuration: 2 * time.Second, Shards: 16}, observe(id)))
		}
		p := replicas[0].Platform
		ids := []string{"gw-1", "gw-2", "gw-3", "gw-4", "gw-5", "gw-6"}
		for _, id := range ids {
			e.populate(p, id)
		}
		replicas[2].stop()
		want := map[string]GatewayState{"gw-2": Stopped, "gw-3": Restarting, "gw-4": Deleted, "gw-5": Deleted}
		for id, s := range want {
			if _, err := p.SetGatewayState(context.Background(), id, s); err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range ids {
			intent := cmpOr(want[id], Running)
			e.waitFor(id+" settled in "+string(intent), func() bool { return e.settled(p, id, intent) })
		}
		replicas[0].stop()
		replicas[1].stop()
		for _, id := range []string{"gw-4", "gw-5"} {
			e.checkClean(p, id)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, o := range overlaps {
			t.Error(o)
		}
		if len(perReplica) < 2 {
			t.Errorf("one replica did all the work: %v", perReplica)
		}
	})
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
