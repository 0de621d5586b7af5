package manager_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/driver"
	"github.com/tendhq/tend/internal/evolvetest"
	"github.com/tendhq/tend/manager"
	"github.com/tendhq/tend/registry"
	"github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// serviceReplica is a Manager running one driver of Services.
type serviceReplica struct {
	m     *manager.Manager
	d     *driver.Driver[evolvetest.Spec, evolvetest.Status]
	mu    sync.Mutex
	steps []string // the steps it called, as "key/step"
	stop  func() error
}

func (r *serviceReplica) called() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.steps)
}

// startService starts a replica named identity driving the Services of b
// with the machine def.
func startService(t *testing.T, b store.Backend, def statemachine.Definition[string, string], identity string) *serviceReplica {
	t.Helper()
	mach, err := statemachine.New(def)
	if err != nil {
		t.Fatal(err)
	}
	coll, err := store.NewCollection[evolvetest.Spec, evolvetest.Status](b, evolvetest.Kind, store.CollectionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r := &serviceReplica{}
	cfg := evolvetest.Config(mach, func(string) {})
	for name, step := range cfg.Steps {
		cfg.Steps[name] = func(ctx context.Context, obj *evolvetest.Object, op string) (statemachine.Outcome, error) {
			r.mu.Lock()
			r.steps = append(r.steps, obj.Key+"/"+name)
			r.mu.Unlock()
			return step(ctx, obj, op)
		}
	}
	if r.d, err = driver.New(coll, mach, cfg); err != nil {
		t.Fatal(err)
	}
	c, err := controller.New(controller.Config{Name: "services", Reconciler: r.d, Sources: []controller.Source{r.d.Source()}})
	if err != nil {
		t.Fatal(err)
	}
	if r.m, err = manager.New(manager.Config{Controllers: []*controller.Controller{c}, Identity: identity, LeasePrefix: "t/"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.m.Run(ctx) }()
	stopped := false
	r.stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-done
	}
	t.Cleanup(func() { _ = r.stop() })
	return r
}

// phases returns the (intent, phase) of each Service b holds, by key.
func phases(t *testing.T, b store.Backend) map[string]string {
	t.Helper()
	page, err := b.List(t.Context(), evolvetest.Kind, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	coll, _ := store.NewCollection[evolvetest.Spec, evolvetest.Status](b, evolvetest.Kind, store.CollectionConfig{})
	out := map[string]string{}
	for _, d := range page.Items {
		obj, err := coll.Decode(d)
		if err != nil {
			t.Fatal(err)
		}
		out[d.Meta.Key] = obj.Status.Target + "/" + obj.Status.Phase
	}
	return out
}

func recordedDigest(t *testing.T, b store.Reader) string {
	t.Helper()
	e, err := registry.Get(t.Context(), b, evolvetest.Kind)
	if err != nil {
		t.Fatal(err)
	}
	return e.Digest
}

func digestOf(t *testing.T, def statemachine.Definition[string, string]) string {
	t.Helper()
	m, err := statemachine.New(def)
	if err != nil {
		t.Fatal(err)
	}
	return m.Digest()
}

// evolve runs the services of b from version 1 of their machine to
// version 2, and returns what went wrong: version 1 drives two services
// and leaves a third half-way through provisioning, as a crash would; a
// version 2 that forgets its migrations must not run (its documents would
// be stranded), nor touch them, nor record itself; the version 2 that
// declares them carries every document on. Each replica's store is
// wrap(b), where a planted defect sits.
func evolve(t *testing.T, b store.Backend, wrap func(store.Backend) store.Backend) (problems []string) {
	report := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	coll, err := store.NewCollection[evolvetest.Spec, evolvetest.Status](b, evolvetest.Kind, store.CollectionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	v1 := startService(t, wrap(b), evolvetest.V1(), "v1")
	for key, intent := range map[string]string{"a": "Up", "b": "Legacy", "mid": "Up"} {
		if _, err := coll.Create(t.Context(), &evolvetest.Object{Meta: store.Meta{Key: key}, Spec: evolvetest.Spec{State: intent}}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Minute)
	synctest.Wait()
	if err := v1.stop(); err != nil {
		t.Fatal(err)
	}
	// mid stopped half-way through provisioning, as a crash would leave it.
	mid, err := coll.Get(t.Context(), "mid")
	if err != nil {
		t.Fatal(err)
	}
	mid.Status.Status = statemachine.Status[string, string]{Phase: "Provisioning", Target: "Up", Since: time.Now(), ObservedGeneration: mid.Generation,
		Operation: &statemachine.Operation[string]{ID: "op1", Phase: "Provisioning", From: "New", Done: []string{"reserve", "configure"}}}
	if _, err := coll.UpdateStatus(t.Context(), mid); err != nil {
		t.Fatal(err)
	}
	if got, want := phases(t, b), map[string]string{"a": "Up/Ready", "b": "Legacy/Ready", "mid": "Up/Provisioning"}; !mapsEqual(got, want) {
		t.Fatalf("version 1 left %v, want %v", got, want)
	}
	v1Digest := recordedDigest(t, b)

	bare := startService(t, wrap(b), evolvetest.V2(false), "v2-bare")
	time.Sleep(time.Minute)
	synctest.Wait()
	var se *statemachine.StrandedError
	switch err := bare.m.KindError(evolvetest.Kind); {
	case !errors.As(err, &se) || !errors.Is(err, statemachine.ErrStranded):
		report("a version 2 without migrations runs: KindError %v", err)
	case se.Total != 3 || len(se.Documents) != 3:
		report("stranded: %v, want a, b and mid", err)
	}
	if err := bare.m.CheckReadiness(); err == nil || !strings.Contains(err.Error(), "machines: kind Service") {
		report("the held replica's readiness: %v", err)
	}
	if got := bare.called(); len(got) > 0 {
		report("a held replica called steps %v", got)
	}
	if got := recordedDigest(t, b); got != v1Digest {
		report("a held replica recorded its machine")
	}
	if err := bare.stop(); err != nil {
		t.Fatal(err)
	}

	v2 := startService(t, wrap(b), evolvetest.V2(true), "v2")
	time.Sleep(time.Minute)
	synctest.Wait()
	if err := v2.m.KindError(evolvetest.Kind); err != nil {
		report("version 2 with its migrations does not run: %v", err)
	}
	if err := v2.m.CheckReadiness(); err != nil {
		report("version 2 is not ready: %v", err)
	}
	if got := recordedDigest(t, b); got != digestOf(t, evolvetest.V2(true)) {
		report("version 2 is not recorded")
	}
	if got, want := phases(t, b), map[string]string{"a": "Up/Serving", "b": "Up/Serving", "mid": "Up/Serving"}; !mapsEqual(got, want) {
		report("version 2 left %v, want %v", got, want)
	}
	if got := v2.called(); !slices.Equal(got, []string{"mid/start"}) {
		report("version 2 called %v, want mid/start alone", got)
	}
	return problems
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func newServiceStore(t *testing.T) *memory.Store {
	t.Helper()
	mem, err := memory.New(memory.Config{Kinds: []string{evolvetest.Kind, registry.Kind}})
	if err != nil {
		t.Fatal(err)
	}
	return mem
}

func same(b store.Backend) store.Backend { return b }

func TestEvolve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, p := range evolve(t, newServiceStore(t), same) {
			t.Error(p)
		}
	})
}

// hidingList is a planted defect: a store whose list of Services is empty,
// so the check at start sees no document to strand.
type hidingList struct{ store.Backend }

func (s hidingList) List(ctx context.Context, kind string, opts store.ListOptions) (store.ListResult, error) {
	if kind == evolvetest.Kind {
		return store.ListResult{}, nil
	}
	return s.Backend.List(ctx, kind, opts)
}

// The check at start is what keeps a version without its migrations from
// running: with the documents hidden from it, the scenario fails.
func TestEvolveCatchesHiddenDocuments(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newServiceStore(t)
		problems := evolve(t, mem, func(b store.Backend) store.Backend { return hidingList{b} })
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, "without migrations runs") }) {
			t.Fatalf("the hidden documents went unnoticed: %v", problems)
		}
	})
}

