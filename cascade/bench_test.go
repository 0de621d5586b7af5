package cascade_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/tendhq/tend/manager"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/cascade"
	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/store"
)

// BenchmarkCascade deletes one gateway owning n routes, each owning a
// secret, all references blocking, and measures the time until the
// garbage collector has removed all 2n+1 documents.
func BenchmarkCascade(b *testing.B) {
	for _, policy := range []cascade.Policy{cascade.Background, cascade.Foreground} {
		for _, n := range []int{100, 1000, 5000} {
			b.Run(fmt.Sprintf("%s/%d", policy, n), func(b *testing.B) {
				for range b.N {
					b.StopTimer()
					benchCascade(b, policy, n)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(2*n+1)), "ns/document")
			})
		}
	}
}

func benchCascade(b *testing.B, policy cascade.Policy, n int) {
	ctx := context.Background()
	s, err := memory.New(memory.Config{Kinds: kinds, History: 8*n + 1, WatchBuffer: 8 * n})
	if err != nil {
		b.Fatal(err)
	}
	gw, _ := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Gateway", Key: "g"}})
	for i := range n {
		r, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Route", Key: fmt.Sprint("r", i),
			Owners: []store.OwnerRef{{Kind: "Gateway", Key: "g", UID: gw.Meta.UID, BlockOwnerDeletion: true}}}})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Secret", Key: fmt.Sprint("s", i),
			Owners: []store.OwnerRef{{Kind: "Route", Key: r.Meta.Key, UID: r.Meta.UID, BlockOwnerDeletion: true}}}}); err != nil {
			b.Fatal(err)
		}
	}
	from := gw.Meta.Revision + int64(2*n)
	var watches []store.Watch
	for _, k := range kinds {
		w, err := s.Watch(ctx, k, from)
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close()
		watches = append(watches, w)
	}
	c, _ := cascade.NewController(cascade.Config{Backend: s})
	m, _ := manager.New(manager.Config{Controllers: []*controller.Controller{c}})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx) }()
	defer func() { stop(); <-done }()

	b.StartTimer()
	if err := cascade.Delete(ctx, s, "Gateway", "g", policy); err != nil {
		b.Fatal(err)
	}
	for i, w := range watches {
		left := n
		if kinds[i] == "Gateway" {
			left = 1
		}
		for left > 0 {
			ev, err := w.Next(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if ev.Type == store.Deleted {
				left--
			}
		}
	}
	b.StopTimer()
}
