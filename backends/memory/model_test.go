package memory_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/store"
)

// modelDoc is what the model expects stored under a key.
type modelDoc struct {
	uid         string
	rev, gen    int64
	spec        string
	status      string
	labels      map[string]string
	finalizers  []string
	terminating bool
}

type modelEvent struct {
	typ store.EventType
	key string
	rev int64
}

// model is the obviously correct store the memory backend is compared with.
type model struct {
	rev    int64
	docs   map[string]*modelDoc
	events []modelEvent
}

var (
	modelKeys       = []string{"a", "b", "c", "team/d"}
	modelFinalizers = []string{"example.com/a", "example.com/b"}
	modelSelectors  = []string{
		"", "env=prod", "env!=prod", "env in (prod,dev)", "env notin (dev)", "env", "!env",
		"env=prod,tier=web", "tier in (web),env!=dev", "env=dev,env=prod",
	}
)

func drawLabels(t *rapid.T) map[string]string {
	labels := map[string]string{}
	for _, k := range []string{"env", "tier"} {
		if v := rapid.SampledFrom([]string{"", "prod", "dev", "web"}).Draw(t, k); v != "" {
			labels[k] = v
		}
	}
	return labels
}

func drawFinalizers(t *rapid.T) []string {
	var out []string
	for _, f := range modelFinalizers {
		if rapid.Bool().Draw(t, f) {
			out = append(out, f)
		}
	}
	return out
}

