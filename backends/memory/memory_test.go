package memory_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/store"
)

func newStore(t *testing.T, cfg memory.Config) *memory.Store {
	t.Helper()
	if cfg.Kinds == nil {
		cfg.Kinds = []string{"Widget"}
	}
	s, err := memory.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAddKinds adds a kind to a store in use: it is listed, empty, and
// watched from the store's revision like any other.
func TestAddKinds(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, memory.Config{})
	if _, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "a"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddKinds("widget"); err == nil {
		t.Fatal("AddKinds took a malformed kind")
	}
	if err := s.AddKinds("Gadget", "Widget"); err != nil {
		t.Fatal(err)
	}
	if got, want := s.Kinds(), []string{"Gadget", "Widget"}; !slices.Equal(got, want) {
		t.Fatalf("Kinds() = %v, want %v", got, want)
	}
	list, err := s.List(ctx, "Gadget", store.ListOptions{})
	if err != nil || len(list.Items) != 0 {
		t.Fatalf("List of the new kind: %v, %v", list.Items, err)
	}
	w, err := s.Watch(ctx, "Gadget", list.Revision)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	created, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Gadget", Key: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := w.Next(ctx)
	if err != nil || ev.Revision != created.Meta.Revision {
		t.Fatalf("watch of the new kind: %+v, %v; want revision %d", ev, err, created.Meta.Revision)
	}
	if got, _ := s.Get(ctx, "Widget", "a"); got.Meta.Key != "a" {
		t.Fatalf("the kind held before lost its document: %+v", got)
	}
}

func TestNewConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  memory.Config
		want string // substring of the error; empty for success
	}{
		{"no kinds", memory.Config{}, ""},
		{"bad kind", memory.Config{Kinds: []string{"widget"}}, `"widget"`},
		{"duplicate kind", memory.Config{Kinds: []string{"Widget", "Widget"}}, "twice"},
		{"history too short", memory.Config{Kinds: []string{"W"}, History: 1}, "History"},
		{"negative history", memory.Config{Kinds: []string{"W"}, History: -5}, "History"},
		{"negative buffer", memory.Config{Kinds: []string{"W"}, WatchBuffer: -1}, "WatchBuffer"},
		{"buffer as long as history", memory.Config{Kinds: []string{"W"}, History: 10, WatchBuffer: 10}, "WatchBuffer"},
		{"defaults", memory.Config{Kinds: []string{"W"}}, ""},
		{"history only", memory.Config{Kinds: []string{"W"}, History: 2}, ""},
		{"both", memory.Config{Kinds: []string{"W"}, History: 10, WatchBuffer: 9}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := memory.New(tt.cfg)
			if tt.want == "" {
				if err != nil || s == nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New: got %v, want an error mentioning %s", err, tt.want)
			}
		})
	}
}

func TestNewDoesNotChangeConfig(t *testing.T) {
	kinds := []string{"Zeta", "Alpha"}
	s := newStore(t, memory.Config{Kinds: kinds})
	if !slices.Equal(kinds, []string{"Zeta", "Alpha"}) {
		t.Errorf("New reordered the caller's kinds: %q", kinds)
	}
	got := s.Kinds()
	if !slices.Equal(got, []string{"Alpha", "Zeta"}) {
		t.Errorf("Kinds() = %q", got)
	}
	got[0] = "Changed"
	if s.Kinds()[0] != "Alpha" {
		t.Error("changing the result of Kinds changed the store")
	}
}

