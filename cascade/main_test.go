package cascade_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/manager"

	"go.uber.org/goleak"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/cascade"
	"github.com/tendhq/tend/controller"
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

// start runs the garbage collector configured by cfg under a Manager in
// Single mode until the returned stop is called; stop checks that Run
// returned nil. Resyncs are off unless cfg asks for them, so that tests see
// what events alone achieve.
func start(t tb, cfg cascade.Config) (stop func()) {
	t.Helper()
	return startManaged(t, cfg, manager.Config{})
}

// startManaged is start with a manager configured by mc, whose Controllers
// it sets.
func startManaged(t tb, cfg cascade.Config, mc manager.Config) (stop func()) {
	t.Helper()
	if cfg.ResyncPeriod == 0 {
		cfg.ResyncPeriod = -1
	}
	c, err := cascade.NewController(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mc.Controllers = []*controller.Controller{c}
	m, err := manager.New(mc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
	}
}

// host is the store as one process reaches it. After crashAfter
// successful deletes (never when zero) the process dies: every later call
// fails, so nothing more of it reaches the store, and its leases lapse.
// Successful deletes are counted in the ledger, when there is one.
//
// With freeze set, the process dies at its first delete instead, and that
// delete waits until freeze is closed: then it reaches the store, whatever
// became of the process meanwhile, as a request already sent would, and
// its result is sent on frozen.
type host struct {
	store.Backend
	ledger     *ledger
	crashAfter int64
	deletes    atomic.Int64
	dead       atomic.Bool
	freeze     chan struct{}
	froze      atomic.Bool
	frozen     chan error // capacity 1
}

func newHost(b store.Backend, l *ledger) *host { return &host{Backend: b, ledger: l} }

var errDead = errors.New("the process is dead")

func (h *host) check() error {
	if h.dead.Load() {
		return errDead
	}
	return nil
}

func (h *host) kill() { h.dead.Store(true) }

func (h *host) Get(ctx context.Context, kind, key string) (store.Document, error) {
	if err := h.check(); err != nil {
		return store.Document{}, err
	}
	return h.Backend.Get(ctx, kind, key)
}

func (h *host) List(ctx context.Context, kind string, opts store.ListOptions) (store.ListResult, error) {
	if err := h.check(); err != nil {
		return store.ListResult{}, err
	}
	return h.Backend.List(ctx, kind, opts)
}

func (h *host) Watch(ctx context.Context, kind string, from int64) (store.Watch, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	return h.Backend.Watch(ctx, kind, from)
}

func (h *host) UpdateSpec(ctx context.Context, doc store.Document) (store.Document, error) {
	if err := h.check(); err != nil {
		return store.Document{}, err
	}
	return h.Backend.UpdateSpec(ctx, doc)
}

func (h *host) Delete(ctx context.Context, kind, key string, opts store.DeleteOptions) error {
	if h.freeze != nil && h.froze.CompareAndSwap(false, true) {
		h.kill()
		<-h.freeze
		err := h.Backend.Delete(context.WithoutCancel(ctx), kind, key, opts)
		h.frozen <- err
		return err
	}
	if err := h.check(); err != nil {
		return err
	}
	err := h.Backend.Delete(ctx, kind, key, opts)
	if err == nil {
		if h.ledger != nil {
			h.ledger.add(kind + "/" + key + "@" + opts.UID)
		}
		if h.deletes.Add(1) == h.crashAfter {
			h.kill()
		}
	}
	return err
}

func (h *host) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (store.Lease, error) {
	if err := h.check(); err != nil {
		return store.Lease{}, err
	}
	return h.Backend.AcquireLease(ctx, name, holder, ttl)
}

func (h *host) RenewLease(ctx context.Context, l store.Lease) (store.Lease, error) {
	if err := h.check(); err != nil {
		return store.Lease{}, err
	}
	return h.Backend.RenewLease(ctx, l)
}

func (h *host) ReleaseLease(ctx context.Context, l store.Lease) error {
	if err := h.check(); err != nil {
		return err
	}
	return h.Backend.ReleaseLease(ctx, l)
}

func (h *host) ListLeases(ctx context.Context, prefix string) ([]store.Lease, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	return h.Backend.ListLeases(ctx, prefix)
}

// ledger counts the successful deletes of each document, by
// "Kind/key@uid", across processes.
type ledger struct {
	mu sync.Mutex // guards n
	n  map[string]int
}

func (l *ledger) add(doc string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == nil {
		l.n = make(map[string]int)
	}
	l.n[doc]++
}

// twice returns the documents deleted more than once.
func (l *ledger) twice() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for d, n := range l.n {
		if n > 1 {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
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
