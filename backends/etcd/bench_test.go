package etcd_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tendhq/tend/backends/etcd"
	"github.com/tendhq/tend/store"
)

// benchStore returns a store on a fresh one-member cluster that syncs its
// log to disk, as a production member does.
func benchStore(b *testing.B) *etcd.Store {
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
	s, err := etcd.New(etcd.Config{Client: c.client(b), Kinds: []string{"Widget"}})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkUpdateStatus measures one status update: a read of the
// document and a transaction comparing its revision, as a controller's
// step ends.
func BenchmarkUpdateStatus(b *testing.B) {
	s := benchStore(b)
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
// update to its event coming out of a watch's Next.
func BenchmarkWatchDelivery(b *testing.B) {
	s := benchStore(b)
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
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs/delivery")
}