// rollout runs a rolling update: a replica of version 1 drives the
// services; a replica of version 2 starts beside it and runs at once,
// without waiting; the older stands down for the kind, and reports
// not-ready, once it sees the newer registered. The older replica's store
// is wrap(b).
func rollout(t *testing.T, b store.Backend, wrap func(store.Backend) store.Backend) (problems []string) {
	report := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	coll, err := store.NewCollection[evolvetest.Spec, evolvetest.Status](b, evolvetest.Kind, store.CollectionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	old := startService(t, wrap(b), evolvetest.V1(), "old")
	if _, err := coll.Create(t.Context(), &evolvetest.Object{Meta: store.Meta{Key: "a"}, Spec: evolvetest.Spec{State: "Legacy"}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Minute)
	synctest.Wait()

	newer := startService(t, b, evolvetest.V2(true), "new")
	synctest.Wait()
	if err := newer.m.KindError(evolvetest.Kind); err != nil || newer.m.CheckReadiness() != nil {
		report("the newer replica does not run at once: %v, %v", err, newer.m.CheckReadiness())
	}
	time.Sleep(time.Minute)
	synctest.Wait()
	if err := old.m.KindError(evolvetest.Kind); !errors.Is(err, registry.ErrSuperseded) {
		report("the older replica did not stand down: KindError %v", err)
	}
	if err := old.m.CheckReadiness(); err == nil || !strings.Contains(err.Error(), "machines: kind Service") {
		report("the older replica's readiness: %v", err)
	}
	leases, err := b.ListLeases(t.Context(), registry.PresencePrefix("t/", evolvetest.Kind))
	if err != nil {
		t.Fatal(err)
	}
	if len(leases) != 1 || leases[0].Holder != "new" {
		report("presence leases %v, want the newer replica's alone", leases)
	}
	before := len(old.called())
	if _, err := coll.Create(t.Context(), &evolvetest.Object{Meta: store.Meta{Key: "b"}, Spec: evolvetest.Spec{State: "Up"}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Minute)
	synctest.Wait()
	if got := old.called()[before:]; len(got) > 0 {
		report("the older replica still runs steps: %v", got)
	}
	if got, want := phases(t, b), map[string]string{"a": "Up/Serving", "b": "Up/Serving"}; !mapsEqual(got, want) {
		report("after the rollout: %v, want %v", got, want)
	}
	if got := recordedDigest(t, b); got != digestOf(t, evolvetest.V2(true)) {
		report("the newer machine is not recorded")
	}
	if err := old.stop(); err != nil {
		report("the older replica's Run: %v", err)
	}
	return problems
}

func TestRollout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, p := range rollout(t, newServiceStore(t), same) {
			t.Error(p)
		}
	})
}

