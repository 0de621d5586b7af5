package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tendhq/tend/backends/postgres"
	"github.com/tendhq/tend/store"
)

// TestWatchConcurrentWriters checks the claim the revision lock makes:
// however writers interleave, a watch delivers every revision exactly once
// and in order, never skipping one that committed after a later one was
// read.
func TestWatchConcurrentWriters(t *testing.T) {
	ctx := t.Context()
	s := newStore(t, postgres.Config{PollInterval: 20 * time.Millisecond})
	w, err := s.Watch(ctx, "Widget", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	const writers, writes = 4, 40
	var mu sync.Mutex // guards written
	var written []int64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Go(func() {
			d, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: fmt.Sprintf("w%d", i)}})
			if err != nil {
				errs <- err
				return
			}
			revs := []int64{d.Meta.Revision}
			for j := range writes - 1 {
				d.Status = fmt.Appendf(nil, "%d", j)
				if d, err = s.UpdateStatus(ctx, d); err != nil {
					errs <- err
					return
				}
				revs = append(revs, d.Meta.Revision)
			}
			mu.Lock()
			written = append(written, revs...)
			mu.Unlock()
		})
	}
	// Read while the writers write, so reads race commits. A skipped
	// revision leaves the watch short of events: the deadline ends it.
	var got []int64
	next, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for len(got) < writers*writes {
		e, err := w.Next(next)
		if err != nil {
			wg.Wait()
			t.Fatalf("after %d of %d events: %v (delivered %v)", len(got), writers*writes, err, got)
		}
		got = append(got, e.Revision)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	slices.Sort(written)
	if !slices.Equal(got, written) {
		t.Fatalf("watch delivered revisions %v,\nwriters wrote %v", got, written)
	}
}

// TestWatchWokenByNotify checks that a notification wakes a watch: with a
// poll interval far beyond the test's deadline, only NOTIFY can deliver.
func TestWatchWokenByNotify(t *testing.T) {
	s := newStore(t, postgres.Config{PollInterval: time.Hour})
	expectDelivered(t, s)
}

// TestWatchPollsWithoutNotify checks that a lost notification only delays
// an event: with the notifying trigger disabled, polling delivers it.
func TestWatchPollsWithoutNotify(t *testing.T) {
	pool := newPool(t)
	schema := newSchema(t, pool)
	s := newStore(t, postgres.Config{Pool: pool, Schema: schema, PollInterval: 50 * time.Millisecond})
	if _, err := pool.Exec(t.Context(), "ALTER TABLE "+schema+".changes DISABLE TRIGGER notify_change"); err != nil {
		t.Fatal(err)
	}
	expectDelivered(t, s)
}

// expectDelivered starts a watch waiting, then writes, and expects the
// event before a deadline of 30 seconds.
func expectDelivered(t *testing.T, s *postgres.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	w, err := s.Watch(ctx, "Widget", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	type result struct {
		e   store.Event
		err error
	}
	got := make(chan result, 1)
	go func() {
		e, err := w.Next(ctx)
		got <- result{e, err}
	}()
	// Write to another kind first: its notification must not end the
	// wait empty-handed.
	if _, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Gadget", Key: "g"}}); err != nil {
		t.Fatal(err)
	}
	d, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "w"}})
	if err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("next: %v", r.err)
	}
	if r.e.Type != store.Added || r.e.Revision != d.Meta.Revision {
		t.Fatalf("got %v at %d, want Added at %d", r.e.Type, r.e.Revision, d.Meta.Revision)
	}
}

// TestWatchCloseWhileWaiting checks that Close ends a Next blocked in
// another goroutine with ErrClosed.
func TestWatchCloseWhileWaiting(t *testing.T) {
	s := newStore(t, postgres.Config{PollInterval: time.Hour})
	w, err := s.Watch(t.Context(), "Widget", 0)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := w.Next(t.Context())
		done <- err
	}()
	w.Close()
	if err := <-done; !errors.Is(err, store.ErrClosed) {
		t.Fatalf("next after close: got %v, want ErrClosed", err)
	}
}