// TestModel runs random sequences of writes and reads against the store and
// a model, and checks that both agree on every result, every listing (so the
// label index serves selectors correctly) and every watch event.
func TestModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ctx := context.Background()
		s, err := memory.New(memory.Config{Kinds: []string{"Widget"}})
		if err != nil {
			t.Fatal(err)
		}
		w, err := s.Watch(ctx, "Widget", 0)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		m := &model{docs: map[string]*modelDoc{}}
		seen := 0 // events read from w

		write := func(rev int64, typ store.EventType, key string) {
			m.rev = rev
			m.events = append(m.events, modelEvent{typ, key, rev})
		}
		current := func(t *rapid.T, key string) (store.Document, *modelDoc) {
			d := m.docs[key]
			doc := store.Document{Meta: store.Meta{Kind: "Widget", Key: key}}
			if d != nil {
				doc.Meta.Revision = d.rev
				if rapid.Bool().Draw(t, "stale") {
					doc.Meta.Revision--
				}
			} else {
				doc.Meta.Revision = m.rev
			}
			return doc, d
		}

		t.Repeat(map[string]func(*rapid.T){
			"create": func(t *rapid.T) {
				key := rapid.SampledFrom(modelKeys).Draw(t, "key")
				spec := rapid.SampledFrom([]string{"1", "2"}).Draw(t, "spec")
				labels, fins := drawLabels(t), drawFinalizers(t)
				got, err := s.Create(ctx, store.Document{
					Meta: store.Meta{Kind: "Widget", Key: key, Labels: labels, Finalizers: fins},
					Spec: []byte(spec),
				})
				if m.docs[key] != nil {
					if !errors.Is(err, store.ErrAlreadyExists) {
						t.Fatalf("create of existing %q: %v", key, err)
					}
					return
				}
				if err != nil {
					t.Fatalf("create %q: %v", key, err)
				}
				if got.Meta.Revision != m.rev+1 {
					t.Fatalf("create %q: revision %d, want %d", key, got.Meta.Revision, m.rev+1)
				}
				m.docs[key] = &modelDoc{uid: got.Meta.UID, rev: got.Meta.Revision, gen: 1, spec: spec, labels: labels, finalizers: fins}
				write(got.Meta.Revision, store.Added, key)
			},
			"update spec": func(t *rapid.T) {
				key := rapid.SampledFrom(modelKeys).Draw(t, "key")
				doc, d := current(t, key)
				spec := rapid.SampledFrom([]string{"1", "2", "3"}).Draw(t, "spec")
				doc.Spec, doc.Meta.Labels, doc.Meta.Finalizers = []byte(spec), drawLabels(t), drawFinalizers(t)
				got, err := s.UpdateSpec(ctx, doc)
				switch {
				case d == nil:
					if !errors.Is(err, store.ErrNotFound) {
						t.Fatalf("update spec of missing %q: %v", key, err)
					}
					return
				case doc.Meta.Revision != d.rev:
					if !errors.Is(err, store.ErrConflict) {
						t.Fatalf("stale update spec of %q: %v", key, err)
					}
					return
				}
				if d.terminating {
					for _, f := range doc.Meta.Finalizers {
						if !slices.Contains(d.finalizers, f) {
							if !errors.Is(err, store.ErrInvalid) {
								t.Fatalf("adding finalizer %q to terminating %q: %v", f, key, err)
							}
							return
						}
					}
				}
				if err != nil {
					t.Fatalf("update spec of %q: %v", key, err)
				}
				if spec == d.spec && maps.Equal(doc.Meta.Labels, d.labels) && slices.Equal(doc.Meta.Finalizers, d.finalizers) {
					if got.Meta.Revision != d.rev {
						t.Fatalf("no-op update spec of %q moved the revision", key)
					}
					return
				}
				if spec != d.spec {
					d.gen++
				}
				d.spec, d.labels, d.finalizers, d.rev = spec, doc.Meta.Labels, doc.Meta.Finalizers, m.rev+1
				if got.Meta.Revision != d.rev || got.Meta.Generation != d.gen {
					t.Fatalf("update spec of %q: revision %d generation %d, want %d and %d",
						key, got.Meta.Revision, got.Meta.Generation, d.rev, d.gen)
				}
				if d.terminating && len(d.finalizers) == 0 {
					delete(m.docs, key)
					write(d.rev, store.Deleted, key)
					return
				}
				write(d.rev, store.Modified, key)
			},
			"update status": func(t *rapid.T) {
				key := rapid.SampledFrom(modelKeys).Draw(t, "key")
				doc, d := current(t, key)
				status := rapid.SampledFrom([]string{"", "x", "y"}).Draw(t, "status")
				doc.Status = []byte(status)
				got, err := s.UpdateStatus(ctx, doc)
				switch {
				case d == nil:
					if !errors.Is(err, store.ErrNotFound) {
						t.Fatalf("update status of missing %q: %v", key, err)
					}
				case doc.Meta.Revision != d.rev:
					if !errors.Is(err, store.ErrConflict) {
						t.Fatalf("stale update status of %q: %v", key, err)
					}
				case err != nil:
					t.Fatalf("update status of %q: %v", key, err)
				case status == d.status:
					if got.Meta.Revision != d.rev {
						t.Fatalf("no-op update status of %q moved the revision", key)
					}
				default:
					d.status, d.rev = status, m.rev+1
					if got.Meta.Revision != d.rev {
						t.Fatalf("update status of %q: revision %d, want %d", key, got.Meta.Revision, d.rev)
					}
					write(d.rev, store.Modified, key)
				}
			},
			"delete": func(t *rapid.T) {
				key := rapid.SampledFrom(modelKeys).Draw(t, "key")
				err := s.Delete(ctx, "Widget", key, store.DeleteOptions{})
				d := m.docs[key]
				switch {
				case d == nil:
					if !errors.Is(err, store.ErrNotFound) {
						t.Fatalf("delete of missing %q: %v", key, err)
					}
				case err != nil:
					t.Fatalf("delete %q: %v", key, err)
				case d.terminating:
				case len(d.finalizers) > 0:
					d.terminating, d.rev = true, m.rev+1
					write(d.rev, store.Modified, key)
				default:
					delete(m.docs, key)
					write(m.rev+1, store.Deleted, key)
				}
			},
			"list": func(t *rapid.T) {
				sel := store.MustParseSelector(rapid.SampledFrom(modelSelectors).Draw(t, "selector"))
				res, err := s.List(ctx, "Widget", store.ListOptions{Selector: sel})
				if err != nil {
					t.Fatal(err)
				}
				var want []string
				for key, d := range m.docs {
					if sel.Matches(d.labels) {
						want = append(want, key)
					}
				}
				slices.Sort(want)
				var got []string
				for _, d := range res.Items {
					got = append(got, d.Meta.Key)
				}
				if !slices.Equal(got, want) || res.Revision != m.rev {
					t.Fatalf("list %q: %q at %d, want %q at %d", sel, got, res.Revision, want, m.rev)
				}
			},
			"get": func(t *rapid.T) {
				key := rapid.SampledFrom(modelKeys).Draw(t, "key")
				got, err := s.Get(ctx, "Widget", key)
				d := m.docs[key]
				if d == nil {
					if !errors.Is(err, store.ErrNotFound) {
						t.Fatalf("get of missing %q: %v", key, err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				gm := got.Meta
				if gm.UID != d.uid || gm.Revision != d.rev || gm.Generation != d.gen || string(got.Spec) != d.spec ||
					string(got.Status) != d.status || !maps.Equal(gm.Labels, d.labels) ||
					!slices.Equal(gm.Finalizers, d.finalizers) || gm.Terminating() != d.terminating {
					t.Fatalf("get %q: %+v %q %q, want %+v", key, gm, got.Spec, got.Status, *d)
				}
			},
			"": func(t *rapid.T) {
				for ; seen < len(m.events); seen++ {
					e, err := w.Next(ctx)
					if err != nil {
						t.Fatal(err)
					}
					want := m.events[seen]
					if e.Type != want.typ || e.Document.Meta.Key != want.key || e.Revision != want.rev {
						t.Fatalf("event %d: %v %q at %d, want %v %q at %d", seen, e.Type, e.Document.Meta.Key, e.Revision, want.typ, want.key, want.rev)
					}
				}
			},
		})
		// Nothing was delivered beyond the model's events.
		last, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "sentinel"}})
		if err != nil {
			t.Fatal(err)
		}
		e, err := w.Next(ctx)
		if err != nil || e.Document.Meta.Key != "sentinel" || e.Revision != last.Meta.Revision {
			t.Fatalf("after the run: got %v %q at %d (%v), want the sentinel", e.Type, e.Document.Meta.Key, e.Revision, err)
		}
	})
}
