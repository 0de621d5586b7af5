package cascade

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/workqueue"
	"github.com/tendhq/tend/workqueue/queueprom"
)

// DefaultWorkers is the number of documents a [Collector] processes at once
// when [Config.Workers] is zero.
const DefaultWorkers = 4

// Bounds of the wait before a [Collector] lists or watches again after a
// store error. The wait doubles after each consecutive failure.
const (
	minRetryDelay = 100 * time.Millisecond
	maxRetryDelay = 30 * time.Second
)

// ErrInvalidConfig is returned, wrapped with the reason, by [New].
var ErrInvalidConfig = errors.New("cascade: invalid config")

// ErrRunning is returned by [Collector.Run] when the collector is already
// running.
var ErrRunning = errors.New("cascade: collector already running")

// Config configures a [Collector].
type Config struct {
	// Backend is the store whose owner references the collector enforces.
	// Required.
	Backend store.Backend
	// Kinds are the kinds the collector watches: every kind whose documents
	// can be owners or dependents. Dependents of a kind not listed are never
	// found. Empty means every kind of the backend.
	Kinds []string
	// Workers is how many documents are processed at once. Zero means
	// [DefaultWorkers].
	Workers int
	// Logger receives the collector's logs, named "cascade". Nil means no
	// logs.
	Logger *zap.Logger
	// MetricsRegisterer receives the collector's metrics (cascade_*) and
	// those of its work queue (workqueue_* with name "cascade"). Nil means no
	// metrics.
	MetricsRegisterer prometheus.Registerer
}

// Collector deletes the dependents whose owners are gone and completes
// foreground and orphan deletions. Several collectors may run on one store at
// once. See the package documentation.
type Collector struct {
	b       store.Backend
	kinds   []string
	workers int
	log     *zap.Logger
	reg     prometheus.Registerer
	metrics *metrics
	running atomic.Bool // set while Run runs
}

// New returns a collector configured by cfg. It checks that every kind in
// cfg.Kinds is one of the backend's and registers the metrics; it starts
// nothing.
func New(cfg Config) (*Collector, error) {
	if cfg.Backend == nil {
		return nil, fmt.Errorf("%w: Backend is required", ErrInvalidConfig)
	}
	if cfg.Workers < 0 {
		return nil, fmt.Errorf("%w: Workers %d is negative", ErrInvalidConfig, cfg.Workers)
	}
	known := cfg.Backend.Kinds()
	kinds := slices.Clone(cfg.Kinds)
	if len(kinds) == 0 {
		kinds = slices.Clone(known)
	}
	slices.Sort(kinds)
	kinds = slices.Compact(kinds)
	for _, k := range kinds {
		if !slices.Contains(known, k) {
			return nil, fmt.Errorf("%w: kind %q: %w", ErrInvalidConfig, k, store.ErrUnknownKind)
		}
	}
	c := &Collector{
		b:       cfg.Backend,
		kinds:   kinds,
		workers: cfg.Workers,
		log:     cfg.Logger,
		reg:     cfg.MetricsRegisterer,
	}
	if c.workers == 0 {
		c.workers = DefaultWorkers
	}
	if c.log == nil {
		c.log = zap.NewNop()
	}
	c.log = c.log.Named("cascade")
	m, err := newMetrics(c.reg)
	if err != nil {
		return nil, err
	}
	c.metrics = m
	return c, nil
}

// Run lists every watched kind, processes what needs it, then watches the
// kinds and processes each change until ctx ends. A lost watch is resumed,
// and history the store no longer holds ([store.ErrCompacted]) makes it list
// that kind again; other store errors are logged and retried with backoff.
// Run returns nil once ctx has ended and every goroutine it started has
// stopped, or at once with an error if its work queue's metrics cannot be
// registered. It may be called again after it returned; a concurrent call
// fails with [ErrRunning].
func (c *Collector) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer c.running.Store(false)
	qc := workqueue.Config[ref]{Name: "cascade"}
	if c.reg != nil {
		qc.Metrics = queueprom.New(queueprom.Config{Registerer: c.reg})
	}
	q, err := workqueue.New(qc)
	if err != nil {
		return err
	}
	defer q.ShutDown()
	r := &run{Collector: c, graph: newGraph(), queue: q}

	revs := make([]int64, len(c.kinds))
	for i, k := range c.kinds {
		res, ok := r.list(ctx, k)
		if !ok {
			return nil
		}
		for j := range res.Items {
			r.graph.upsert(&res.Items[j].Meta)
		}
		revs[i] = res.Revision
	}
	for _, d := range r.graph.pending() {
		q.Add(d)
	}

	var wg sync.WaitGroup
	for i, k := range c.kinds {
		wg.Go(func() { r.watch(ctx, k, revs[i]) })
	}
	for range c.workers {
		wg.Go(func() { r.work(ctx) })
	}
	<-ctx.Done()
	q.ShutDown()
	wg.Wait()
	return nil
}

