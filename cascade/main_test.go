package cascade_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/cascade"
	"github.com/tendhq/tend/store"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// kinds are the kinds of the test stores: gateways own routes, routes own
// secrets, in tests where that matters.
var kinds = []string{"Gateway", "Route", "Secret"}

// tb is what the helpers need from *testing.T and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// world is a memory store and helpers to build owner graphs in it. Names are
// "Kind/key".
type world struct {
	t tb
	s *memory.Store
}

func newWorld(t tb) *world {
	t.Helper()
	s, err := memory.New(memory.Config{Kinds: kinds})
	if err != nil {
		t.Fatal(err)
	}
	return &world{t: t, s: s}
}

func split(name string) (kind, key string) {
	kind, key, _ = strings.Cut(name, "/")
	return kind, key
}

// create stores the named document with the given finalizers.
func (w *world) create(name string, finalizers ...string) store.Document {
	w.t.Helper()
	kind, key := split(name)
	doc, err := w.s.Create(context.Background(), store.Document{
		Meta: store.Meta{Kind: kind, Key: key, Finalizers: finalizers},
		Spec: []byte(`{}`),
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return doc
}

// own makes dependent refer to owners; a name prefixed with "!" blocks the
// owner's deletion.
func (w *world) own(dependent string, owners ...string) {
	w.t.Helper()
	var refs []store.OwnerRef
	for _, o := range owners {
		block := strings.HasPrefix(o, "!")
		o = strings.TrimPrefix(o, "!")
		doc := w.get(o)
		refs = append(refs, store.OwnerRef{Kind: doc.Meta.Kind, Key: doc.Meta.Key, UID: doc.Meta.UID, BlockOwnerDeletion: block})
	}
	w.setOwners(dependent, refs)
}

func (w *world) setOwners(name string, refs []store.OwnerRef) {
	w.t.Helper()
	doc := w.get(name)
	doc.Meta.Owners = refs
	if _, err := w.s.UpdateSpec(context.Background(), doc); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) get(name string) store.Document {
	w.t.Helper()
	kind, key := split(name)
	doc, err := w.s.Get(context.Background(), kind, key)
	if err != nil {
		w.t.Fatalf("get %s: %v", name, err)
	}
	return doc
}

func (w *world) exists(name string) bool {
	w.t.Helper()
	kind, key := split(name)
	_, err := w.s.Get(context.Background(), kind, key)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		w.t.Fatal(err)
	}
	return err == nil
}

// owners returns the keys of the owners name refers to, as "Kind/key".
func (w *world) owners(name string) []string {
	w.t.Helper()
	var out []string
	for _, o := range w.get(name).Meta.Owners {
		out = append(out, o.Kind+"/"+o.Key)
	}
	slices.Sort(out)
	return out
}

func (w *world) delete(name string, p cascade.Policy) {
	w.t.Helper()
	kind, key := split(name)
	if err := cascade.Delete(context.Background(), w.s, kind, key, p); err != nil {
		w.t.Fatal(err)
	}
}

// names lists every stored document.
func (w *world) names() []string {
	w.t.Helper()
	var out []string
	for _, k := range kinds {
		res, err := w.s.List(context.Background(), k, store.ListOptions{})
		if err != nil {
			w.t.Fatal(err)
		}
		for _, d := range res.Items {
			out = append(out, k+"/"+d.Meta.Key)
		}
	}
	return out
}

// revision returns the store's current revision.
func (w *world) revision() int64 {
	w.t.Helper()
	res, err := w.s.List(context.Background(), kinds[0], store.ListOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	return res.Revision
}

// removals returns the revision at which each document was removed after
// revision from. It must run inside a synctest bubble, after settle.
func (w *world) removals(from int64) map[string]int64 {
	w.t.Helper()
	out := make(map[string]int64)
	for _, k := range kinds {
		watch, err := w.s.Watch(context.Background(), k, from)
		if err != nil {
			w.t.Fatal(err)
		}
		for {
			// Every change is already stored, so the wait only ends when
			// there is nothing left to read.
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			ev, err := watch.Next(ctx)
			cancel()
			if err != nil {
				break
			}
			if ev.Type == store.Deleted {
				out[k+"/"+ev.Document.Meta.Key] = ev.Revision
			}
		}
		watch.Close()
	}
	return out
}

// start runs a collector on b until the returned stop is called; stop checks
// that Run returned nil.
func start(t tb, cfg cascade.Config) (stop func()) {
	t.Helper()
	c, err := cascade.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
	}
}

// settle lets every goroutine of the bubble finish what it can, including
// retries delayed by backoff, and returns when all are blocked with nothing
// left to do.
func settle() {
	for range 3 {
		time.Sleep(time.Hour)
		synctest.Wait()
	}
}
