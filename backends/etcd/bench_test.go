package etcd_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tendhq/tend/backends/etcd"
	"github.com/tendhq/tend/manager/managertest"
	"github.com/tendhq/tend/store"
)

// benchStore returns a store of kinds on a fresh one-member cluster that
// syncs its log to disk, as a production member does.
func benchStore(b *testing.B, kinds ...string) *etcd.Store {
	b.Helper()
	dir, err := os.MkdirTemp("", "tend-etcd-bench-")
	if err != nil {
		b.Fatal(err)
	}
	c, err := startCluster(dir, clusterOptions{members: 1, fsync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.stop(); os.RemoveAll(dir) })
	s, err := etcd.New(etcd.Config{Client: c.client(b), Kinds: kinds})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkUpdateStatus measures one status update: a read of the
// document and a transaction comparing its revision, as a controller's
// step ends.
func BenchmarkUpdateStatus(b *testing.B) {
	s := benchStore(b, "Widget")
	ctx := b.Context()
	d, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "k"}, Spec: []byte(`{"state":"Started"}`)})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		d.Status = fmt.Appendf(nil, `{"phase":"Creating","step":%d}`, i)
		if d, err = s.UpdateStatus(ctx, d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWatchDelivery measures the time from the start of a status
// update to its event coming out of a watch's Next, reported as
// ns/delivery.
func BenchmarkWatchDelivery(b *testing.B) {
	s := benchStore(b, "Widget")
	ctx := b.Context()
	d, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "k"}})
	if err != nil {
		b.Fatal(err)
	}
	w, err := s.Watch(ctx, "Widget", d.Meta.Revision)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	var total time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		d.Status = fmt.Appendf(nil, `{"step":%d}`, i)
		start := time.Now()
		if d, err = s.UpdateStatus(ctx, d); err != nil {
			b.Fatal(err)
		}
		e, err := w.Next(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if e.Revision != d.Meta.Revision {
			b.Fatalf("event at %d, want %d", e.Revision, d.Meta.Revision)
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/delivery")
}

// BenchmarkConverge measures 10,000 documents going from Creating to
// Started through a gateway-like machine with instant steps, as
// managertest.Converge describes, with 8 and with 32 workers. Run it once
// per measurement:
//
//	go test -run '^$' -bench Converge -benchtime 1x .
func BenchmarkConverge(b *testing.B) {
	for _, workers := range []int{8, 32} {
		b.Run(fmt.Sprintf("workers-%d", workers), func(b *testing.B) {
			managertest.Converge(b, managertest.ConvergeConfig{Workers: workers,
				Open: func(b *testing.B, kinds []string) store.Backend { return benchStore(b, kinds...) },
			})
		})
	}
}
