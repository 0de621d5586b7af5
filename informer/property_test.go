package informer_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/informer"
	"github.com/tendhq/tend/store"
)

// Whatever the store does (writes, compactions) and whatever happens to the
// watch (broken connections, a consumer held back while history is
// compacted), once the informer has caught up its cache equals the store,
// and the events a subscriber received, applied in order, rebuild the store:
// each event's Old is what the subscriber last saw of the document.
func TestInformerProperty(t *testing.T) {
	keys := []string{"a", "b", "c", "d"}
	rapid.Check(t, func(rt *rapid.T) {
		rapid.SyncTest(rt, func(rt *rapid.T) {
			mem, err := memory.New(memory.Config{Kinds: []string{"Widget"}})
			if err != nil {
				rt.Fatal(err)
			}
			s := &scripted{Store: mem}
			inf, err := informer.New(s, "Widget", informer.Config{Backoff: func(int) time.Duration { return time.Second }})
			if err != nil {
				rt.Fatal(err)
			}
			ctx, cancel := context.WithCancel(rt.Context())
			done := make(chan error, 1)
			go func() { done <- inf.Run(ctx) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					rt.Fatal(err)
				}
			}()
			sub, snap := inf.Subscribe()
			defer sub.Close()
			model := map[string]int64{} // key → revision, as the subscriber saw it
			for _, d := range snap {
				model[d.Meta.Key] = d.Meta.Revision
			}
			apply := func() {
				for sub.Len() > 0 {
					e, err := sub.Next(ctx)
					if err != nil {
						rt.Fatal(err)
					}
					k := e.Document.Meta.Key
					rev, known := model[k]
					switch {
					case e.Type == store.Added && known:
						rt.Fatalf("Added %s, which the subscriber holds at %d", k, rev)
					case e.Type != store.Added && (!known || e.Old == nil || e.Old.Meta.Revision != rev):
						rt.Fatalf("%v %s with old %v; the subscriber holds it: %v at %d", e.Type, k, e.Old, known, rev)
					case e.Type == store.Deleted:
						delete(model, k)
					default:
						model[k] = e.Document.Meta.Revision
					}
				}
			}
			held := false
			rt.Repeat(map[string]func(*rapid.T){
				"write": func(rt *rapid.T) {
					k := rapid.SampledFrom(keys).Draw(rt, "key")
					d, err := s.Get(ctx, "Widget", k)
					switch {
					case errors.Is(err, store.ErrNotFound):
						_, err = s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: k}, Spec: []byte(`{}`)})
					case err == nil && rapid.Bool().Draw(rt, "delete"):
						err = s.Delete(ctx, "Widget", k, store.DeleteOptions{})
					case err == nil:
						d.Spec = fmt.Appendf(nil, `{"at":%d}`, d.Meta.Revision)
						_, err = s.UpdateSpec(ctx, d)
					}
					if err != nil {
						rt.Fatal(err)
					}
				},
				"compact": func(rt *rapid.T) {
					res, err := s.Store.List(ctx, "Widget", store.ListOptions{})
					if err != nil {
						rt.Fatal(err)
					}
					if res.Revision > 0 {
						if err := s.Compact(ctx, res.Revision); err != nil {
							rt.Fatal(err)
						}
					}
				},
				"break": func(rt *rapid.T) {
					s.mu.Lock()
					s.failNext = errors.New("connection reset")
					s.mu.Unlock()
				},
				"hold": func(rt *rapid.T) {
					s.mu.Lock()
					if held {
						close(s.held)
						s.held = nil
					} else {
						s.held = make(chan struct{})
					}
					held = !held
					s.mu.Unlock()
				},
				"settle": func(rt *rapid.T) {
					synctest.Wait()
					apply()
				},
				"": func(rt *rapid.T) {
					// Let time pass for the backoff, then check.
					if held {
						return
					}
					time.Sleep(2 * time.Second)
					synctest.Wait()
					apply()
					check(rt, s, inf, model)
				},
			})
			if held {
				s.mu.Lock()
				close(s.held)
				s.held = nil
				s.mu.Unlock()
			}
			s.mu.Lock()
			s.failNext = nil
			s.mu.Unlock()
			time.Sleep(2 * time.Second)
			synctest.Wait()
			apply()
			check(rt, s, inf, model)
		})
	})
}

// check compares the store with the informer's cache and with the
// subscriber's model, once the informer has caught up.
func check(rt *rapid.T, s *scripted, inf *informer.Informer, model map[string]int64) {
	res, err := s.Store.List(rt.Context(), "Widget", store.ListOptions{})
	if err != nil {
		rt.Fatal(err)
	}
	want := map[string]int64{}
	for _, d := range res.Items {
		want[d.Meta.Key] = d.Meta.Revision
	}
	if inf.Revision() != res.Revision {
		rt.Fatalf("informer at revision %d, the store at %d", inf.Revision(), res.Revision)
	}
	docs, _, _ := inf.List(store.ListOptions{})
	cached := map[string]int64{}
	for _, d := range docs {
		cached[d.Meta.Key] = d.Meta.Revision
	}
	if !maps.Equal(cached, want) {
		rt.Fatalf("cache %v, store %v", cached, want)
	}
	if !maps.Equal(model, want) {
		rt.Fatalf("events rebuild %v, store %v", model, want)
	}
}
