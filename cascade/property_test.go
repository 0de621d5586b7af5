package cascade_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/tendhq/tend/manager"

	"pgregory.net/rapid"

	"github.com/tendhq/tend/cascade"
	"github.com/tendhq/tend/store"
)

// ghost names an owner that was never stored.
const ghost = "Gateway/ghost"

// model is what the store must hold once the collectors have settled: the
// documents alive and, for each, the owners it still refers to.
type model struct {
	alive  map[string]bool
	owners map[string][]string
}

// collect removes roots and every document whose owners are all removed or
// missing (transitively), then drops the references to removed documents
// from the survivors. Background and foreground deletions end the same way;
// they differ only in order.
func (m *model) collect(roots ...string) {
	removed := make(map[string]bool)
	for _, r := range roots {
		removed[r] = true
	}
	for changed := true; changed; {
		changed = false
		for d := range m.alive {
			if removed[d] || len(m.owners[d]) == 0 {
				continue
			}
			if !slices.ContainsFunc(m.owners[d], func(o string) bool { return m.alive[o] && !removed[o] }) {
				removed[d] = true
				changed = true
			}
		}
	}
	for d := range removed {
		delete(m.alive, d)
		delete(m.owners, d)
	}
	m.dropDangling()
}

// orphan removes x alone and the references to it.
func (m *model) orphan(x string) {
	delete(m.alive, x)
	delete(m.owners, x)
	m.dropDangling()
}

func (m *model) dropDangling() {
	for d, os := range m.owners {
		m.owners[d] = slices.DeleteFunc(os, func(o string) bool { return !m.alive[o] })
	}
}

// check compares the store with the model.
func (m *model) check(t *rapid.T, w *world, step string) {
	t.Helper()
	want := slices.Sorted(maps.Keys(m.alive))
	if got := w.names(); !slices.Equal(got, want) {
		t.Fatalf("%s: documents %v, want %v", step, got, want)
	}
	for _, d := range want {
		doc := w.get(d)
		if doc.Meta.Terminating() {
			t.Fatalf("%s: %s is still Terminating with %v", step, d, doc.Meta.Finalizers)
		}
		wantOwners := slices.Sorted(slices.Values(m.owners[d]))
		if got := w.owners(d); !slices.Equal(got, wantOwners) {
			t.Fatalf("%s: %s owners %v, want %v", step, d, got, wantOwners)
		}
	}
}

// On random owner graphs (cycles, self-references, missing owners, several
// kinds), with one to three replicas of the garbage collector running at
// once under managers of any mode, every deletion settles to the state the
// model predicts, with nothing left Terminating.
func TestMatchesModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		rapid.SyncTest(rt, func(t *rapid.T) {
			w := newWorld(t)
			n := rapid.IntRange(1, 8).Draw(t, "documents")
			m := &model{alive: map[string]bool{}, owners: map[string][]string{}}
			var names []string
			for i := range n {
				name := fmt.Sprintf("%s/d%d", rapid.SampledFrom(kinds).Draw(t, "kind"), i)
				w.create(name)
				m.alive[name] = true
				names = append(names, name)
			}
			for _, d := range names {
				owners := rapid.SliceOfNDistinct(rapid.SampledFrom(append(slices.Clone(names), ghost)), 0, 3, rapid.ID).Draw(t, "owners of "+d)
				var refs []store.OwnerRef
				for _, o := range owners {
					ref := store.OwnerRef{Kind: "Gateway", Key: "ghost", UID: "never-stored"}
					if o != ghost {
						doc := w.get(o)
						ref = store.OwnerRef{Kind: doc.Meta.Kind, Key: doc.Meta.Key, UID: doc.Meta.UID}
					}
					ref.BlockOwnerDeletion = rapid.Bool().Draw(t, "block")
					refs = append(refs, ref)
				}
				if len(refs) > 0 {
					w.setOwners(d, refs)
				}
				m.owners[d] = owners
			}

			mode := rapid.SampledFrom([]manager.Mode{manager.Single, manager.LeaderElection, manager.Sharded}).Draw(t, "mode")
			for i := range rapid.IntRange(1, 3).Draw(t, "replicas") {
				cfg := cascade.Config{Backend: w.s, Workers: rapid.IntRange(1, 3).Draw(t, fmt.Sprint("workers ", i))}
				defer startManaged(t, cfg, manager.Config{Mode: mode, Leaser: w.s, Identity: fmt.Sprint("replica-", i), Shards: 4, LeaseDuration: time.Hour})()
			}
			settle()
			m.collect()
			m.check(t, w, "start")

			for step := range rapid.IntRange(1, 3).Draw(t, "deletions") {
				if len(m.alive) == 0 {
					break
				}
				x := rapid.SampledFrom(slices.Sorted(maps.Keys(m.alive))).Draw(t, "delete")
				p := rapid.SampledFrom([]cascade.Policy{cascade.Background, cascade.Foreground, cascade.Orphan}).Draw(t, "policy")
				kind, key := split(x)
				if err := cascade.Delete(context.Background(), w.s, kind, key, p); err != nil {
					t.Fatal(err)
				}
				settle()
				if p == cascade.Orphan {
					m.orphan(x)
				} else {
					m.collect(x)
				}
				m.check(t, w, fmt.Sprintf("step %d (%s %s)", step, p, x))
			}
		})
	})
}
