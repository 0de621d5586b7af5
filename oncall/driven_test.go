package oncall_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/oncall"
	"github.com/tendhq/tend/registry"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// counting is a store that counts the writes made through it.
type counting struct {
	store.Backend
	writes atomic.Int64
}

func (c *counting) Create(ctx context.Context, d store.Document) (store.Document, error) {
	c.writes.Add(1)
	return c.Backend.Create(ctx, d)
}

func (c *counting) UpdateSpec(ctx context.Context, d store.Document) (store.Document, error) {
	c.writes.Add(1)
	return c.Backend.UpdateSpec(ctx, d)
}

func (c *counting) UpdateStatus(ctx context.Context, d store.Document) (store.Document, error) {
	c.writes.Add(1)
	return c.Backend.UpdateStatus(ctx, d)
}

func (c *counting) Delete(ctx context.Context, kind, key string, opts store.DeleteOptions) error {
	c.writes.Add(1)
	return c.Backend.Delete(ctx, kind, key, opts)
}

// notDriven is, for each kind no machine drives, a document of it: the
// machine registry's entry of the buckets, a bucket's history, and a crate
// (a kind no Manager ran). Each is paused, in the Fault phase after step
// allocate failed, and holds the buckets' finalizer, so that every action
// would change it if it were a bucket.
var notDriven = []struct{ kind, key string }{{registry.Kind, kind}, {history.KindFor(kind), "b1"}, {"Crate", "c1"}}

// drivenStore returns a store holding the bucket machine's registration
// and the documents of notDriven.
func drivenStore(t *testing.T) *memory.Store {
	t.Helper()
	ctx := t.Context()
	b, err := memory.New(memory.Config{Kinds: slices.Concat([]string{kind, "Crate"}, history.Kinds(kind), registry.Kinds())})
	if err != nil {
		t.Fatal(err)
	}
	m, err := sm.New(bucketMachine())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := registry.Put(ctx, b, registry.Entry{Kind: kind, Machine: m.Descriptor()}); err != nil {
		t.Fatal(err)
	}
	st := faulted()
	st.Paused = &sm.Pause{By: "bob"}
	status, _ := json.Marshal(st)
	for _, d := range notDriven {
		doc, err := b.Get(ctx, d.kind, d.key)
		if errors.Is(err, store.ErrNotFound) {
			doc, err = b.Create(ctx, store.Document{Meta: store.Meta{Kind: d.kind, Key: d.key}, Spec: []byte(`{}`)})
		}
		if err != nil {
			t.Fatal(err)
		}
		doc.Meta.Finalizers = []string{"tend.dev/bucket"}
		if doc, err = b.UpdateSpec(ctx, doc); err != nil {
			t.Fatal(err)
		}
		doc.Status = status
		if _, err := b.UpdateStatus(ctx, doc); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// checkNotDriven runs every action on every document of notDriven through
// a client of b, and returns what went wrong: an action not refused with
// ErrNotDriven (and registry.ErrUnregistered), or any write.
func checkNotDriven(ctx context.Context, b store.Backend) []error {
	c := &counting{Backend: b}
	client, err := oncall.New(c, oncall.Config{Actor: "alice"})
	if err != nil {
		return []error{err}
	}
	actions := map[string]func(kind, key string) error{
		"pause":  func(kind, key string) error { return client.Pause(ctx, kind, key, "") },
		"resume": func(kind, key string) error { return client.Resume(ctx, kind, key) },
		"retry": func(kind, key string) error {
			_, err := client.Retry(ctx, kind, key)
			return err
		},
		"skip": func(kind, key string) error {
			_, err := client.Skip(ctx, kind, key, "allocate")
			return err
		},
		"move": func(kind, key string) error {
			_, err := client.Move(ctx, kind, key, "Ready")
			return err
		},
		"request": func(kind, key string) error {
			_, err := client.Request(ctx, kind, key, "resize")
			return err
		},
		"remove-finalizer": func(kind, key string) error {
			return client.RemoveFinalizer(ctx, kind, key, "tend.dev/bucket", false)
		},
		"remove-finalizer --force": func(kind, key string) error {
			return client.RemoveFinalizer(ctx, kind, key, "tend.dev/bucket", true)
		},
	}
	var errs []error
	for _, d := range notDriven {
		for name, act := range actions {
			before := c.writes.Load()
			err := act(d.kind, d.key)
			if !errors.Is(err, oncall.ErrNotDriven) || !errors.Is(err, registry.ErrUnregistered) {
				errs = append(errs, fmt.Errorf("%s on %s %s: %v, want ErrNotDriven and registry.ErrUnregistered", name, d.kind, d.key, err))
			}
			if n := c.writes.Load() - before; n > 0 {
				errs = append(errs, fmt.Errorf("%s on %s %s wrote %d times", name, d.kind, d.key, n))
			}
		}
	}
	return errs
}

// TestNotDriven refuses every action on a document of a kind no machine
// drives, before anything is written.
func TestNotDriven(t *testing.T) {
	for _, err := range checkNotDriven(t.Context(), drivenStore(t)) {
		t.Error(err)
	}
}

// everyKindDriven is a store that answers every read of the machine
// registry with the buckets' entry, as a registry keyed by nothing would.
type everyKindDriven struct{ store.Backend }

func (s everyKindDriven) Get(ctx context.Context, k, key string) (store.Document, error) {
	if k == registry.Kind {
		key = kind
	}
	return s.Backend.Get(ctx, k, key)
}

// TestNotDrivenCatches plants a store whose registry says a machine drives
// every kind: checkNotDriven finds actions taken.
func TestNotDrivenCatches(t *testing.T) {
	errs := checkNotDriven(t.Context(), everyKindDriven{drivenStore(t)})
	wrote := 0
	for _, err := range errs {
		if strings.Contains(err.Error(), " wrote ") {
			wrote++
		}
	}
	t.Logf("the planted registry let %d of %d actions write", wrote, 8*len(notDriven))
	if wrote == 0 {
		t.Fatalf("a store whose registry drives every kind: no action wrote (%v)", errs)
	}
}
