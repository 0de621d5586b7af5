package platform

import (
	"context"
	"testing"
	"time"

	"github.com/tendhq/tend/examples/gateway/infra"
	"github.com/tendhq/tend/store"
)

// tickCascade is the least time a one-step-per-tick design needs to delete a gateway:
// its task service ticks once a second and each tick does one step of the
// cascade, which has at least six.
const tickCascade = 6 * time.Second

// BenchmarkCascadeDelete measures the cascade deletion of one gateway (two
// cloud functions, two cron triggers, three stages and environments with a
// client app each, a runtime domain with a custom domain, an instance, a
// database, a namespace) on the memory store with zero simulated delay: from
// the intent write State=Deleted to the removal of the gateway's document. It
// reports the store writes per deletion and the speed-up over a one-step-per-tick
// one-step-per-second design.
//
//	go test -run '^$' -bench CascadeDelete ./examples/gateway/platform
func BenchmarkCascadeDelete(b *testing.B) {
	var total time.Duration
	var writes int64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e := newEnv(b, infra.SimConfig{})
		p, err := New(Config{Store: e.st, Cluster: e.sim, Databases: e.sim, Poll: time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		e.populate(p, "gw-1")
		w, err := e.st.Watch(ctx, KindApiGateway, revisionOf(b, e.st))
		if err != nil {
			b.Fatal(err)
		}
		before := revisionOf(b, e.st)
		b.StartTimer()

		start := time.Now()
		if _, err := p.SetGatewayState(ctx, "gw-1", Deleted); err != nil {
			b.Fatal(err)
		}
		for {
			ev, err := w.Next(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if ev.Type == store.Deleted {
				break
			}
		}
		total += time.Since(start)

		b.StopTimer()
		writes += revisionOf(b, e.st) - before
		w.Close()
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		e.checkClean(p, "gw-1")
		if b.Failed() {
			b.FailNow()
		}
		b.StartTimer()
	}
	per := total / time.Duration(b.N)
	b.ReportMetric(float64(per.Microseconds())/1000, "ms/delete")
	b.ReportMetric(float64(writes)/float64(b.N), "writes/delete")
	b.ReportMetric(float64(tickCascade)/float64(per), "x-faster-than-ticks")
}

func revisionOf(b *testing.B, st store.Backend) int64 {
	res, err := st.List(context.Background(), KindApiGateway, store.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return res.Revision
}
