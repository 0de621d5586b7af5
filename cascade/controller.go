package cascade

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/tendhq/tend/controller"
	"github.com/tendhq/tend/informer"
	"github.com/tendhq/tend/store"
)

// Defaults of [Config].
const (
	// DefaultName is the name of the controller when [Config.Name] is
	// empty.
	DefaultName = "cascade"
	// DefaultWorkers is the number of documents the controller processes at
	// once when [Config.Workers] is zero.
	DefaultWorkers = 4
	// DefaultResyncPeriod is how often every document is looked at again
	// when [Config.ResyncPeriod] is zero.
	DefaultResyncPeriod = time.Hour
)

// ErrInvalidConfig is returned, wrapped with the reason, by [NewController].
var ErrInvalidConfig = errors.New("cascade: invalid config")

// Config configures the garbage collector made by [NewController].
type Config struct {
	// Backend is the store whose owner references the controller enforces.
	// Give the same store to the [manager.Manager] as its Leaser, so
	// that the controller's writes carry the fence of the lease that
	// entitles the replica to them. Required.
	Backend store.Backend
	// Kinds are the kinds the controller watches: every kind whose
	// documents can be owners or dependents. Dependents of a kind not
	// listed are never found. Empty means every kind of the backend.
	Kinds []string
	// Name names the controller in the manager, in logs and in metrics.
	// Empty means [DefaultName].
	Name string
	// Workers is how many documents are processed at once, and how many
	// dependents of one owner are collected at once. Zero means
	// [DefaultWorkers].
	Workers int
	// ResyncPeriod is how often every document of the watched kinds is
	// queued again, at low priority. It finds what no event reported: the
	// dependents of an owner removed while the store's history was
	// compacted (see [controller.For]). Zero means [DefaultResyncPeriod];
	// a negative value turns periodic resyncs off. Every run of the
	// controller queues every document once, whatever the period, when its
	// kinds have been listed.
	ResyncPeriod time.Duration
	// Logger receives the controller's logs. Nil means no logs.
	Logger *zap.Logger
	// MetricsRegisterer receives the garbage collector's metrics
	// (cascade_*), the controller's and those of its work queue. Nil means
	// no metrics.
	MetricsRegisterer prometheus.Registerer
	// Cache is the informer cache over Backend to watch the kinds through
	// and to read first: usually the cache of the Manager that runs the
	// collector (package manager, Manager.Cache), which runs it, so a
	// process running drivers and the collector on the same kinds opens
	// one watch of each. It must run while the collector does. Nil means
	// each watched kind has an informer of its own and every read goes to
	// the store.
	Cache *informer.Factory
	// TracerProvider receives a span for each of the controller's
	// reconciles (controller.SpanReconcile). Nil means no spans.
	TracerProvider trace.TracerProvider
}

