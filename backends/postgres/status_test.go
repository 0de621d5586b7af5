package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tendhq/tend/backends/postgres"
	"github.com/tendhq/tend/store"
)

// TestConcurrentStatusWrites: writers increment a counter in one document's
// status by read-modify-write, retrying on ErrConflict, while a watch reads.
// The status write is one statement that checks the revision itself, so no
// increment may be lost, each success must take the next revision, and the
// watch must deliver every one of them once, in order.
func TestConcurrentStatusWrites(t *testing.T) {
	ctx := t.Context()
	s := newStore(t, postgres.Config{PollInterval: 20 * time.Millisecond})
	d, err := s.Create(ctx, store.Document{Meta: store.Meta{Kind: "Widget", Key: "counter"}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx, "Widget", d.Meta.Revision)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	const writers, increments = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Go(func() {
			for done := 0; done < increments; {
				cur, err := s.Get(ctx, "Widget", "counter")
				if err != nil {
					errs <- err
					return
				}
				n := 0
				if cur.Status != nil {
					if n, err = strconv.Atoi(string(cur.Status)); err != nil {
						errs <- err
						return
					}
				}
				cur.Status = strconv.AppendInt(nil, int64(n+1), 10)
				switch _, err := s.UpdateStatus(ctx, cur); {
				case err == nil:
					done++
				case !errors.Is(err, store.ErrConflict):
					errs <- err
					return
				}
			}
		})
	}
	next, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for i := 1; i <= writers*increments; i++ {
		e, err := w.Next(next)
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if want := d.Meta.Revision + int64(i); e.Revision != want || string(e.Document.Status) != fmt.Sprint(i) {
			t.Fatalf("event %d: revision %d, status %s; want revision %d, status %d", i, e.Revision, e.Document.Status, want, i)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "Widget", "counter")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprint(writers * increments); string(got.Status) != want || got.Meta.Revision != d.Meta.Revision+writers*increments {
		t.Fatalf("counter %s at revision %d after %s increments, want revision %d", got.Status, got.Meta.Revision, want,
			d.Meta.Revision+writers*increments)
	}
}
