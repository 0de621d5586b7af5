package drivertest_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tendhq/tend/driver/drivertest"
	"github.com/tendhq/tend/manager"
	sm "github.com/tendhq/tend/statemachine"
	"github.com/tendhq/tend/store"
)

// commandsHidden is a store under the driver that never shows it the
// operators' commands, and keeps them in the statuses it writes: a driver
// that never carries out a command.
func commandsHidden(b store.Backend) store.Backend {
	return rewriting{b, func([]sm.Command) []sm.Command { return nil },
		func(stored, _ []sm.Command) []sm.Command { return stored }}
}

// With Operators, random runs find a driver that never carries out an
// operator's commands: the document never settles.
func TestOperatorsFindIgnoredCommands(t *testing.T) {
	cfg := serviceConfig(serviceDefinition(), nil)
	cfg.Operators = true
	world := cfg.Fixture
	cfg.Fixture = func(env drivertest.Env) (drivertest.Fixture[spec, status], error) {
		w, err := world(env)
		w.Backend = commandsHidden
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
		if !strings.Contains(f.Problems[0], "has not settled") || !strings.Contains(strings.Join(f.Log, "\n"), "an operator commands") {
			t.Fatalf("seed %d: want a run with an operator's command that never settles, got %v", seed, f)
		}
		t.Logf("found by seed %d: %s", seed, f.Problems[0])
		return
	}
	t.Fatal("no seed of 0 to 99 found it")
}

// rewriting is a store under the driver that shows it the operators'
// commands as read changes them, and stores of the commands the driver
// writes what write makes of them and of those stored.
type rewriting struct {
	store.Backend
	read  func([]sm.Command) []sm.Command
	write func(stored, written []sm.Command) []sm.Command
}

func (b rewriting) Get(ctx context.Context, kind, key string) (store.Document, error) {
	d, err := b.Backend.Get(ctx, kind, key)
	if err == nil {
		d.Status = editCommands(d.Status, b.read)
	}
	return d, err
}

func (b rewriting) UpdateStatus(ctx context.Context, d store.Document) (store.Document, error) {
	var stored []sm.Command
	if cur, err := b.Backend.Get(ctx, d.Meta.Kind, d.Meta.Key); err == nil {
		editCommands(cur.Status, func(cs []sm.Command) []sm.Command { stored = cs; return cs })
	}
	d.Status = editCommands(d.Status, func(written []sm.Command) []sm.Command { return b.write(stored, written) })
	return b.Backend.UpdateStatus(ctx, d)
}

// editCommands returns status with its commands replaced by what edit
// makes of them.
func editCommands(status []byte, edit func([]sm.Command) []sm.Command) []byte {
	var st map[string]json.RawMessage
	if json.Unmarshal(status, &st) != nil || st == nil {
		return status
	}
	var cs []sm.Command
	_ = json.Unmarshal(st["commands"], &cs)
	if cs = edit(cs); len(cs) == 0 {
		delete(st, "commands")
	} else {
		st["commands"], _ = json.Marshal(cs)
	}
	out, _ := json.Marshal(st)
	return out
}

// without returns cs without its commands of verb v.
func without(cs []sm.Command, v sm.Verb) []sm.Command {
	return slices.DeleteFunc(slices.Clone(cs), func(c sm.Command) bool { return c.Verb == v })
}

// plantedCommandDefects are drivers, as their store makes them, that
// carry out an operator's retry, skip or move wrongly; each is found by a
// single random run with Operators from each of its seeds.
var plantedCommandDefects = []struct {
	name  string
	store func(store.Backend) store.Backend
	seeds []int
	want  string
}{
	{"a retry never carried out", func(b store.Backend) store.Backend {
		return rewriting{b, func(cs []sm.Command) []sm.Command { return without(cs, sm.VerbRetry) },
			func(stored, written []sm.Command) []sm.Command {
				return append(written, slices.DeleteFunc(slices.Clone(stored), func(c sm.Command) bool { return c.Verb != sm.VerbRetry })...)
			}}
	}, []int{16, 48, 116, 186, 234}, "operator commands never carried out: retry"},
	{"a retry dropped without its effect", func(b store.Backend) store.Backend {
		return rewriting{b, func(cs []sm.Command) []sm.Command { return without(cs, sm.VerbRetry) },
			func(_, written []sm.Command) []sm.Command { return written }}
	}, []int{16, 21, 36, 47, 48}, "carried out the operator's retry"},
	{"a move to the wrong phase", func(b store.Backend) store.Backend {
		return rewriting{b, func(cs []sm.Command) []sm.Command {
			cs = slices.Clone(cs)
			for i, c := range cs {
				if c.Verb == sm.VerbMove {
					cs[i].Phase = map[bool]string{true: string(Started), false: string(Created)}[c.Phase == string(Created)]
				}
			}
			return cs
		}, func(_, written []sm.Command) []sm.Command { return written }}
	}, []int{36, 39, 50, 73, 86}, "carried out the operator's move"},
}

