// Package informertest exports the conformance suite of package informer:
// the checks an informer must pass on every store backend, so that the
// in-memory backend used in unit tests cannot hide a difference in how a
// real store lists, watches, resumes and compacts.
package informertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tendhq/tend/informer"
	"github.com/tendhq/tend/store"
	"github.com/tendhq/tend/store/backend"
)

// kind is the kind the suite asks newBackend for.
const kind = "Widget"

// checkTimeout bounds each check, so a watch that never delivers fails the
// check instead of hanging the test binary.
const checkTimeout = 60 * time.Second

// Run runs the suite, one subtest per property, each on a fresh backend from
// newBackend configured with the kinds given (the suite asks for "Widget").
// The backend must implement backend.Compactor, directly or through the
// test's wrapper, as store/storetest requires.
func Run(t *testing.T, newBackend func(t *testing.T, kinds []string) store.Backend) {
	t.Helper()
	checks := []struct {
		name string
		run  func(ctx context.Context, t *testing.T, b store.Backend)
	}{
		{"SyncAndRead", checkSyncAndRead},
		{"Events", checkEvents},
		{"ResumeAfterError", checkResume},
		{"RelistAfterCompaction", checkRelist},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			b := newBackend(t, []string{kind})
			ctx, cancel := context.WithTimeout(t.Context(), checkTimeout)
			defer cancel()
			c.run(ctx, t, b)
		})
	}
}

// run starts inf and stops it when the test ends.
func run(t *testing.T, inf interface{ Run(context.Context) error }) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func create(ctx context.Context, t *testing.T, b store.Backend, key string, labels map[string]string, owners ...store.OwnerRef) store.Document {
	t.Helper()
	d, err := b.Create(ctx, store.Document{Meta: store.Meta{Kind: kind, Key: key, Labels: labels, Owners: owners}, Spec: []byte(`{"n":0}`)})
	if err != nil {
		t.Fatalf("create %s: %v", key, err)
	}
	return d
}

func update(ctx context.Context, t *testing.T, b store.Backend, key, spec string) store.Document {
	t.Helper()
	d, err := b.Get(ctx, kind, key)
	if err != nil {
		t.Fatal(err)
	}
	d.Spec = []byte(spec)
	if d, err = b.UpdateSpec(ctx, d); err != nil {
		t.Fatalf("update %s: %v", key, err)
	}
	return d
}

func remove(ctx context.Context, t *testing.T, b store.Backend, key string) {
	t.Helper()
	if err := b.Delete(ctx, kind, key, store.DeleteOptions{}); err != nil {
		t.Fatalf("delete %s: %v", key, err)
	}
}

// describe writes an event as "Type key@revision (was @revision)"; a
// deletion without the revision of the last state, which backends report
// differently.
func describe(e informer.Event) string {
	s := fmt.Sprintf("%v %s@%d", e.Type, e.Document.Meta.Key, e.Document.Meta.Revision)
	if e.Type == store.Deleted {
		s = fmt.Sprintf("%v %s", e.Type, e.Document.Meta.Key)
	}
	if e.Old != nil {
		s += fmt.Sprintf(" (was @%d)", e.Old.Meta.Revision)
	}
	return s
}

// take returns the next n events of s, described.
func take(ctx context.Context, t *testing.T, s *informer.Subscription, n int) []string {
	t.Helper()
	var out []string
	for range n {
		e, err := s.Next(ctx)
		if err != nil {
			t.Fatalf("after %q: next event: %v", out, err)
		}
		out = append(out, describe(e))
	}
	return out
}

func keys(docs []store.Document) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = d.Meta.Key
	}
	return out
}

