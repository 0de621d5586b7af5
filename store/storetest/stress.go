package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/tendhq/tend/store"
)

// StressConfig configures [Stress].
type StressConfig struct {
	// New returns a fresh, empty backend holding kinds, as for [Run].
	// Required.
	New func(t *testing.T, kinds []string) store.Backend
	// Restart, if set, restarts the backend's server, or cuts every
	// connection the backend has to it, while writers and watches run. It
	// is the part of the property a backend without a server (the memory
	// store) leaves out. Writes that fail meanwhile may be unknown: they
	// are retried, and a watch may see them or not, but never twice.
	Restart func(t *testing.T) error
	// Seed makes the schedule reproducible; zero means a random one, which
	// the test logs.
	Seed uint64
	// Writers and Writes are the concurrent writers and the status writes
	// each makes. Zero means 8 and 60.
	Writers, Writes int
}

// Stress checks many concurrent conditional status writers, on the same
// documents and on different ones, against watches: every acknowledged
// write appears exactly once in its kind's watch, at its revision; every
// event is a write that was made, none twice; events come in revision
// order; a document's writes appear in the order they were acknowledged;
// and a watch resumed from a List taken mid-run delivers exactly the events
// after that list's revision. With Restart, the server restarts once in
// the middle, and watches that fail are resumed from their last revision.
//
// Each writer reads a random document, writes a status that names the
// writer and the write, and retries on [store.ErrConflict], sleeping a
// random moment (from Seed) between writes.
func Stress(t *testing.T, cfg StressConfig) {
	t.Helper()
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("storetest.Stress seed %d", seed)
	writers, writes := cmp.Or(cfg.Writers, 8), cmp.Or(cfg.Writes, 60)
	b := cfg.New(t, []string{widget, gadget})
	ctx, cancel := context.WithTimeout(t.Context(), 2*checkTimeout)
	defer cancel()
	if err := stress(ctx, t, b, cfg.Restart, seed, writers, writes); err != nil {
		t.Fatal(err)
	}
}

// stressDocs are the documents the writers share: two widgets most write
// to, and one of each kind written less.
var stressDocs = []struct{ kind, key string }{{widget, "hot1"}, {widget, "hot2"}, {widget, "cold"}, {gadget, "cold"}}

// written is a status write as a writer saw it end.
type written struct {
	kind, key string
	rev       int64 // zero when the outcome is unknown
}