// operatorsConfig is the Service machine's configuration with an operator,
// terminal failures held in its Fault phase and two replicas.
func operatorsConfig(planted func(store.Backend) store.Backend) drivertest.Config[spec, status, state, phase] {
	cfg := serviceConfig(serviceDefinition(), nil)
	cfg.Operators, cfg.TerminalFailures, cfg.Replicas, cfg.Mode = true, true, 2, manager.LeaderElection
	world := cfg.Fixture
	cfg.Fixture = func(env drivertest.Env) (drivertest.Fixture[spec, status], error) {
		w, err := world(env)
		w.Backend = planted
		return w, err
	}
	return cfg
}

// Each planted defect of the driver's handling of operators' commands is
// found by a single random run with Operators from one of its fixed
// seeds, and a run that fails fails with the defect's problem.
func TestOperatorsFindPlantedCommandDefects(t *testing.T) {
	for _, d := range plantedCommandDefects {
		t.Run(d.name, func(t *testing.T) {
			found := 0
			for _, seed := range d.seeds {
				f, err := drivertest.RunOne(t, operatorsConfig(d.store), seed)
				switch {
				case err != nil:
					t.Fatal(err)
				case f == nil:
				case !strings.Contains(f.Problems[0], d.want):
					t.Fatalf("seed %d: found %q, want a problem with %q\n%v", seed, f.Problems[0], d.want, f)
				default:
					found++
				}
			}
			if found == 0 {
				t.Fatalf("no seed of %v found it", d.seeds)
			}
			t.Logf("found by %d of %d seeds", found, len(d.seeds))
		})
	}
}

// counting is a store under the driver that counts, by verb, the
// operators' commands the driver carries out or refuses: those its
// status writes remove.
type counting struct {
	store.Backend
	mu      *sync.Mutex
	carried map[sm.Verb]int
}

func (b counting) UpdateStatus(ctx context.Context, d store.Document) (store.Document, error) {
	cur, err := b.Backend.Get(ctx, d.Meta.Kind, d.Meta.Key)
	written, werr := b.Backend.UpdateStatus(ctx, d)
	if err == nil && werr == nil {
		editCommands(cur.Status, func(stored []sm.Command) []sm.Command {
			editCommands(written.Status, func(kept []sm.Command) []sm.Command {
				b.mu.Lock()
				defer b.mu.Unlock()
				for _, c := range stored {
					if !slices.ContainsFunc(kept, func(k sm.Command) bool { return k.ID == c.ID }) {
						b.carried[c.Verb]++
					}
				}
				return kept
			})
			return stored
		})
	}
	return written, werr
}

// operatorSeeds are the fixed seeds of TestOperatorsCommand.
var operatorSeeds = 40

// Random runs with Operators have the driver carry out every verb of an
// operator's commands, on two replicas, and a correct driver passes them.
func TestOperatorsCommand(t *testing.T) {
	var mu sync.Mutex
	carried := map[sm.Verb]int{}
	cfg := operatorsConfig(func(b store.Backend) store.Backend { return counting{b, &mu, carried} })
	for seed := range operatorSeeds {
		f, err := drivertest.RunOne(t, cfg, seed)
		if err != nil {
			t.Fatal(err)
		}
		if f != nil {
			t.Fatalf("seed %d: %v", seed, f)
		}
	}
	t.Logf("commands carried out or refused in %d runs: %v", operatorSeeds, carried)
	for _, v := range []sm.Verb{sm.VerbRetry, sm.VerbSkip, sm.VerbMove, sm.VerbRequest} {
		if carried[v] == 0 {
			t.Errorf("no %s command carried out in %d runs", v, operatorSeeds)
		}
	}
}
