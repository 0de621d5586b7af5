package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/history"
	"github.com/tendhq/tend/registry"
	"github.com/tendhq/tend/store"
)

// notDriven names, for each kind no machine drives, a document of it: the
// widgets' registry entry, a widget's history, and a crate (a kind no
// Manager ran).
var notDriven = []struct{ kind, key string }{{registry.Kind, widgetKind}, {history.KindFor(widgetKind), "w-fault"}, {"Crate", "c1"}}

// drivenSnapshot runs the controller on a memory store that also holds a
// crate, lets plant change the store, and returns the path of its
// snapshot.
func drivenSnapshot(t *testing.T, plant func(*memory.Store)) string {
	t.Helper()
	s, err := memory.New(memory.Config{Kinds: append(slices.Clone(testKinds), "Crate")})
	if err != nil {
		t.Fatal(err)
	}
	produce(t, s)
	if _, err := s.Create(context.Background(), store.Document{Meta: store.Meta{Kind: "Crate", Key: "c1", Finalizers: []string{"tend.dev/machine"}},
		Spec: []byte(`{"state":"Up"}`)}); err != nil {
		t.Fatal(err)
	}
	plant(s)
	path := filepath.Join(t.TempDir(), "tend.snapshot")
	if err := s.SnapshotFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkNotDriven runs every action on every document of notDriven
// against the snapshot at path, and returns each that did not end with the
// not-found exit code, or changed the snapshot.
func checkNotDriven(t *testing.T, path string) []error {
	actions := [][]string{
		{"pause"}, {"resume"}, {"retry"}, {"skip", "$", "configure"}, {"move", "$", "Ready"}, {"request", "$", "rebuild"},
		{"remove-finalizer", "$", "tend.dev/machine", "--force"},
	}
	var errs []error
	for _, d := range notDriven {
		for _, a := range actions {
			args := []string{"--store", "memory:" + path, a[0], d.kind, d.key}
			if len(a) > 1 {
				args = append(args, a[2:]...)
			}
			args = append(args, "--yes")
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			r := tend(t, args...)
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if r.code != exitNotFound {
				errs = append(errs, fmt.Errorf("tend %s: exit %d, want %d: %s%s", strings.Join(args[2:], " "), r.code, exitNotFound, r.stdout, r.stderr))
			}
			if !bytes.Equal(before, after) {
				errs = append(errs, fmt.Errorf("tend %s changed the store", strings.Join(args[2:], " ")))
			}
		}
	}
	return errs
}

// TestNotDriven: every action on a document of a kind no machine drives
// ends with the not-found exit code and changes nothing.
func TestNotDriven(t *testing.T) {
	for _, err := range checkNotDriven(t, drivenSnapshot(t, func(*memory.Store) {})) {
		t.Error(err)
	}
}

// TestNotDrivenCatches plants a registry that records the widgets' machine
// for every kind: checkNotDriven finds actions taken.
func TestNotDrivenCatches(t *testing.T) {
	path := drivenSnapshot(t, func(s *memory.Store) {
		ctx := context.Background()
		widgets, err := registry.Get(ctx, s, widgetKind)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range notDriven {
			e := widgets
			e.Kind = d.kind
			if _, err := registry.Put(ctx, s, e); err != nil {
				t.Fatal(err)
			}
		}
	})
	errs := checkNotDriven(t, path)
	if len(errs) == 0 {
		t.Fatal("a registry recording a machine for every kind passes")
	}
	t.Logf("the planted registry: %d problems, the first %v", len(errs), errs[0])
}