func checkSyncAndRead(ctx context.Context, t *testing.T, b store.Backend) {
	owner := store.OwnerRef{Kind: kind, Key: "a", UID: "owner-uid", Controller: true}
	create(ctx, t, b, "a", map[string]string{"env": "prod"})
	create(ctx, t, b, "b", map[string]string{"env": "dev"}, owner)
	last := create(ctx, t, b, "c", nil, owner)
	inf, err := informer.New(b, kind, informer.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := inf.AddIndex("env", func(d *store.Document) []string {
		if v, ok := d.Meta.Labels["env"]; ok {
			return []string{v}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if inf.HasSynced() {
		t.Fatal("HasSynced before Run")
	}
	run(t, inf)
	if err := inf.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	if !inf.HasSynced() {
		t.Fatal("HasSynced false after WaitForSync")
	}
	if rev := inf.Revision(); rev < last.Meta.Revision {
		t.Errorf("revision %d after sync, below the last write's %d", rev, last.Meta.Revision)
	}
	if d, ok := inf.Get("b"); !ok || d.Meta.UID == "" || string(d.Spec) != `{"n":0}` {
		t.Errorf("Get(b) = %+v, %v", d, ok)
	}
	if _, ok := inf.Get("zz"); ok {
		t.Error("Get(zz) found a document never created")
	}
	for _, c := range []struct {
		opts store.ListOptions
		want []string
	}{
		{store.ListOptions{}, []string{"a", "b", "c"}},
		{store.ListOptions{Selector: store.MustParseSelector("env")}, []string{"a", "b"}},
		{store.ListOptions{Selector: store.MustParseSelector("env=prod")}, []string{"a"}},
		{store.ListOptions{OwnerUID: "owner-uid"}, []string{"b", "c"}},
		{store.ListOptions{OwnerUID: "owner-uid", Selector: store.MustParseSelector("!env")}, []string{"c"}},
	} {
		docs, _, err := inf.List(c.opts)
		if err != nil || !slices.Equal(keys(docs), c.want) {
			t.Errorf("List(%v, owner %q) = %v, %v; want %v", c.opts.Selector, c.opts.OwnerUID, keys(docs), err, c.want)
		}
	}
	docs, err := inf.ByIndex("env", "dev")
	if err != nil || !slices.Equal(keys(docs), []string{"b"}) {
		t.Errorf("ByIndex(env, dev) = %v, %v", keys(docs), err)
	}
	if _, err := inf.ByIndex("nope", "x"); !errors.Is(err, informer.ErrUnknownIndex) {
		t.Errorf("ByIndex(nope) error %v, want ErrUnknownIndex", err)
	}
}

func checkEvents(ctx context.Context, t *testing.T, b store.Backend) {
	a := create(ctx, t, b, "a", nil)
	create(ctx, t, b, "b", nil)
	inf, err := informer.New(b, kind, informer.Config{})
	if err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	if err := inf.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	sub, snap := inf.Subscribe()
	defer sub.Close()
	if !slices.Equal(keys(snap), []string{"a", "b"}) {
		t.Fatalf("snapshot %v, want [a b]", keys(snap))
	}
	c := create(ctx, t, b, "c", nil)
	a2 := update(ctx, t, b, "a", `{"n":1}`)
	remove(ctx, t, b, "b")
	got := take(ctx, t, sub, 3)
	bRev := snap[1].Meta.Revision
	want := []string{
		fmt.Sprintf("Added c@%d", c.Meta.Revision),
		fmt.Sprintf("Modified a@%d (was @%d)", a2.Meta.Revision, a.Meta.Revision),
		fmt.Sprintf("Deleted b (was @%d)", bRev),
	}
	if !slices.Equal(got, want) {
		t.Errorf("events\n got %q\nwant %q", got, want)
	}
	if d, ok := inf.Get("a"); !ok || string(d.Spec) != `{"n":1}` {
		t.Errorf("cache holds a as %s, %v; want the update", d.Spec, ok)
	}
	if _, ok := inf.Get("b"); ok {
		t.Error("cache still holds b after its deletion was delivered")
	}
}

// breakable wraps a store so a test can hold the watch's events back and
// then break the watch with a transient error. It counts lists and
// watches.
type breakable struct {
	store.Backend

	mu      sync.Mutex // guards the fields below
	lists   int
	watches int
	held    chan struct{} // while set, Next waits for it to close
	broken  bool          // set when the held watch must fail once released
}

var errBroken = errors.New("informertest: connection reset")

func (b *breakable) List(ctx context.Context, kind string, opts store.ListOptions) (store.ListResult, error) {
	b.mu.Lock()
	b.lists++
	b.mu.Unlock()
	return b.Backend.List(ctx, kind, opts)
}

func (b *breakable) Watch(ctx context.Context, kind string, from int64) (store.Watch, error) {
	b.mu.Lock()
	b.watches++
	b.mu.Unlock()
	w, err := b.Backend.Watch(ctx, kind, from)
	if err != nil {
		return nil, err
	}
	return &breakableWatch{Watch: w, b: b}, nil
}

func (b *breakable) counts() (lists, watches int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lists, b.watches
}

// hold makes the watch keep its events back until release.
func (b *breakable) hold() {
	b.mu.Lock()
	b.held = make(chan struct{})
	b.mu.Unlock()
}

// release lets the watch go on, failing once with errBroken first.
func (b *breakable) release() {
	b.mu.Lock()
	b.broken = true
	close(b.held)
	b.held = nil
	b.mu.Unlock()
}

type breakableWatch struct {
	store.Watch
	b *breakable
}

func (w *breakableWatch) Next(ctx context.Context) (store.Event, error) {
	w.b.mu.Lock()
	held := w.b.held
	w.b.mu.Unlock()
	if held != nil {
		select {
		case <-held:
		case <-ctx.Done():
			return store.Event{}, ctx.Err()
		}
	}
	w.b.mu.Lock()
	broken := w.b.broken
	w.b.broken = false
	w.b.mu.Unlock()
	if broken {
		return store.Event{}, errBroken
	}
	return w.Watch.Next(ctx)
}

// fastRetry retries at once: the suite checks what is retried, not when.
func fastRetry(int) time.Duration { return time.Millisecond }

// started runs an informer over a breakable b, synced, with one
// subscription.
func started(ctx context.Context, t *testing.T, b store.Backend) (*breakable, *informer.Informer, *informer.Subscription) {
	t.Helper()
	bb := &breakable{Backend: b}
	inf, err := informer.New(bb, kind, informer.Config{Backoff: fastRetry})
	if err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	if err := inf.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	sub, _ := inf.Subscribe()
	t.Cleanup(sub.Close)
	// Let the watch start, so that hold catches it waiting.
	for _, w := bb.counts(); w == 0; _, w = bb.counts() {
		time.Sleep(time.Millisecond)
	}
	return bb, inf, sub
}

// checkResume: a watch that fails with a transient error is resumed from
// the last revision received: the changes made meanwhile arrive once, and
// nothing is listed again.
func checkResume(ctx context.Context, t *testing.T, b store.Backend) {
	a := create(ctx, t, b, "a", nil)
	bb, _, sub := started(ctx, t, b)
	bb.hold()
	x := create(ctx, t, b, "x", nil)
	a2 := update(ctx, t, b, "a", `{"n":1}`)
	bb.release()
	got := take(ctx, t, sub, 2)
	want := []string{
		fmt.Sprintf("Added x@%d", x.Meta.Revision),
		fmt.Sprintf("Modified a@%d (was @%d)", a2.Meta.Revision, a.Meta.Revision),
	}
	if !slices.Equal(got, want) {
		t.Errorf("events after the watch broke\n got %q\nwant %q", got, want)
	}
	lists, watches := bb.counts()
	if lists != 1 || watches != 2 {
		t.Errorf("%d lists and %d watches; want 1 list and 2 watches (one resumed)", lists, watches)
	}
	if n := sub.Len(); n != 0 {
		t.Errorf("%d more events queued; want none (each change once)", n)
	}
}

// checkRelist: when the history the watch needs was compacted while it was
// away, the informer lists again and delivers the differences as changes.
func checkRelist(ctx context.Context, t *testing.T, b store.Backend) {
	compactor, ok := b.(backend.Compactor)
	if !ok {
		t.Fatal("the backend does not implement backend.Compactor")
	}
	a := create(ctx, t, b, "a", nil)
	b0 := create(ctx, t, b, "b", nil)
	c := create(ctx, t, b, "c", nil)
	create(ctx, t, b, "d", nil) // unchanged: no event
	bb, inf, sub := started(ctx, t, b)
	bb.hold()
	x := create(ctx, t, b, "x", nil)
	a2 := update(ctx, t, b, "a", `{"n":1}`)
	remove(ctx, t, b, "c")
	last := update(ctx, t, b, "b", `{"n":2}`)
	if err := compactor.Compact(ctx, last.Meta.Revision); err != nil {
		t.Fatal(err)
	}
	bb.release()
	got := take(ctx, t, sub, 4)
	slices.Sort(got)
	want := []string{
		fmt.Sprintf("Added x@%d", x.Meta.Revision),
		fmt.Sprintf("Deleted c (was @%d)", c.Meta.Revision),
		fmt.Sprintf("Modified a@%d (was @%d)", a2.Meta.Revision, a.Meta.Revision),
		fmt.Sprintf("Modified b@%d (was @%d)", last.Meta.Revision, b0.Meta.Revision),
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("events after compaction\n got %q\nwant %q", got, want)
	}
	if lists, _ := bb.counts(); lists != 2 {
		t.Errorf("%d lists; want 2 (the history was compacted)", lists)
	}
	docs, rev, _ := inf.List(store.ListOptions{})
	if !slices.Equal(keys(docs), []string{"a", "b", "d", "x"}) || rev < last.Meta.Revision {
		t.Errorf("cache after relist: %v at %d; want [a b d x] at %d or later", keys(docs), rev, last.Meta.Revision)
	}
	if n := sub.Len(); n != 0 {
		t.Errorf("%d more events queued; want none", n)
	}
}