func create(t *testing.T, s *memory.Store, key string) store.Document {
	t.Helper()
	d, err := s.Create(t.Context(), store.Document{Meta: store.Meta{Kind: "Widget", Key: key}, Spec: []byte("{}")})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func setStatus(t *testing.T, s *memory.Store, d store.Document, status string) store.Document {
	t.Helper()
	d.Status = []byte(status)
	d, err := s.UpdateStatus(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A watch that leaves more than WatchBuffer new changes unread is cut off
// with ErrWatchLagged naming the revision to resume from; resuming from it
// delivers every change.
func TestWatchLagged(t *testing.T) {
	ctx := t.Context()
	s := newStore(t, memory.Config{History: 100, WatchBuffer: 4})
	d := create(t, s, "a")
	w, err := s.Watch(ctx, "Widget", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// The history before the watch began is replayed whatever its length.
	for i := range 10 {
		d = setStatus(t, s, d, strings.Repeat("x", i+1))
	}
	w2, err := s.Watch(ctx, "Widget", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	for range 11 {
		if _, err := w2.Next(ctx); err != nil {
			t.Fatalf("replaying history: %v", err)
		}
	}
	// The first watch began before those changes and read none of them.
	_, err = w.Next(ctx)
	if !errors.Is(err, store.ErrWatchLagged) {
		t.Fatalf("Next after falling behind: got %v, want ErrWatchLagged", err)
	}
	if !strings.Contains(err.Error(), "from revision 0") {
		t.Errorf("error %q does not say where to resume", err)
	}
	if _, again := w.Next(ctx); !errors.Is(again, store.ErrWatchLagged) {
		t.Errorf("second Next: got %v, want the same error", again)
	}
	r, err := s.Watch(ctx, "Widget", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var revs []int64
	for range 11 {
		e, err := r.Next(ctx)
		if err != nil {
			t.Fatalf("resumed watch: %v", err)
		}
		revs = append(revs, e.Revision)
	}
	if want := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}; !slices.Equal(revs, want) {
		t.Errorf("resumed watch revisions %v, want %v", revs, want)
	}
}

// A consumer that keeps up is never cut off, however many changes pass.
func TestWatchKeepingUp(t *testing.T) {
	ctx := t.Context()
	s := newStore(t, memory.Config{History: 4, WatchBuffer: 2})
	d := create(t, s, "a")
	w, err := s.Watch(ctx, "Widget", d.Meta.Revision)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 1000 {
		d = setStatus(t, s, d, strings.Repeat("y", i%7+1)+string(rune('a'+i%26)))
		if i%2 == 1 {
			for range 2 {
				if _, err := w.Next(ctx); err != nil {
					t.Fatalf("after %d changes: %v", i+1, err)
				}
			}
		}
	}
}

// The ring keeps History changes per kind; a watch from before them fails
// with ErrCompacted, from the newest discarded revision succeeds.
func TestHistoryOverflow(t *testing.T) {
	ctx := t.Context()
	s := newStore(t, memory.Config{Kinds: []string{"Widget", "Gadget"}, History: 3})
	d := create(t, s, "a") // revision 1
	for i := range 4 {     // revisions 2..5
		d = setStatus(t, s, d, strings.Repeat("z", i+1))
	}
	// Changes of another kind do not use up this kind's history.
	for i := range 10 {
		if _, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Gadget", Key: "g" + string(rune('a'+i))}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Watch(ctx, "Widget", 1); !errors.Is(err, store.ErrCompacted) {
		t.Fatalf("watch from 1: got %v, want ErrCompacted", err)
	}
	w, err := s.Watch(ctx, "Widget", 2)
	if err != nil {
		t.Fatalf("watch from the newest discarded revision: %v", err)
	}
	defer w.Close()
	for _, want := range []int64{3, 4, 5} {
		e, err := w.Next(ctx)
		if err != nil || e.Revision != want {
			t.Fatalf("got %v at %d, %v; want revision %d", e.Type, e.Revision, err, want)
		}
	}
}

// A watch from a revision the store has not reached skips the changes up
// to it, even when more of them are made than the history keeps or the
// watch buffers: they are neither history it lost nor changes it lags on.
func TestWatchAheadOfHistory(t *testing.T) {
	ctx := t.Context()
	s := newStore(t, memory.Config{History: 4, WatchBuffer: 2})
	d := create(t, s, "a") // revision 1
	w, err := s.Watch(ctx, "Widget", 11)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 12 { // revisions 2..13
		d = setStatus(t, s, d, strings.Repeat("v", i+1))
	}
	for _, want := range []int64{12, 13} {
		e, err := w.Next(ctx)
		if err != nil || e.Revision != want {
			t.Fatalf("got %v at %d, %v; want revision %d", e.Type, e.Revision, err, want)
		}
	}
	// Compaction past the revision overtakes a watch that has not read the
	// changes after it.
	late, err := s.Watch(ctx, "Widget", 14)
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	for i := range 2 { // revisions 14, 15
		d = setStatus(t, s, d, strings.Repeat("u", i+1))
	}
	if err := s.Compact(ctx, 15); err != nil {
		t.Fatal(err)
	}
	if _, err := late.Next(ctx); !errors.Is(err, store.ErrCompacted) {
		t.Fatalf("next after compaction past the change at 15: got %v, want ErrCompacted", err)
	}
}

// Watch.Next waits on a channel, so a waiting watch is durably blocked and
// testing/synctest can run it; lease expiry follows the faked clock.
func TestSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := newStore(t, memory.Config{})
		w, err := s.Watch(ctx, "Widget", 0)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		got := make(chan store.Event, 1)
		go func() {
			e, err := w.Next(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- e
		}()
		synctest.Wait()
		select {
		case e := <-got:
			t.Fatalf("event before any write: %+v", e)
		default:
		}
		d := create(t, s, "a")
		if e := <-got; e.Revision != d.Meta.Revision || e.Type != store.Added {
			t.Fatalf("got %+v", e)
		}
		if !d.Meta.CreatedAt.Equal(time.Now()) {
			t.Errorf("CreatedAt %v, want the bubble's now %v", d.Meta.CreatedAt, time.Now())
		}

		a, err := s.AcquireLease(ctx, "leader", "a", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		fenced := store.WithFence(ctx, store.Fence{Lease: "leader", Token: a.Fence})
		time.Sleep(10*time.Second - time.Nanosecond)
		if _, err := s.AcquireLease(ctx, "leader", "b", time.Second); !errors.Is(err, store.ErrLeaseHeld) {
			t.Fatalf("just before expiry: got %v, want ErrLeaseHeld", err)
		}
		d = setStatus(t, s, d, `"fenced"`)
		time.Sleep(time.Nanosecond)
		if _, err := s.UpdateStatus(fenced, d); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("fenced write at expiry: got %v, want ErrFenced", err)
		}
		if ls, _ := s.ListLeases(ctx, ""); len(ls) != 0 {
			t.Fatalf("expired lease listed: %+v", ls)
		}
		b, err := s.AcquireLease(ctx, "leader", "b", time.Second)
		if err != nil || b.Fence != a.Fence+1 {
			t.Fatalf("acquire after expiry: %+v, %v", b, err)
		}
	})
}

// Closing a watch wakes a Next waiting in another goroutine.
func TestCloseWakesNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStore(t, memory.Config{})
		w, err := s.Watch(t.Context(), "Widget", 0)
		if err != nil {
			t.Fatal(err)
		}
		errc := make(chan error, 1)
		go func() {
			_, err := w.Next(context.Background())
			errc <- err
		}()
		synctest.Wait()
		w.Close()
		if err := <-errc; !errors.Is(err, store.ErrClosed) {
			t.Fatalf("got %v, want ErrClosed", err)
		}
	})
}

