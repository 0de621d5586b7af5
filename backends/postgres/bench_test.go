package postgres_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tendhq/tend/backends/postgres"
	"github.com/tendhq/tend/backends/postgres/postgrestest"
	"github.com/tendhq/tend/manager/managertest"
	"github.com/tendhq/tend/store"
)

// BenchmarkUpdateStatus measures the latency of one status write: a
// transaction that locks the row, checks the revision, writes the row and
// logs the change.
func BenchmarkUpdateStatus(b *testing.B) {
	ctx := b.Context()
	s := newStore(b, postgres.Config{Logger: nopLogger})
	d, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "bench"}})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		d.Status = fmt.Appendf(d.Status[:0], `{"n":%d}`, i)
		if d, err = s.UpdateStatus(ctx, d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpdateStatusParallel measures status write throughput with
// concurrent writers, each on its own document (they still serialise on the
// revision counter at commit).
func BenchmarkUpdateStatusParallel(b *testing.B) {
	ctx := b.Context()
	s := newStore(b, postgres.Config{Logger: nopLogger})
	var n atomic.Int64
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		d, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: fmt.Sprintf("bench-%d", n.Add(1))}})
		if err != nil {
			b.Error(err)
			return
		}
		for i := 0; pb.Next(); i++ {
			d.Status = fmt.Appendf(d.Status[:0], `{"n":%d}`, i)
			if d, err = s.UpdateStatus(ctx, d); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkWatchDelivery measures the time from the start of a status write
// to its event reaching a watch that was waiting for it (woken by NOTIFY),
// reported as ns/delivery; ns/op is the same loop.
func BenchmarkWatchDelivery(b *testing.B) {
	ctx := b.Context()
	s := newStore(b, postgres.Config{Logger: nopLogger})
	d, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "bench"}})
	if err != nil {
		b.Fatal(err)
	}
	w, err := s.Watch(ctx, "Widget", d.Meta.Revision)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	received := make(chan time.Time)
	go func() {
		for {
			if _, err := w.Next(ctx); err != nil {
				close(received)
				return
			}
			received <- time.Now()
		}
	}()
	var total time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		d.Status = fmt.Appendf(d.Status[:0], `{"n":%d}`, i)
		if d, err = s.UpdateStatus(ctx, d); err != nil {
			b.Fatal(err)
		}
		at, ok := <-received
		if !ok {
			b.Fatal("watch failed")
		}
		total += at.Sub(start)
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/delivery")
	w.Close()
	for range received {
	}
}

// BenchmarkConverge measures 10,000 documents going from Creating to
// Started through a gateway-like machine with instant steps, as
// managertest.Converge describes, with 8 and with 32 workers. Run it once
// per measurement:
//
//	go test -run '^$' -bench Converge -benchtime 1x .
func BenchmarkConverge(b *testing.B) {
	pool := newPool(b)
	for _, workers := range []int{8, 32} {
		b.Run(fmt.Sprintf("workers-%d", workers), func(b *testing.B) {
			managertest.Converge(b, managertest.ConvergeConfig{Workers: workers,
				Open: func(b *testing.B, kinds []string) store.Backend {
					return newStore(b, postgres.Config{Pool: pool, Kinds: kinds, Logger: nopLogger})
				},
				ServerCPU: postgrestest.ServerCPU(b, pool),
			})
		})
	}
}