func stress(ctx context.Context, t *testing.T, b store.Backend, restart func(*testing.T) error, seed uint64, writers, writes int) error {
	for _, d := range stressDocs {
		if _, err := b.Create(ctx, newDoc(d.kind, d.key, 0)); err != nil {
			return fmt.Errorf("create: %w", err)
		}
	}
	start, err := revision(ctx, b)
	if err != nil {
		return err
	}
	var (
		mu      sync.Mutex // guards acked, unknown, midList
		acked              = map[string]written{}
		unknown            = map[string]written{}
		midList int64      = -1
	)
	watches := map[string]*stressWatch{}
	for _, k := range []string{widget, gadget} {
		watches[k] = &stressWatch{b: b, kind: k, last: start}
	}

	var wg sync.WaitGroup
	errs := make(chan error, writers)
	var progress sync.WaitGroup // done when every writer is half way
	progress.Add(writers)
	for i := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			for j := range writes {
				if j == writes/2 {
					progress.Done()
				}
				d := stressDocs[1] // hot2, 40 %
				if r := rng.IntN(10); r < 2 {
					d = stressDocs[2+r] // the cold ones, 10 % each
				} else if r < 6 {
					d = stressDocs[0] // hot1, 40 %
				}
				attempt := 0
				tag := func() string { // unique per attempt
					attempt++
					return fmt.Sprintf(`{"n":%d}`, (i*1_000+j)*1_000+attempt)
				}
				record := func(tag string, w written) {
					mu.Lock()
					if w.rev == 0 {
						unknown[tag] = w
					} else {
						acked[tag] = w
					}
					mu.Unlock()
				}
				if err := stressWrite(ctx, b, d.kind, d.key, tag, record); err != nil {
					errs <- fmt.Errorf("writer %d: %w", i, err)
					return
				}
				time.Sleep(time.Duration(rng.IntN(1500)) * time.Microsecond)
			}
		})
	}
	// Watches read while the writers write; mid-run a List fixes a revision
	// for a watch resumed from it, and the server restarts.
	var readers sync.WaitGroup
	readCtx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	for _, w := range watches {
		readers.Go(func() { w.run(readCtx) })
	}
	progress.Wait()
	if res, err := b.List(ctx, widget, store.ListOptions{}); err == nil {
		mu.Lock()
		midList = res.Revision
		mu.Unlock()
	} else {
		return fmt.Errorf("list mid-run: %w", err)
	}
	if restart != nil {
		if err := restart(t); err != nil {
			return fmt.Errorf("restart: %w", err)
		}
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	end, err := revision(ctx, b)
	if err != nil {
		return err
	}
	// Let the watches reach the end, then stop them.
	for _, w := range watches {
		if err := w.waitFor(ctx, end); err != nil {
			return err
		}
	}
	stopReading()
	readers.Wait()

	// Every acknowledged write once, at its revision; every event a write.
	seen := map[string]int64{}
	for _, w := range watches {
		if w.err != nil {
			return w.err
		}
		lastRev := map[string]int64{}
		for _, e := range w.events {
			tag := string(e.Document.Status)
			if _, dup := seen[tag]; dup {
				return fmt.Errorf("%s watch: status %s delivered twice", w.kind, tag)
			}
			seen[tag] = e.Revision
			a, isAcked := acked[tag]
			u, isUnknown := unknown[tag]
			switch {
			case isAcked && (a.kind != w.kind || a.key != e.Document.Meta.Key || a.rev != e.Revision):
				return fmt.Errorf("%s watch: status %s at %s %q revision %d, acknowledged at %s %q revision %d",
					w.kind, tag, w.kind, e.Document.Meta.Key, e.Revision, a.kind, a.key, a.rev)
			case isUnknown && (u.kind != w.kind || u.key != e.Document.Meta.Key):
				return fmt.Errorf("%s watch: status %s on %q, written to %s %q", w.kind, tag, e.Document.Meta.Key, u.kind, u.key)
			case !isAcked && !isUnknown:
				return fmt.Errorf("%s watch: status %s at revision %d was never written, or failed definitely", w.kind, tag, e.Revision)
			case e.Document.Meta.Revision != e.Revision:
				return fmt.Errorf("%s watch: event at %d carries document revision %d", w.kind, e.Revision, e.Document.Meta.Revision)
			case e.Revision <= lastRev[e.Document.Meta.Key]:
				return fmt.Errorf("%s watch: %q at %d after %d", w.kind, e.Document.Meta.Key, e.Revision, lastRev[e.Document.Meta.Key])
			}
			lastRev[e.Document.Meta.Key] = e.Revision
		}
	}
	for tag, a := range acked {
		if _, ok := seen[tag]; !ok {
			return fmt.Errorf("acknowledged status %s of %s %q at revision %d never delivered", tag, a.kind, a.key, a.rev)
		}
	}
	// A watch from the mid-run List delivers exactly what came after it.
	for _, w := range watches {
		if err := w.checkResumed(ctx, midList, end); err != nil {
			return err
		}
	}
	t.Logf("storetest.Stress: %d acknowledged writes, %d unknown, %d events, revisions %d to %d",
		len(acked), len(unknown), len(seen), start, end)
	return nil
}

// stressWrite writes a status to the document by read-modify-write, a new
// tag per attempt, retrying on conflicts and on failures whose outcome may
// be unknown, and records each attempt that may have written: with its
// revision if acknowledged, with none if unknown. An unknown attempt found
// committed ends the write, once retrying it has been shown to conflict.
func stressWrite(ctx context.Context, b store.Backend, kind, key string, tag func() string, record func(string, written)) error {
	var maybe []store.Document // unknown attempts, as sent
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		cur, err := b.Get(ctx, kind, key)
		if err != nil {
			if transient(err) {
				continue
			}
			return fmt.Errorf("get %s %q: %w", kind, key, err)
		}
		for _, m := range maybe {
			if string(cur.Status) != string(m.Status) {
				continue
			}
			// It committed after all: retrying it must conflict, not write
			// twice.
			if _, err := b.UpdateStatus(ctx, m); !errors.Is(err, store.ErrConflict) && !transient(err) {
				return fmt.Errorf("retry of a committed write of %s %q: got %v, want ErrConflict", kind, key, err)
			}
			return nil
		}
		cur.Status = []byte(tag())
		got, err := b.UpdateStatus(ctx, cur)
		switch {
		case err == nil:
			record(string(cur.Status), written{kind: kind, key: key, rev: got.Meta.Revision})
			return nil
		case errors.Is(err, store.ErrConflict):
		case transient(err):
			record(string(cur.Status), written{kind: kind, key: key})
			maybe = append(maybe, cur)
		default:
			return fmt.Errorf("update status %s %q: %w", kind, key, err)
		}
	}
}

