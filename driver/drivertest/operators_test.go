package drivertest_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tendhq/tend/driver/drivertest"
	"github.com/tendhq/tend/store"
)

// commandsHidden is a store under the driver that never shows it the
// operators' commands, and keeps them in the statuses it writes: a driver
// that never carries out a command.
type commandsHidden struct{ store.Backend }

func (b commandsHidden) Get(ctx context.Context, kind, key string) (store.Document, error) {
	d, err := b.Backend.Get(ctx, kind, key)
	if err == nil {
		d.Status = setCommands(d.Status, nil)
	}
	return d, err
}

func (b commandsHidden) UpdateStatus(ctx context.Context, d store.Document) (store.Document, error) {
	if cur, err := b.Backend.Get(ctx, d.Meta.Kind, d.Meta.Key); err == nil {
		var st map[string]json.RawMessage
		_ = json.Unmarshal(cur.Status, &st)
		d.Status = setCommands(d.Status, st["commands"])
	}
	return b.Backend.UpdateStatus(ctx, d)
}

// setCommands returns status with its commands field set to commands
// (removed when nil).
func setCommands(status []byte, commands json.RawMessage) []byte {
	var st map[string]json.RawMessage
	if json.Unmarshal(status, &st) != nil || st == nil {
		return status
	}
	if commands == nil {
		delete(st, "commands")
	} else {
		st["commands"] = commands
	}
	out, _ := json.Marshal(st)
	return out
}

// With Operators, random runs find a driver that never carries out an
// operator's request command: the document never settles.
func TestOperatorsFindIgnoredCommands(t *testing.T) {
	cfg := serviceConfig(serviceDefinition(), nil)
	cfg.Operators = true
	world := cfg.Fixture
	cfg.Fixture = func(env drivertest.Env) (drivertest.Fixture[spec, status], error) {
		w, err := world(env)
		w.Backend = func(b store.Backend) store.Backend { return commandsHidden{b} }
		return w, err
	}
	for seed := range 100 {
		f, err := drivertest.RunOne(t, cfg, seed)
		if err != nil {
			t.Fatal(err)
		}
		if f == nil {
			continue
		}
		if !strings.Contains(f.Problems[0], "has not settled") || !strings.Contains(strings.Join(f.Log, "\n"), "an operator commands request") {
			t.Fatalf("seed %d: want a run with a request command that never settles, got %v", seed, f)
		}
		t.Logf("found by seed %d: %s", seed, f.Problems[0])
		return
	}
	t.Fatal("no seed of 0 to 99 found it")
}
