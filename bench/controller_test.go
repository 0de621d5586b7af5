package bench

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	cgworkqueue "k8s.io/client-go/util/workqueue"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	tendctrl "github.com/tendhq/tend/controller"
)

// inFlight bounds how many keys the producer has sent and the reconciler not
// yet seen, so that no key of the pool is ever pending twice and every send
// is one reconcile.
const inFlight = 1_000

// dispatcher is one controller under test: send queues a key through the
// controller's channel source; the controller's no-op reconciler calls
// reconciled.
type dispatcher struct {
	name  string
	start func(tb testing.TB, ctx context.Context, workers int, reconciled func()) (send func(key string), wait func())
}

var dispatchers = []dispatcher{
	{name: "tend", start: startTend(false)},
	{name: "tend/metrics", start: startTend(true)},
	{name: "controller-runtime", start: startControllerRuntime},
}

func startTend(metrics bool) func(testing.TB, context.Context, int, func()) (func(string), func()) {
	return func(tb testing.TB, ctx context.Context, workers int, reconciled func()) (func(string), func()) {
		ch := make(chan string, inFlight)
		cfg := tendctrl.Config{
			Name: "bench",
			Reconciler: tendctrl.ReconcilerFunc(func(context.Context, string) (tendctrl.Result, error) {
				reconciled()
				return tendctrl.Result{}, nil
			}),
			Sources: []tendctrl.Source{tendctrl.Channel(ch)},
			Workers: workers,
		}
		if metrics {
			cfg.MetricsRegisterer = prometheus.NewRegistry()
		}
		c, err := tendctrl.New(cfg)
		if err != nil {
			tb.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		return func(key string) { ch <- key }, func() {
			if err := <-done; err != nil {
				tb.Error(err)
			}
		}
	}
}

func startControllerRuntime(tb testing.TB, ctx context.Context, workers int, reconciled func()) (func(string), func()) {
	ch := make(chan event.TypedGenericEvent[string], inFlight)
	skip := true
	c, err := crcontroller.NewTypedUnmanaged("bench", crcontroller.TypedOptions[string]{
		SkipNameValidation:      &skip,
		MaxConcurrentReconciles: workers,
		Logger:                  logr.Discard(),
		Reconciler: reconcile.TypedFunc[string](func(context.Context, string) (reconcile.Result, error) {
			reconciled()
			return reconcile.Result{}, nil
		}),
	})
	if err != nil {
		tb.Fatal(err)
	}
	err = c.Watch(source.TypedChannel[string, string](ch, handler.TypedFuncs[string, string]{
		GenericFunc: func(_ context.Context, e event.TypedGenericEvent[string], q cgworkqueue.TypedRateLimitingInterface[string]) {
			q.Add(e.Object)
		},
	}))
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	return func(key string) { ch <- event.TypedGenericEvent[string]{Object: key} }, func() {
		if err := <-done; err != nil {
			tb.Error(err)
		}
	}
}

// BenchmarkDispatch measures no-op reconciles driven through a controller
// fed by a channel source: one op is one key sent on the channel and
// reconciled. tend and controller-runtime run side by side, with one worker
// and with four.
func BenchmarkDispatch(b *testing.B) {
	for _, workers := range []int{1, 4} {
		for _, d := range dispatchers {
			b.Run(d.name+"/workers-"+strconv.Itoa(workers), func(b *testing.B) {
				ctx, cancel := context.WithCancel(context.Background())
				slots := make(chan struct{}, inFlight)
				var left atomic.Int64
				left.Store(int64(b.N))
				finished := make(chan struct{})
				send, wait := d.start(b, ctx, workers, func() {
					<-slots
					if left.Add(-1) == 0 {
						close(finished)
					}
				})
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					slots <- struct{}{}
					send(pool[i%len(pool)])
				}
				<-finished
				b.StopTimer()
				cancel()
				wait()
			})
		}
	}
}
