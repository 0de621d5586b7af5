package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

// serviceKinds are the kinds of a store of Services.
var serviceKinds = []string{registry.Kind, evolvetest.Kind}

// runServices runs a Manager driving the Services of b with machine def
// until the returned stop is called, and returns the manager.
func runServices(t *testing.T, b store.Backend, def statemachine.Definition[string, string], identity string) (*manager.Manager, func()) {
	t.Helper()
	m, err := statemachine.New(def)
	if err != nil {
		t.Fatal(err)
	}
	coll, err := store.NewCollection[evolvetest.Spec, evolvetest.Status](b, evolvetest.Kind, store.CollectionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := driver.New(coll, m, evolvetest.Config(m, func(string) {}))
	if err != nil {
		t.Fatal(err)
	}
	c, err := controller.New(controller.Config{Name: "services", Reconciler: d, Sources: []controller.Source{d.Source()}})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := manager.New(manager.Config{Controllers: []*controller.Controller{c}, Identity: identity,
		LeaseDuration: 3 * time.Second, RenewPeriod: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(stop)
	return mgr, stop
}

// eventually waits up to 20 s for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s", what)
		}
	}
}

func servicePhases(t *testing.T, b store.Backend) string {
	t.Helper()
	coll, err := store.NewCollection[evolvetest.Spec, evolvetest.Status](b, evolvetest.Kind, store.CollectionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	objs, _, err := coll.List(context.Background(), store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.Key+"="+o.Status.Target+"/"+o.Status.Phase)
	}
	return strings.Join(out, " ")
}