// run is the state of one call of Run.
type run struct {
	*Collector
	graph *graph
	queue *workqueue.Queue[ref]
}

// list lists kind, retrying with backoff until it succeeds or ctx ends.
func (r *run) list(ctx context.Context, kind string) (store.ListResult, bool) {
	delay := minRetryDelay
	for {
		res, err := r.b.List(ctx, kind, store.ListOptions{})
		if err == nil {
			return res, true
		}
		if ctx.Err() != nil {
			return store.ListResult{}, false
		}
		r.log.Warn("list failed", zap.String("kind", kind), zap.Error(err))
		if !sleep(ctx, &delay) {
			return store.ListResult{}, false
		}
	}
}

// watch follows the changes to kind from revision rev until ctx ends.
func (r *run) watch(ctx context.Context, kind string, rev int64) {
	delay := minRetryDelay
	for {
		w, err := r.b.Watch(ctx, kind, rev)
		if err == nil {
			rev, err = r.follow(ctx, w, rev, &delay)
			w.Close()
		}
		if ctx.Err() != nil {
			return
		}
		switch {
		case errors.Is(err, store.ErrWatchLagged):
			r.log.Debug("watch fell behind; resuming", zap.String("kind", kind), zap.Int64("revision", rev))
			continue
		case errors.Is(err, store.ErrCompacted):
			r.log.Info("watch history compacted; listing again", zap.String("kind", kind), zap.Int64("revision", rev))
			res, ok := r.list(ctx, kind)
			if !ok {
				return
			}
			r.metrics.relists.Inc()
			r.enqueue(r.graph.replace(kind, res.Items))
			rev = res.Revision
			continue
		}
		r.log.Warn("watch failed", zap.String("kind", kind), zap.Int64("revision", rev), zap.Error(err))
		if !sleep(ctx, &delay) {
			return
		}
	}
}

// follow applies the events of w to the graph and returns the revision of the
// last one and the error that ended the watch.
func (r *run) follow(ctx context.Context, w store.Watch, rev int64, delay *time.Duration) (int64, error) {
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			return rev, err
		}
		*delay = minRetryDelay
		m := &ev.Document.Meta
		if ev.Type == store.Deleted {
			r.enqueue(r.graph.remove(m.Kind, m.Key))
		} else {
			r.enqueue(r.graph.upsert(m))
		}
		rev = ev.Revision
	}
}

func (r *run) enqueue(refs []ref) {
	for _, d := range refs {
		r.queue.Add(d)
	}
}

// work processes queued documents until the queue shuts down.
func (r *run) work(ctx context.Context) {
	for {
		d, shutdown := r.queue.Get()
		if shutdown {
			return
		}
		if ctx.Err() == nil {
			if err := r.process(ctx, d); err != nil && ctx.Err() == nil {
				r.metrics.errors.Inc()
				level := zap.WarnLevel
				if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
					level = zap.DebugLevel
				}
				r.log.Log(level, "processing failed; will retry", zap.String("kind", d.kind), zap.String("key", d.key), zap.Error(err))
				r.queue.AddRateLimited(d)
			} else {
				r.queue.Forget(d)
			}
		}
		r.queue.Done(d)
	}
}

// sleep waits *delay, doubles it up to maxRetryDelay, and reports whether ctx
// is still live.
func sleep(ctx context.Context, delay *time.Duration) bool {
	t := time.NewTimer(*delay)
	defer t.Stop()
	*delay = min(2**delay, maxRetryDelay)
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