func TestCompactErrors(t *testing.T) {
	s := newStore(t, memory.Config{})
	create(t, s, "a")
	if err := s.Compact(t.Context(), 2); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("compact beyond the revision: %v", err)
	}
	if err := s.Compact(t.Context(), -1); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("compact at a negative revision: %v", err)
	}
	if err := s.Compact(t.Context(), 1); err != nil {
		t.Errorf("compact: %v", err)
	}
}

// TestWriteAllocations checks the allocations the package documents: a
// status update that changes nothing allocates nothing, given the document
// as read; one that changes the status allocates its stored copy and the
// new version; a watch hands out the stored version without copying it.
func TestWriteAllocations(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, memory.Config{})
	doc, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "w", Labels: map[string]string{"team": "a"},
		Owners: []store.OwnerRef{{Kind: "Widget", Key: "o", UID: "u"}}}, Spec: []byte(`{"size":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	doc.Status = []byte(`{"phase":"Ready"}`)
	if doc, err = s.UpdateStatus(ctx, doc); err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx, "Widget", doc.Meta.Revision)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if n := testing.AllocsPerRun(100, func() {
		if _, err := s.UpdateStatus(ctx, doc); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("a status update that changes nothing allocates %v times, want 0", n)
	}
	statuses := [][]byte{[]byte(`{"phase":"Ready"}`), []byte(`{"phase":"Busy"}`)}
	i := 0
	if n := testing.AllocsPerRun(100, func() {
		i++
		doc.Status = statuses[i%2]
		var err error
		if doc, err = s.UpdateStatus(ctx, doc); err != nil {
			t.Fatal(err)
		}
	}); n > 2 {
		t.Errorf("a status update allocates %v times, want at most 2 (the status and the version)", n)
	}
	if n := testing.AllocsPerRun(50, func() {
		if _, err := w.Next(ctx); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("a watch event allocates %v times, want 0", n)
	}
}