// hidingRegistry is a planted defect: a store that shows no registration,
// so the older replica never sees the newer one registered.
type hidingRegistry struct{ store.Backend }

func (s hidingRegistry) Get(ctx context.Context, kind, key string) (store.Document, error) {
	if kind == registry.Kind {
		return store.Document{}, &store.Error{Op: "get", Kind: kind, Key: key, Err: store.ErrNotFound}
	}
	return s.Backend.Get(ctx, kind, key)
}

func TestRolloutCatchesHiddenRegistry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		problems := rollout(t, newServiceStore(t), func(b store.Backend) store.Backend { return hidingRegistry{b} })
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, "did not stand down") }) {
			t.Fatalf("the older replica's blindness went unnoticed: %v", problems)
		}
	})
}

// Of two different machines of one version, the one recorded last runs:
// the replica of the other stands down.
func TestSameVersionRecordedLastRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := newServiceStore(t)
		first := startService(t, mem, evolvetest.V2(true), "first")
		time.Sleep(time.Minute)
		synctest.Wait()
		changed := evolvetest.V2(true)
		changed.Bounds.Deadline = time.Minute
		second := startService(t, mem, changed, "second")
		time.Sleep(time.Minute)
		synctest.Wait()
		if err := second.m.KindError(evolvetest.Kind); err != nil {
			t.Errorf("the machine recorded last does not run: %v", err)
		}
		if err := first.m.KindError(evolvetest.Kind); !errors.Is(err, registry.ErrSuperseded) {
			t.Errorf("the other replica did not stand down: %v", err)
		}
		if got := recordedDigest(t, mem); got != digestOf(t, changed) {
			t.Error("the machine recorded last is not recorded")
		}
		// A replica of an older version never runs the kind.
		older := startService(t, mem, evolvetest.V1(), "older")
		synctest.Wait()
		if err := older.m.KindError(evolvetest.Kind); !errors.Is(err, registry.ErrSuperseded) {
			t.Errorf("a replica of version 1 runs over version 2: %v", err)
		}
	})
}