// NewController returns the garbage collector as a controller: run it under a
// [manager.Manager], alone or beside other controllers, and it deletes
// the dependents whose owners are gone and completes foreground and orphan
// deletions. Under a manager that elects a leader or shards keys, only the
// entitled replica works on a document, and its writes carry the lease's
// fence. NewController checks that every kind in cfg.Kinds is one of the
// backend's and registers the metrics; it starts nothing.
func NewController(cfg Config) (*controller.Controller, error) {
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
	name := cmp.Or(cfg.Name, DefaultName)
	log := cmp.Or(cfg.Logger, zap.NewNop())
	m, unregister, err := newMetrics(cfg.MetricsRegisterer)
	if err != nil {
		return nil, err
	}
	workers := cmp.Or(cfg.Workers, DefaultWorkers)
	r := &reconciler{b: cfg.Backend, kinds: kinds, workers: workers, log: log.Named(name), metrics: m}
	var c *controller.Controller // set below, before it can run
	sources := make([]controller.Source, 0, len(kinds)+1)
	var lw informer.ListWatcher = cfg.Backend
	if cfg.Cache != nil {
		lw = cfg.Cache
		r.useCache(cfg.Cache)
	}
	for _, k := range kinds {
		sources = append(sources, controller.Watches(lw, k, r.keysOf))
	}
	every := cmp.Or(cfg.ResyncPeriod, DefaultResyncPeriod)
	sources = append(sources, r.resync(func() bool { return c.HasSynced() }, every))
	c, err = controller.New(controller.Config{
		Name:              name,
		Reconciler:        r,
		Sources:           sources,
		Workers:           workers,
		Logger:            cfg.Logger,
		MetricsRegisterer: cfg.MetricsRegisterer,
		TracerProvider:    cfg.TracerProvider,
	})
	if err != nil {
		unregister()
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return c, nil
}

// reconciler is the garbage collector's [controller.Reconciler]. Its keys
// name one document at one UID (see keyOf): the document is processed if
// it is still there, and its dependents are collected if it is gone.
type reconciler struct {
	b       store.Backend
	kinds   []string    // sorted
	workers int         // also how many dependents one reconcile collects at once
	log     *zap.Logger // for the resync source; reconciles log through controller.LoggerFrom
	metrics *metrics
	cache   map[string]*informer.Informer // the informers of Config.Cache by kind; nil: reads go to the store
}

// keyOf returns the work-queue key of the document kind/key with uid:
// "Kind/key@uid". Kinds have no '/' and keys no '@' (see
// store.ValidateKind and store.ValidateKey), so the parts split back.
func keyOf(kind, key, uid string) string { return kind + "/" + key + "@" + uid }

// parseKey splits a key made by keyOf.
func parseKey(s string) (kind, key, uid string, ok bool) {
	kind, rest, ok1 := strings.Cut(s, "/")
	key, uid, ok2 := strings.Cut(rest, "@")
	return kind, key, uid, ok1 && ok2 && kind != "" && key != "" && uid != ""
}

// errBadKey is the terminal error of a key keyOf did not make.
var errBadKey = errors.New("cascade: malformed key")

// keysOf returns the keys a change to doc queues: the document itself (which
// may have lost its owners, become held by a policy finalizer, or be gone,
// leaving its dependents) and its owners of the watched kinds (a held owner
// waits for changes to its dependents).
func (r *reconciler) keysOf(doc store.Document) []string {
	m := &doc.Meta
	keys := make([]string, 1, 1+len(m.Owners))
	keys[0] = keyOf(m.Kind, m.Key, m.UID)
	for _, o := range m.Owners {
		if o.UID != "" && r.watched(o.Kind) {
			keys = append(keys, keyOf(o.Kind, o.Key, o.UID))
		}
	}
	return keys
}

func (r *reconciler) watched(kind string) bool {
	_, ok := slices.BinarySearch(r.kinds, kind)
	return ok
}

// Reconcile implements [controller.Reconciler]. It reads the document the
// key names and does what it needs (see process); when the document is
// gone, or replaced by another under its key, it collects the dependents
// that referred to it. It reads the shared cache first, and the store when
// that finds a write to make (see pass).
func (r *reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	kind, k, uid, ok := parseKey(key)
	if !ok {
		return controller.Result{}, controller.Terminal(fmt.Errorf("%w: %q", errBadKey, key))
	}
	err := r.cached().reconcile(ctx, kind, k, uid)
	if errors.Is(err, errNeedsStore) {
		err = (&pass{reconciler: r}).reconcile(ctx, kind, k, uid)
	}
	if err != nil {
		r.metrics.errors.Inc()
	}
	return controller.Result{}, err
}

// reconcile does what the document kind/k at uid needs, as Reconcile
// describes.
func (p *pass) reconcile(ctx context.Context, kind, k, uid string) error {
	doc, err := p.get(ctx, kind, k)
	switch {
	case errors.Is(err, store.ErrNotFound) || err == nil && doc.Meta.UID != uid:
		return p.gone(ctx, uid)
	case err == nil:
		return p.process(ctx, doc)
	}
	return err
}

// syncPoll is how often the resync source checks whether the controller's
// other sources have listed.
const syncPoll = 100 * time.Millisecond

// resync returns a source that queues every document of the watched kinds,
// at low priority: once as soon as every other source has listed, then every
// period if it is positive. The first pass finds what the sources starting
// together miss: a document deleted after its dependents' kind was listed
// and before its own kind was, which no event reports.
func (r *reconciler) resync(synced func() bool, every time.Duration) controller.Source {
	return controller.SourceFunc(func(ctx context.Context, e controller.Enqueuer) error {
		t := time.NewTicker(syncPoll)
		defer t.Stop()
		for !synced() {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		}
		for {
			r.queueAll(ctx, e)
			if every <= 0 {
				return nil
			}
			t.Reset(every)
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		}
	})
}

// queueAll lists the watched kinds (from the shared cache when there is
// one) and queues every document at low priority. A kind whose list fails waits for the next pass.
func (r *reconciler) queueAll(ctx context.Context, e controller.Enqueuer) {
	p := r.cached()
	for _, k := range r.kinds {
		items, err := p.list(ctx, k, store.ListOptions{})
		if err != nil {
			if ctx.Err() == nil {
				r.log.Warn("resync: list failed", zap.String("kind", k), zap.Error(err))
			}
			continue
		}
		for _, d := range items {
			e.EnqueueLow(keyOf(d.Meta.Kind, d.Meta.Key, d.Meta.UID), "cascade resync")
		}
	}
}