// transient reports whether err is a failure other than the store's
// sentinels: a lost connection, an unavailable server.
func transient(err error) bool {
	for _, s := range []error{store.ErrNotFound, store.ErrAlreadyExists, store.ErrInvalid, store.ErrFenced,
		store.ErrCompacted, store.ErrClosed, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, s) {
			return false
		}
	}
	return true
}

// stressWatch follows one kind, resuming after a failure from the last
// revision it delivered.
type stressWatch struct {
	b    store.Backend
	kind string

	mu     sync.Mutex // guards the fields below
	last   int64
	events []store.Event
	err    error
}

func (w *stressWatch) run(ctx context.Context) {
	w.mu.Lock()
	from := w.last
	w.mu.Unlock()
	for ctx.Err() == nil {
		watch, err := w.b.Watch(ctx, w.kind, from)
		if err != nil {
			if transient(err) {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			if ctx.Err() == nil {
				w.fail(fmt.Errorf("%s watch from %d: %w", w.kind, from, err))
			}
			return
		}
		for {
			e, err := watch.Next(ctx)
			if err != nil {
				watch.Close()
				if ctx.Err() == nil && !transient(err) {
					w.fail(fmt.Errorf("%s watch: %w", w.kind, err))
					return
				}
				break
			}
			w.mu.Lock()
			if e.Revision <= w.last {
				w.err = cmp.Or(w.err, fmt.Errorf("%s watch: revision %d after %d", w.kind, e.Revision, w.last))
			}
			w.last = max(w.last, e.Revision)
			from = w.last
			w.events = append(w.events, e)
			w.mu.Unlock()
		}
	}
}

func (w *stressWatch) fail(err error) {
	w.mu.Lock()
	w.err = cmp.Or(w.err, err)
	w.mu.Unlock()
}

// waitFor waits until the watch has delivered the newest revision of its
// kind's documents up to revision end.
func (w *stressWatch) waitFor(ctx context.Context, end int64) error {
	want := int64(0)
	res, err := w.b.List(ctx, w.kind, store.ListOptions{})
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	for _, d := range res.Items {
		if d.Meta.Revision <= end {
			want = max(want, d.Meta.Revision)
		}
	}
	deadline := time.Now().Add(checkTimeout / 2)
	for {
		w.mu.Lock()
		last, werr := w.last, w.err
		w.mu.Unlock()
		switch {
		case werr != nil:
			return werr
		case last >= want:
			return nil
		case time.Now().After(deadline) || ctx.Err() != nil:
			return fmt.Errorf("%s watch stopped at revision %d, short of %d", w.kind, last, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkResumed opens a watch from revision from and expects exactly the
// events w delivered after it, up to end.
func (w *stressWatch) checkResumed(ctx context.Context, from, end int64) error {
	var want []store.Event
	for _, e := range w.events {
		if e.Revision > from && e.Revision <= end {
			want = append(want, e)
		}
	}
	watch, err := w.b.Watch(ctx, w.kind, from)
	if err != nil {
		return fmt.Errorf("%s watch from the mid-run list's revision %d: %w", w.kind, from, err)
	}
	defer watch.Close()
	for i, x := range want {
		e, err := watch.Next(ctx)
		if err != nil {
			return fmt.Errorf("%s watch from %d, event %d of %d: %w", w.kind, from, i+1, len(want), err)
		}
		if e.Revision != x.Revision || string(e.Document.Status) != string(x.Document.Status) {
			return fmt.Errorf("%s watch from %d, event %d: revision %d status %s, the first watch saw revision %d status %s",
				w.kind, from, i+1, e.Revision, e.Document.Status, x.Revision, x.Document.Status)
		}
	}
	return nil
}
