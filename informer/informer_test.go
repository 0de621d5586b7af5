package informer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/informer"
	"github.com/tendhq/tend/informer/informertest"
	"github.com/tendhq/tend/store"
)

func TestConformanceMemory(t *testing.T) {
	informertest.Run(t, func(t *testing.T, kinds []string) store.Backend {
		s, err := memory.New(memory.Config{Kinds: kinds})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func newStore(t *testing.T) *memory.Store {
	t.Helper()
	s, err := memory.New(memory.Config{Kinds: []string{"Widget"}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func create(t *testing.T, s store.Backend, key string) store.Document {
	t.Helper()
	d, err := s.Create(t.Context(), store.Document{Meta: store.Meta{Kind: "Widget", Key: key}, Spec: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func touch(t *testing.T, s store.Backend, key string) store.Document {
	t.Helper()
	d, err := s.Get(t.Context(), "Widget", key)
	if err != nil {
		t.Fatal(err)
	}
	d.Spec = fmt.Appendf(nil, `{"rev":%d}`, d.Meta.Revision)
	if d, err = s.UpdateSpec(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	return d
}

// run starts r in the bubble; the returned func stops it and returns its
// error.
func run(t *testing.T, r interface{ Run(context.Context) error }) func() error {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	return func() error {
		cancel()
		return <-done
	}
}

// scripted wraps a store to script its lists and watches: it records each
// call, can hold a watch's events back, lose a watch's event with an error
// once, and hold
// lists back.
type scripted struct {
	*memory.Store

	mu        sync.Mutex // guards the fields below
	lists     int
	from      []int64       // the fromRevision of each Watch
	held      chan struct{} // while set, Next waits for it to close
	failNext  error         // returned once by the next Next
	listGate  chan struct{} // while set, List waits for it to close
	watchedAt []time.Time
}

func (s *scripted) List(ctx context.Context, kind string, opts store.ListOptions) (store.ListResult, error) {
	s.mu.Lock()
	s.lists++
	gate := s.listGate
	s.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return store.ListResult{}, ctx.Err()
		}
	}
	return s.Store.List(ctx, kind, opts)
}

func (s *scripted) Watch(ctx context.Context, kind string, from int64) (store.Watch, error) {
	s.mu.Lock()
	s.from = append(s.from, from)
	s.watchedAt = append(s.watchedAt, time.Now())
	s.mu.Unlock()
	w, err := s.Store.Watch(ctx, kind, from)
	if err != nil {
		return nil, err
	}
	return &scriptedWatch{Watch: w, s: s}, nil
}

type scriptedWatch struct {
	store.Watch
	s *scripted
}

func (w *scriptedWatch) Next(ctx context.Context) (store.Event, error) {
	w.s.mu.Lock()
	held := w.s.held
	w.s.mu.Unlock()
	if held != nil {
		select {
		case <-held:
		case <-ctx.Done():
			return store.Event{}, ctx.Err()
		}
	}
	ev, err := w.Watch.Next(ctx)
	w.s.mu.Lock()
	fail := w.s.failNext
	w.s.failNext = nil
	w.s.mu.Unlock()
	if err == nil && fail != nil {
		return store.Event{}, fail // the connection broke: ev is lost
	}
	return ev, err
}

func describe(e informer.Event) string {
	s := fmt.Sprintf("%v %s@%d", e.Type, e.Document.Meta.Key, e.Revision)
	if e.Old != nil {
		s += fmt.Sprintf(" was @%d", e.Old.Meta.Revision)
	}
	return s
}

func drain(t *testing.T, sub *informer.Subscription) []string {
	t.Helper()
	var out []string
	for sub.Len() > 0 {
		e, err := sub.Next(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, describe(e))
	}
	return out
}

// The store compacts the history while the watch still needs it: the
// watch fails with store.ErrCompacted, the informer lists again and
// delivers exactly the differences.
func TestCompactionMidWatchRelists(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{Store: newStore(t)}
		a := create(t, s, "a")
		b := create(t, s, "b")
		c := create(t, s, "c")
		inf, err := informer.New(s, "Widget", informer.Config{})
		if err != nil {
			t.Fatal(err)
		}
		stop := run(t, inf)
		synctest.Wait()
		sub, snap := inf.Subscribe()
		defer sub.Close()
		if len(snap) != 3 {
			t.Fatalf("snapshot of %d documents, want 3", len(snap))
		}

		s.mu.Lock()
		s.held = make(chan struct{})
		s.mu.Unlock()
		synctest.Wait()
		a2 := touch(t, s, "a")
		if err := s.Delete(t.Context(), "Widget", "b", store.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		x := create(t, s, "x")
		if err := s.Compact(t.Context(), x.Meta.Revision); err != nil {
			t.Fatal(err)
		}
		s.mu.Lock()
		close(s.held)
		s.held = nil
		s.mu.Unlock()
		synctest.Wait()

		got := drain(t, sub)
		want := []string{
			fmt.Sprintf("Modified a@%d was @%d", a2.Meta.Revision, a.Meta.Revision),
			fmt.Sprintf("Added x@%d", x.Meta.Revision),
			fmt.Sprintf("Deleted b@%d was @%d", x.Meta.Revision, b.Meta.Revision),
		}
		if !slices.Equal(got, want) {
			t.Errorf("events\n got %q\nwant %q", got, want)
		}
		if s.lists != 2 {
			t.Errorf("%d lists, want 2", s.lists)
		}
		if _, ok := inf.Get("c"); !ok || inf.Revision() != x.Meta.Revision {
			t.Errorf("cache lost c or is at revision %d, want %d", inf.Revision(), x.Meta.Revision)
		}
		_ = c
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// A watch that fails with a transient error is watched again from the
// revision of the last event received, after the configured backoff, and
// without listing again.
func TestWatchErrorResumesFromLastRevision(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{Store: newStore(t)}
		create(t, s, "a")
		var delays []int
		inf, err := informer.New(s, "Widget", informer.Config{Backoff: func(n int) time.Duration {
			delays = append(delays, n)
			return 7 * time.Second
		}})
		if err != nil {
			t.Fatal(err)
		}
		stop := run(t, inf)
		synctest.Wait()
		sub, _ := inf.Subscribe()
		defer sub.Close()
		b := create(t, s, "b")
		synctest.Wait()

		s.mu.Lock()
		s.failNext = errors.New("connection reset")
		s.mu.Unlock()
		c := create(t, s, "c") // the watch loses it and fails
		synctest.Wait()
		time.Sleep(7 * time.Second)
		synctest.Wait()

		got := drain(t, sub)
		want := []string{fmt.Sprintf("Added b@%d", b.Meta.Revision), fmt.Sprintf("Added c@%d", c.Meta.Revision)}
		if !slices.Equal(got, want) {
			t.Errorf("events\n got %q\nwant %q", got, want)
		}
		if !slices.Equal(s.from, []int64{1, b.Meta.Revision}) {
			t.Errorf("watched from %v, want [1 %d]: the second from the last revision received", s.from, b.Meta.Revision)
		}
		if gap := s.watchedAt[1].Sub(s.watchedAt[0]); gap != 7*time.Second {
			t.Errorf("watched again after %v, want the backoff of 7s", gap)
		}
		if s.lists != 1 || !slices.Equal(delays, []int{1}) {
			t.Errorf("%d lists and backoff calls %v; want 1 list and [1]", s.lists, delays)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// A handler that does not return holds up only its own queue.
func TestSlowHandlerDoesNotBlockAnother(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStore(t)
		inf, err := informer.New(s, "Widget", informer.Config{})
		if err != nil {
			t.Fatal(err)
		}
		stop := run(t, inf)
		ctx, cancel := context.WithCancel(t.Context())
		unblock := make(chan struct{})
		var slow, fast []string
		var wg sync.WaitGroup
		wg.Go(func() {
			_ = inf.Handle(ctx, informer.HandlerFunc(func(e informer.Event) {
				<-unblock
				slow = append(slow, e.Document.Meta.Key)
			}))
		})
		wg.Go(func() {
			_ = inf.Handle(ctx, informer.HandlerFunc(func(e informer.Event) {
				fast = append(fast, e.Document.Meta.Key)
			}))
		})
		synctest.Wait()
		for _, k := range []string{"a", "b", "c"} {
			create(t, s, k)
		}
		synctest.Wait()
		if !slices.Equal(fast, []string{"a", "b", "c"}) || len(slow) != 0 {
			t.Errorf("with the slow handler stuck: fast got %v, slow %v; want [a b c] and none", fast, slow)
		}
		if _, ok := inf.Get("c"); !ok {
			t.Error("the cache waited for the slow handler")
		}
		close(unblock)
		synctest.Wait()
		if !slices.Equal(slow, []string{"a", "b", "c"}) {
			t.Errorf("slow handler got %v once unblocked, want [a b c]", slow)
		}
		cancel()
		wg.Wait()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// HasSynced stays false, and WaitForSync waits, until the first list lands.
func TestHasSyncedWaitsForTheList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{Store: newStore(t), listGate: make(chan struct{})}
		create(t, s, "a")
		inf, err := informer.New(s, "Widget", informer.Config{})
		if err != nil {
			t.Fatal(err)
		}
		stop := run(t, inf)
		waited := make(chan error, 1)
		go func() { waited <- inf.WaitForSync(t.Context()) }()
		synctest.Wait()
		if inf.HasSynced() {
			t.Fatal("HasSynced before the list landed")
		}
		select {
		case err := <-waited:
			t.Fatalf("WaitForSync returned %v before the list landed", err)
		default:
		}
		if _, ok := inf.Get("a"); ok {
			t.Fatal("cache holds a before the list")
		}
		close(s.listGate)
		synctest.Wait()
		if !inf.HasSynced() {
			t.Fatal("HasSynced false after the list")
		}
		if err := <-waited; err != nil {
			t.Fatal(err)
		}
		if _, ok := inf.Get("a"); !ok {
			t.Fatal("cache lacks a after the list")
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// An informer of a kind the store does not hold fails, and says so to its
// waiters and subscribers.
func TestUnknownKindFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStore(t)
		inf, err := informer.New(s, "Gadget", informer.Config{})
		if err != nil {
			t.Fatal(err)
		}
		sub, _ := inf.Subscribe()
		defer sub.Close()
		if err := inf.Run(t.Context()); !errors.Is(err, store.ErrUnknownKind) {
			t.Fatalf("Run: %v, want ErrUnknownKind", err)
		}
		if err := inf.WaitForSync(t.Context()); !errors.Is(err, store.ErrUnknownKind) {
			t.Errorf("WaitForSync: %v, want ErrUnknownKind", err)
		}
		if _, err := sub.Next(t.Context()); !errors.Is(err, store.ErrUnknownKind) {
			t.Errorf("Next: %v, want ErrUnknownKind", err)
		}
	})
}

// counting counts the watches opened on a store.
type counting struct {
	*memory.Store
	mu      sync.Mutex // guards watches
	watches int
}

func (c *counting) Watch(ctx context.Context, kind string, from int64) (store.Watch, error) {
	c.mu.Lock()
	c.watches++
	c.mu.Unlock()
	return c.Store.Watch(ctx, kind, from)
}

// However many consumers ask a factory for a kind, and whenever they ask,
// they share one informer and the store sees one watch.
func TestFactoryOneWatchPerKind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &counting{Store: newStore(t)}
		f, err := informer.NewFactory(s, informer.FactoryConfig{})
		if err != nil {
			t.Fatal(err)
		}
		first, _ := f.For("Widget")
		stop := run(t, f)
		var subs []*informer.Subscription
		for range 5 {
			inf, err := f.For("Widget")
			if err != nil {
				t.Fatal(err)
			}
			if inf != first {
				t.Fatal("For returned another informer for the same kind")
			}
			sub, _ := inf.Subscribe()
			subs = append(subs, sub)
		}
		synctest.Wait()
		create(t, s, "a")
		synctest.Wait()
		for i, sub := range subs {
			if sub.Len() != 1 {
				t.Errorf("subscriber %d has %d events, want 1", i, sub.Len())
			}
			sub.Close()
		}
		if s.watches != 1 {
			t.Errorf("%d watches, want 1", s.watches)
		}
		res, err := f.List(t.Context(), "Widget", store.ListOptions{})
		if err != nil || len(res.Items) != 1 {
			t.Errorf("Factory.List: %v, %v", res.Items, err)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// alwaysCompacted is a store whose every watch finds its history gone.
type alwaysCompacted struct {
	*memory.Store
	mu    sync.Mutex // guards lists
	lists int
}

func (s *alwaysCompacted) List(ctx context.Context, kind string, opts store.ListOptions) (store.ListResult, error) {
	s.mu.Lock()
	s.lists++
	s.mu.Unlock()
	return s.Store.List(ctx, kind, opts)
}

func (s *alwaysCompacted) Watch(context.Context, string, int64) (store.Watch, error) {
	return nil, store.ErrCompacted
}

func (s *alwaysCompacted) listed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lists
}

// A compaction lists again at once, but a store that compacts every watch
// before it receives anything is listed again only after the backoff.
func TestRepeatedCompactionBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &alwaysCompacted{Store: newStore(t)}
		inf, err := informer.New(s, "Widget", informer.Config{Backoff: func(int) time.Duration { return time.Second }})
		if err != nil {
			t.Fatal(err)
		}
		stop := run(t, inf)
		synctest.Wait()
		if n := s.listed(); n != 2 {
			t.Errorf("%d lists at once, want 2 (the first, and one after the compaction)", n)
		}
		time.Sleep(10*time.Second + time.Millisecond)
		synctest.Wait()
		if n := s.listed(); n != 12 {
			t.Errorf("%d lists after 10 s of 1 s backoffs, want 12", n)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}