func writeDescriptor(t *testing.T, def statemachine.Definition[string, string]) string {
	t.Helper()
	m, err := statemachine.New(def)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(m.Descriptor())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "machine.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// evolution runs the Services of b on version 1 of their machine, leaves
// one half-way through an operation, then checks version 2 with tend
// machine diff and runs it: without its migrations (the planted defect)
// the diff exits 4 naming the documents and the Manager does not run the
// kind; with them the diff exits 0 and the Manager carries every document
// on. storeSpec returns the --store value that shows b as it is.
func evolution(t *testing.T, b store.Backend, storeSpec func() string) {
	_, stop := runServices(t, b, evolvetest.V1(), "v1")
	coll, err := store.NewCollection[evolvetest.Spec, evolvetest.Status](b, evolvetest.Kind, store.CollectionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for key, intent := range map[string]string{"a": "Up", "b": "Legacy", "mid": "Up"} {
		if _, err := coll.Create(ctx, &evolvetest.Object{Meta: store.Meta{Key: key}, Spec: evolvetest.Spec{State: intent}}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "version 1 to settle", func() bool {
		return servicePhases(t, b) == "a=Up/Ready b=Legacy/Ready mid=Up/Ready"
	})
	stop()
	mid, err := coll.Get(ctx, "mid")
	if err != nil {
		t.Fatal(err)
	}
	mid.Status.Status = statemachine.Status[string, string]{Phase: "Provisioning", Target: "Up", Since: time.Now(), ObservedGeneration: mid.Generation,
		Operation: &statemachine.Operation[string]{ID: "op1", Phase: "Provisioning", From: "Ready", Done: []string{"reserve", "configure"}}}
	if _, err := coll.UpdateStatus(ctx, mid); err != nil {
		t.Fatal(err)
	}

	spec := storeSpec()
	r := tend(t, "--store", spec, "machine", "diff", evolvetest.Kind, writeDescriptor(t, evolvetest.V2(false)))
	if r.code != exitRefused || !strings.Contains(r.stdout, "stranded: 3") ||
		!strings.Contains(normalise(r.stdout), "mid  Up  Provisioning  op1  phase Provisioning is not a phase of the machine") ||
		!strings.Contains(r.stdout, "phase Provisioning: removed") {
		t.Errorf("diff without migrations: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = tend(t, "--store", spec, "machine", "diff", evolvetest.Kind, writeDescriptor(t, evolvetest.V2(true)), "-o", "json")
	var diff struct {
		Carried  int             `json:"carried"`
		Stranded json.RawMessage `json:"stranded"`
		Next     struct{ Version int }
	}
	if err := json.Unmarshal([]byte(r.stdout), &diff); r.code != 0 || err != nil || diff.Carried != 3 || diff.Stranded != nil || diff.Next.Version != 2 {
		t.Errorf("diff with migrations: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}

	bare, stop := runServices(t, b, evolvetest.V2(false), "v2-bare")
	eventually(t, "the kind held", func() bool { return bare.KindError(evolvetest.Kind) != nil })
	if err := bare.KindError(evolvetest.Kind); !errors.Is(err, statemachine.ErrStranded) {
		t.Errorf("KindError %v, want ErrStranded", err)
	}
	stop()
	if got := servicePhases(t, b); got != "a=Up/Ready b=Legacy/Ready mid=Up/Provisioning" {
		t.Errorf("a held replica changed the documents: %s", got)
	}

	v2, stop := runServices(t, b, evolvetest.V2(true), "v2")
	eventually(t, "version 2 to carry every document on", func() bool {
		return servicePhases(t, b) == "a=Up/Serving b=Up/Serving mid=Up/Serving"
	})
	if err := v2.KindError(evolvetest.Kind); err != nil {
		t.Error(err)
	}
	stop()
}

// rollout runs a rolling update on b: a replica of version 1 and one of
// version 2 run at once; the newer carries the documents on without
// waiting, and the older stands down for the kind within a renew period.
func rollout(t *testing.T, b store.Backend) {
	old, _ := runServices(t, b, evolvetest.V1(), "old")
	coll, err := store.NewCollection[evolvetest.Spec, evolvetest.Status](b, evolvetest.Kind, store.CollectionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := coll.Create(ctx, &evolvetest.Object{Meta: store.Meta{Key: "a"}, Spec: evolvetest.Spec{State: "Legacy"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "version 1 to settle", func() bool { return servicePhases(t, b) == "a=Legacy/Ready" })
	newer, _ := runServices(t, b, evolvetest.V2(true), "new")
	eventually(t, "the older replica to stand down", func() bool { return errors.Is(old.KindError(evolvetest.Kind), registry.ErrSuperseded) })
	if err := newer.KindError(evolvetest.Kind); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Create(ctx, &evolvetest.Object{Meta: store.Meta{Key: "b"}, Spec: evolvetest.Spec{State: "Up"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "version 2 to drive both", func() bool { return servicePhases(t, b) == "a=Up/Serving b=Up/Serving" })
	eventually(t, "the older replica's presence lease to go", func() bool {
		leases, err := b.ListLeases(ctx, registry.PresencePrefix("", evolvetest.Kind))
		return err == nil && len(leases) == 1 && leases[0].Holder == "new"
	})
	if err := old.CheckReadiness(); err == nil || !strings.Contains(err.Error(), "machines") {
		t.Errorf("the older replica's readiness: %v", err)
	}
}

func TestRolloutMemory(t *testing.T) {
	s, err := memory.New(memory.Config{Kinds: serviceKinds})
	if err != nil {
		t.Fatal(err)
	}
	rollout(t, s)
}

func TestRolloutPostgres(t *testing.T) {
	s, _ := postgresStoreOf(t, serviceKinds)
	rollout(t, s)
}

func TestEvolutionMemory(t *testing.T) {
	s, err := memory.New(memory.Config{Kinds: serviceKinds})
	if err != nil {
		t.Fatal(err)
	}
	evolution(t, s, func() string {
		path := filepath.Join(t.TempDir(), "tend.snapshot")
		if err := s.SnapshotFile(path); err != nil {
			t.Fatal(err)
		}
		return "memory:" + path
	})
}

func TestEvolutionPostgres(t *testing.T) {
	s, spec := postgresStoreOf(t, serviceKinds)
	evolution(t, s, func() string { return spec })
}
